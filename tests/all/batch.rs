//! `batch`, `--partition` and `merge`: the records of a batch are those of
//! `capture` + `check`; shards merged equal one batch; conflicts write
//! nothing.

use crate::support::*;
use std::collections::BTreeMap;
use std::path::Path;

const AT: &str = "2026-11-30T00:00:00Z";

/// Every file of a ledger, by ledger-relative path.
fn files(ledger: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for dir in [
        "transcripts",
        "fixtures",
        "properties",
        "verdicts",
        "objects",
    ] {
        let Ok(entries) = std::fs::read_dir(ledger.join(dir)) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            out.insert(
                format!("{dir}/{}", e.file_name().to_string_lossy()),
                std::fs::read(e.path()).unwrap(),
            );
        }
    }
    out
}

/// A manifest of the demo's patches (`(run, patch fixture)`) on `repo`.
fn manifest(
    dir: &Path,
    repo: &DemoRepo,
    trials: &[(&str, &str)],
    extra: &[&str],
) -> std::path::PathBuf {
    let mut text = String::new();
    for (run, body) in trials {
        let line = serde_json::json!({
            "run": run,
            "body": fixture(body),
            "repo": repo.path(),
            "base": repo.base,
            "captured_at": AT,
        });
        text.push_str(&format!("{line}\n"));
    }
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    let path = dir.join("manifest.jsonl");
    write(&path, text);
    path
}

fn batch(dir: &Path, ledger: &Path, manifest: &Path, extra: &[&str]) -> Output {
    let cache = cache_dir();
    // The manifests name the shipped patches where they are.
    let fixtures = fixtures();
    let mut args = vec![
        "--ledger",
        ledger.to_str().unwrap(),
        "batch",
        "--manifest-root",
        fixtures.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    run(dir, &args)
}

// A batch left the network without `check`'s policy: where the kernel
// refused, it went on silently under CI; and on a terminal its progress
// bar's thread, started first, made every non-root batch unisolated.
#[test]
fn a_batch_leaves_the_network_as_check_does() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let manifest = manifest(scratch.path(), &repo, &[("good", "patches/good.diff")], &[]);
    let cache = cache_dir();
    let batch = |ledger: &Path| {
        let mut c = command(scratch.path());
        c.arg("--ledger")
            .arg(ledger)
            .args(["batch", "--manifest-root"])
            .arg(fixtures())
            .arg("--manifest")
            .arg(&manifest)
            .arg("--cache-dir")
            .arg(&cache)
            .env("CI", "true");
        c
    };
    let a = scratch.path().join("a");
    let out = run_command(as_unprivileged(&batch(&a)), &[], None);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let props: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("properties/good.json")).unwrap()).unwrap();
    assert_eq!(props["network"], "isolated");

    let b = scratch.path().join("b");
    let out = crate::hardening::without_network_isolation(batch(&b));
    assert_eq!(out.code, 70, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("cannot leave the network"),
        "{}",
        out.stderr
    );
    assert!(!b.join("properties/good.json").exists());
}

const TRIALS: &[(&str, &str)] = &[
    ("good", "patches/good.diff"),
    ("deletes", "patches/deletes-test.diff"),
    ("fixture", "patches/touches-fixture.diff"),
    ("cut", "capture/truncated-hunk.diff"),
    ("weakens", "patches/weakens-assertion.diff"),
    ("applies-not", "patches/does-not-apply.diff"),
];

#[test]
fn a_batch_writes_what_capture_and_check_write() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    // capture + check, one trial at a time, into ledger A.
    let a = scratch.path().join("a");
    for (run_id, body) in TRIALS {
        let body = fixture(body);
        run(
            repo.path(),
            &[
                "--ledger",
                a.to_str().unwrap(),
                "capture",
                "--run",
                run_id,
                "--body",
                body.to_str().unwrap(),
            ],
        );
    }
    // Ledger B starts from the same receipts; batch captures nothing again.
    let b = scratch.path().join("b");
    copy_dir(&a, &b);
    for (run_id, _) in TRIALS {
        let cache = cache_dir();
        run(
            repo.path(),
            &[
                "--ledger",
                a.to_str().unwrap(),
                "check",
                "--run",
                run_id,
                "--base",
                &repo.base,
                "--cache-dir",
                cache.to_str().unwrap(),
            ],
        );
    }
    let m = manifest(scratch.path(), &repo, TRIALS, &[]);
    let out = batch(repo.path(), &b, &m, &["-j", "3"]);
    // The worst verdict: reject.
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    let verdicts: Vec<_> = out.json()["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["run"].as_str().unwrap().to_string(),
                t["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("good", "review"),
            ("deletes", "reject"),
            ("fixture", "fixture_mismatch"),
            ("cut", "incomplete"),
            ("weakens", "reject"),
            ("applies-not", "reject"),
        ]
        .map(|(r, v)| (r.to_string(), v.to_string()))
    );
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (name, bytes) in &fa {
        assert!(fb[name] == *bytes, "{name} differs between check and batch");
    }
}

#[test]
fn bad_lines_are_named_and_do_not_stop_the_others() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let ledger = scratch.path().join("l");
    let m = manifest(
        scratch.path(),
        &repo,
        &[
            ("good", "patches/good.diff"),
            ("good", "patches/deletes-test.diff"),
        ],
        &[
            r#"{"run": "x", "body": "b.diff", "repo": ".", "base": "HEAD", "colour": "red"}"#,
            "not json",
            r#"{"run": "../escape", "body": "b.diff", "repo": ".", "base": "HEAD"}"#,
            r#"{"run": "y", "body": "b.diff", "repo": ".", "base": "HEAD", "extract": "nope"}"#,
            r#"{"run": "z", "body": "b.diff", "repo": ".", "base": "HEAD"} and more"#,
        ],
    );
    let out = batch(repo.path(), &ledger, &m, &[]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    let trials = out.json()["trials"].as_array().unwrap().clone();
    assert_eq!(trials[0]["verdict"], "review");
    let errors: Vec<String> = trials
        .iter()
        .filter_map(|t| t["error"].as_str().map(str::to_string))
        .collect();
    assert_eq!(errors.len(), 6, "{errors:#?}");
    assert!(
        errors[0].contains("manifest.jsonl:2") && errors[0].contains("also on line 1"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("manifest.jsonl:3") && errors[1].contains("colour"),
        "{}",
        errors[1]
    );
    assert!(errors[2].contains("manifest.jsonl:4"), "{}", errors[2]);
    assert!(
        errors[3].contains("manifest.jsonl:5") && errors[3].contains("run"),
        "{}",
        errors[3]
    );
    // A bad value names its field; nothing may follow the object.
    assert!(
        errors[4].contains("manifest.jsonl:6: field `extract`: unknown variant `nope`"),
        "{}",
        errors[4]
    );
    assert!(
        errors[5].contains("manifest.jsonl:7: trailing characters"),
        "{}",
        errors[5]
    );
    assert!(ledger.join("verdicts/good.json").exists());
    // Plain lines on a non-terminal, one per trial.
    assert!(
        out.stderr.contains("line 1: good: review (exit 0)"),
        "{}",
        out.stderr
    );
}

#[test]
fn three_partitions_merged_equal_one_batch() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let m = manifest(scratch.path(), &repo, TRIALS, &[]);
    let whole = scratch.path().join("whole");
    batch(repo.path(), &whole, &m, &[]).assert_code(4);
    for kind in ["hash", "count"] {
        let mut shards = Vec::new();
        let mut ran = 0;
        for k in 1..=3 {
            let shard = scratch.path().join(format!("{kind}{k}"));
            let out = batch(
                repo.path(),
                &shard,
                &m,
                &["--partition", &format!("{kind}:{k}/3")],
            );
            assert!(matches!(out.code, 0 | 2 | 3 | 4), "{}", out.stderr);
            ran += out.json()["trials"].as_array().unwrap().len();
            shards.push(shard);
        }
        assert_eq!(
            ran,
            TRIALS.len(),
            "{kind}: every trial in exactly one shard"
        );
        let merged = scratch.path().join(format!("{kind}-merged"));
        let mut args = vec!["merge", "--into", merged.to_str().unwrap()];
        args.extend(shards.iter().map(|s| s.to_str().unwrap()));
        run(repo.path(), &args).assert_code(0);
        assert!(
            files(&merged) == files(&whole),
            "{kind}: merged shards differ from one batch"
        );
    }
}

#[test]
fn a_merge_conflict_writes_nothing() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let (one, two) = (scratch.path().join("one"), scratch.path().join("two"));
    for (ledger, body) in [
        (&one, "patches/good.diff"),
        (&two, "patches/deletes-test.diff"),
    ] {
        let m = manifest(scratch.path(), &repo, &[("r", body)], &[]);
        batch(repo.path(), ledger, &m, &[]);
    }
    let into = scratch.path().join("into");
    let out = run(
        repo.path(),
        &[
            "merge",
            "--into",
            into.to_str().unwrap(),
            one.to_str().unwrap(),
            two.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains("transcripts/r.json"), "{}", out.stderr);
    assert!(
        !into.exists() || files(&into).is_empty(),
        "a conflicting merge wrote files"
    );
}

#[test]
fn a_hostile_shard_is_refused() {
    let scratch = tempdir();
    let shard = scratch.path().join("shard");
    write(&shard.join("objects/not-its-hash"), "x");
    let into = scratch.path().join("into");
    let out = run(
        scratch.path(),
        &[
            "merge",
            "--into",
            into.to_str().unwrap(),
            shard.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    let shard2 = scratch.path().join("shard2");
    std::fs::create_dir_all(shard2.join("verdicts")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", shard2.join("verdicts/r.json")).unwrap();
    let out = run(
        scratch.path(),
        &[
            "merge",
            "--into",
            into.to_str().unwrap(),
            shard2.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(!into.join("verdicts/r.json").exists());
}

/// Live captures happen first, once: a batch run again sends nothing.
#[test]
fn prompt_lines_are_captured_live_first_and_never_twice() {
    use crate::live_capture::{APIS, KEY, whole_server};
    let api = &APIS[0];
    let server = whole_server(api);
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let config = scratch.path().join("c.toml");
    let mut text = std::fs::read_to_string(repo.path().join("agent-ledger.toml")).unwrap();
    text = text.replace(
        "[fixtures]",
        &format!(
            "[capture]\nendpoint = \"{}/v1\"\nprovider = \"{}\"\nmodel = \"m\"\nmax_tokens = 100\n\n[fixtures]",
            server.url, api.provider
        ),
    );
    // The demo's own plugin paths are relative to the repository.
    text = text.replace(
        "\"oracles/",
        &format!("\"{}/oracles/", repo.path().display()),
    );
    write(&config, text);
    write(&scratch.path().join("prompt.txt"), "fix the backoff\n");
    let line = serde_json::json!({
        "run": "live", "prompt": "prompt.txt", "repo": repo.path(), "base": repo.base, "config": config,
    });
    let no_config = serde_json::json!({
        "run": "refused", "prompt": "prompt.txt", "repo": repo.path(), "base": repo.base,
    });
    let good = serde_json::json!({
        "run": "good", "body": fixture("patches/good.diff"), "repo": repo.path(), "base": repo.base,
    });
    let m = scratch.path().join("m.jsonl");
    write(&m, format!("{line}\n{no_config}\n{good}\n"));
    let ledger = scratch.path().join("l");
    let run_batch = || {
        let cache = cache_dir();
        let mut c = command(repo.path());
        c.args([
            "--ledger",
            ledger.to_str().unwrap(),
            "batch",
            "--manifest",
            m.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--format",
            "json",
            "--manifest-root",
            fixtures().to_str().unwrap(),
        ])
        .env(api.key_env, KEY)
        .env_remove("MODEL_TOKEN_BUDGET");
        c.output().unwrap()
    };
    let out = run_batch();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The line without a [capture] table could not be sent: the worst.
    assert_eq!(out.status.code(), Some(65), "{stderr}");
    assert!(stderr.contains("m.jsonl:2"), "{stderr}");
    assert_eq!(
        server.seen.lock().unwrap().len(),
        1,
        "one request, for `live`"
    );
    let receipt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ledger.join("transcripts/live.json")).unwrap())
            .unwrap();
    assert_eq!(receipt["http"]["status"], 200, "{receipt:#}");
    // The replays ran in a process without a network, and judged `live`.
    let props: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ledger.join("properties/live.json")).unwrap())
            .unwrap();
    assert_eq!(props["network"], "isolated");
    assert!(ledger.join("verdicts/live.json").exists());
    assert!(ledger.join("verdicts/good.json").exists());
    // Again: nothing is sent a second time.
    let again = run_batch();
    assert_eq!(again.status.code(), Some(65));
    assert_eq!(
        server.seen.lock().unwrap().len(),
        1,
        "a captured run was sent again"
    );
}

/// A shard brings whole runs only: a junk signature for a run another
/// shard holds, a stray verdict with no chain under it, and a forged
/// signature over a copy of the run are each refused, and nothing is
/// written; an honest shard still merges.
#[test]
fn a_shard_cannot_add_files_to_a_run_it_does_not_hold_whole() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let honest = scratch.path().join("honest");
    let m = manifest(scratch.path(), &repo, &[("r", "patches/good.diff")], &[]);
    batch(repo.path(), &honest, &m, &[]).assert_code(0);
    let key = |name: &str| {
        let (secret, public) = (
            scratch.path().join(format!("{name}.secret")),
            scratch.path().join(format!("{name}.public")),
        );
        run(
            repo.path(),
            &[
                "keygen",
                "--secret",
                secret.to_str().unwrap(),
                "--public",
                public.to_str().unwrap(),
            ],
        )
        .assert_code(0);
        (secret, public)
    };
    let (_, public) = key("ours");
    let (theirs, _) = key("theirs");
    let into = scratch.path().join("into");
    let merge = |shards: &[&Path], extra: &[&str]| {
        let mut args = vec!["merge", "--into", into.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(shards.iter().map(|s| s.to_str().unwrap()));
        run(scratch.path(), &args)
    };
    // Only a junk signature for `r`.
    let junk = scratch.path().join("junk");
    write(&junk.join("signatures/r.dsse.json"), "{\"junk\": true}");
    let out = merge(&[&honest, &junk], &[]);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains("belongs to no run"), "{}", out.stderr);
    // Run ids may hold `.`: a shard holding run `r` cannot claim
    // `signatures/r.x.dsse.json` (run `r.x`'s) or a file of a name the
    // ledger never gives.
    for stray in [
        "signatures/r.x.dsse.json",
        "signatures/r.sig",
        "transcripts/r.extra",
    ] {
        let shard = scratch
            .path()
            .join(format!("claims-{}", stray.replace('/', "-")));
        for (rel, bytes) in files(&honest) {
            write(&shard.join(&rel), bytes);
        }
        write(&shard.join(stray), "{}");
        let out = merge(&[&shard], &[]);
        assert_eq!(out.code, 65, "{stray}: {}", out.stderr);
        assert!(out.stderr.contains("belongs to no run"), "{}", out.stderr);
    }
    // A verdict with nothing under it.
    let stray = scratch.path().join("stray");
    std::fs::create_dir_all(stray.join("verdicts")).unwrap();
    std::fs::copy(
        honest.join("verdicts/r.json"),
        stray.join("verdicts/r.json"),
    )
    .unwrap();
    let out = merge(&[&honest, &stray], &[]);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains("not whole"), "{}", out.stderr);
    // A whole copy of `r`, signed with a key the operator does not trust:
    // refused under `--trusted-key`.
    let forged = scratch.path().join("forged");
    for (rel, bytes) in files(&honest) {
        write(&forged.join(&rel), bytes);
    }
    run(
        repo.path(),
        &[
            "--ledger",
            forged.to_str().unwrap(),
            "sign",
            "--run",
            "r",
            "--key",
            theirs.to_str().unwrap(),
        ],
    )
    .assert_code(0);
    let out = merge(
        &[&honest, &forged],
        &["--trusted-key", public.to_str().unwrap()],
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains("r.dsse.json"), "{}", out.stderr);
    // A signature whose statement names other records: refused without a
    // key too.
    let signature = forged.join("signatures/r.dsse.json");
    let mut env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&signature).unwrap()).unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut statement: serde_json::Value =
        serde_json::from_slice(&b64.decode(env["payload"].as_str().unwrap()).unwrap()).unwrap();
    statement["predicate"]["verdict"] = "reject".into();
    env["payload"] = b64.encode(serde_json::to_vec(&statement).unwrap()).into();
    std::fs::write(&signature, serde_json::to_vec(&env).unwrap()).unwrap();
    let out = merge(&[&honest, &forged], &[]);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains("does not match"), "{}", out.stderr);
    assert!(
        !into.exists() || files(&into).is_empty(),
        "a refused merge wrote files"
    );
    merge(&[&honest], &[]).assert_code(0);
    assert_eq!(files(&into), files(&honest));
}

/// Live captures run side by side: a server that answers only once two
/// requests are open at the same time (and fails each after 20 s alone)
/// completes both lines of a batch; one at a time, both would fail.
#[test]
fn live_captures_run_concurrently() {
    use crate::live_capture::{APIS, KEY};
    use std::io::{BufRead, Read, Write};
    let api = &APIS[0];
    let body = std::fs::read(fixture("live/openai-chat.json")).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let open = std::sync::Arc::new((std::sync::Mutex::new(0usize), std::sync::Condvar::new()));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (open, body) = (open.clone(), body.clone());
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end().to_ascii_lowercase();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut request = vec![0; length];
                reader.read_exact(&mut request).unwrap();
                let (count, cv) = &*open;
                let mut n = count.lock().unwrap();
                *n += 1;
                cv.notify_all();
                let (n, timeout) = cv
                    .wait_timeout_while(n, std::time::Duration::from_secs(20), |n| *n < 2)
                    .unwrap();
                drop(n);
                let (status, payload) = if timeout.timed_out() {
                    ("503 Service Unavailable", b"{}".to_vec())
                } else {
                    ("200 OK", body)
                };
                let mut stream = reader.into_inner();
                let _ = stream.write_all(
                    format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        payload.len()
                    )
                    .as_bytes(),
                );
                let _ = stream.write_all(&payload);
            });
        }
    });
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let config = scratch.path().join("c.toml");
    let mut text = std::fs::read_to_string(repo.path().join("agent-ledger.toml")).unwrap();
    text = text.replace(
        "[fixtures]",
        &format!(
            "[capture]\nendpoint = \"http://127.0.0.1:{port}/v1\"\nprovider = \"{}\"\nmodel = \"m\"\nmax_tokens = 100\n\n[fixtures]",
            api.provider
        ),
    );
    text = text.replace(
        "\"oracles/",
        &format!("\"{}/oracles/", repo.path().display()),
    );
    write(&config, text);
    write(&scratch.path().join("prompt.txt"), "fix the backoff\n");
    let lines: Vec<String> = ["one", "two"]
        .iter()
        .map(|run| {
            serde_json::json!({
                "run": run, "prompt": "prompt.txt", "repo": repo.path(), "base": repo.base,
                "config": config, "total_timeout": 60,
            })
            .to_string()
        })
        .collect();
    let m = scratch.path().join("m.jsonl");
    write(&m, lines.join("\n") + "\n");
    let ledger = scratch.path().join("l");
    let cache = cache_dir();
    let mut c = command(repo.path());
    c.args([
        "--ledger",
        ledger.to_str().unwrap(),
        "batch",
        "--manifest",
        m.to_str().unwrap(),
        "-j",
        "2",
        "--cache-dir",
        cache.to_str().unwrap(),
    ])
    .env(api.key_env, KEY)
    .env_remove("MODEL_TOKEN_BUDGET");
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    for run in ["one", "two"] {
        let receipt: serde_json::Value = serde_json::from_slice(
            &std::fs::read(ledger.join(format!("transcripts/{run}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            receipt["http"]["status"], 200,
            "{run}: {receipt:#}\n{stderr}"
        );
    }
}

/// On a terminal, `batch` shows a bar with done/total, the verdicts so far,
/// the trials running and an ETA; without one, a plain line per trial.
#[test]
fn a_batch_on_a_terminal_shows_its_progress_and_without_one_a_line_per_trial() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let m = manifest(scratch.path(), &repo, TRIALS, &[]);
    let cache = cache_dir();
    let fixtures = fixtures();
    let args = |ledger: &Path| {
        vec![
            "--ledger".to_string(),
            ledger.display().to_string(),
            "batch".into(),
            "--manifest-root".into(),
            fixtures.display().to_string(),
            "--manifest".into(),
            m.display().to_string(),
            "--cache-dir".into(),
            cache.display().to_string(),
        ]
    };
    // A pseudo-terminal from util-linux `script`: what a person sees; as a
    // user other than root under CI, so the bar's own thread must not
    // start before the batch leaves the network.
    let quoted: Vec<String> = ["unshare", "--user", "--map-user=1000", "--map-group=1000"]
        .into_iter()
        .map(str::to_string)
        .chain(std::iter::once(
            env!("CARGO_BIN_EXE_agent-ledger").to_string(),
        ))
        .chain(args(&scratch.path().join("tty")))
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let out = std::process::Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .current_dir(repo.path())
        .env("COLUMNS", "200")
        .env("CI", "true")
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains(&format!("/{} done", TRIALS.len())),
        "{screen}"
    );
    assert!(screen.contains("ETA"), "{screen}");
    assert!(screen.contains("running"), "{screen}");
    assert!(
        screen.contains("review") && screen.contains("reject"),
        "{screen}"
    );
    let props: serde_json::Value = serde_json::from_slice(
        &std::fs::read(scratch.path().join("tty/properties/good.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(props["network"], "isolated");
    // No terminal: one plain line per trial, no bar.
    let plain_args = args(&scratch.path().join("plain"));
    let plain: Vec<&str> = plain_args.iter().map(String::as_str).collect();
    let out = run(repo.path(), &plain);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("line "))
        .collect();
    assert_eq!(lines.len(), TRIALS.len(), "{}", out.stderr);
    assert!(!out.stderr.contains("ETA"), "{}", out.stderr);
}
