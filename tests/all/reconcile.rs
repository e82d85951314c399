//! The traced adapter and `reconcile`: every failure class and exit code,
//! awkward paths, crashes, concurrency, merges.

use crate::support::*;
use std::path::{Path, PathBuf};

struct Agent {
    repo: DemoRepo,
    _scratch: tempfile::TempDir,
    trace: PathBuf,
}

impl Agent {
    fn new() -> Agent {
        let scratch = tempdir();
        let trace = scratch.path().join("trace.jsonl");
        Agent {
            repo: DemoRepo::new(),
            _scratch: scratch,
            trace,
        }
    }

    fn path(&self) -> &Path {
        self.repo.path()
    }

    fn ledger(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        // `--trace` goes before a `--` that starts an exec'd command.
        let mut full: Vec<&str> = args.to_vec();
        let at = full.iter().position(|a| *a == "--").unwrap_or(full.len());
        full.splice(at..at, ["--trace", self.trace.to_str().unwrap()]);
        run_with_stdin(self.path(), &full, stdin)
    }

    fn write(&self, path: &str, bytes: &[u8]) -> Output {
        self.ledger(&["trace", "write", path], Some(bytes))
    }

    fn reconcile(&self, extra: &[&str]) -> Output {
        // An agent that never called the adapter left an empty trace.
        if !self.trace.exists() {
            write(&self.trace, "");
        }
        let mut args = vec!["reconcile"];
        args.extend_from_slice(extra);
        self.ledger(&args, None)
    }

    /// The agent-like script: edits only through the traced adapter.
    fn honest_edits(&self) {
        let fixed = std::fs::read_to_string(self.path().join("src/retry.py"))
            .unwrap()
            .replace("2 ** attempt", "2 ** (attempt - 1)");
        self.write("src/retry.py", fixed.as_bytes()).assert_code(0);
        self.write("docs/notes.md", b"# notes\n").assert_code(0);
        self.ledger(&["trace", "delete", "README.md"], None)
            .assert_code(0);
        self.ledger(
            &[
                "trace",
                "exec",
                "--writes",
                "build/out.txt",
                "--",
                "sh",
                "-c",
                "mkdir -p build && echo built > build/out.txt",
            ],
            None,
        )
        .assert_code(0);
    }
}

#[test]
fn an_agent_that_edits_only_through_the_adapter_reconciles() {
    let a = Agent::new();
    a.honest_edits();
    let out = a.reconcile(&["--require-mutation"]);
    out.assert_code(0);
    assert!(
        out.stdout.starts_with("reconciled: 4 changed path(s)"),
        "{}",
        out.stdout
    );
}

#[test]
fn an_untraced_edit_is_a_ghost() {
    let a = Agent::new();
    a.honest_edits();
    let status = std::process::Command::new("sed")
        .args(["-i", "s/503/504/", "src/retry.py"])
        .current_dir(a.path())
        .status()
        .unwrap();
    assert!(status.success());
    let stray = std::process::Command::new("sed")
        .args(["-i", "s/demo/DEMO/", "agent-ledger.toml"])
        .current_dir(a.path())
        .status()
        .unwrap();
    assert!(stray.success());
    let out = a.reconcile(&[]);
    out.assert_code(1);
    assert!(
        out.stdout
            .contains("ghosts (changed, no span):\n  agent-ledger.toml\n"),
        "{}",
        out.stdout
    );
    // The traced file edited again behind the adapter's back: a hash miss.
    assert!(
        out.stdout
            .contains("hash misses (disk differs from the span):\n  src/retry.py\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_reverted_write_is_a_phantom() {
    let a = Agent::new();
    a.honest_edits();
    git(a.path(), &["checkout", "--", "src/retry.py"]);
    let out = a.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["phantoms"],
        serde_json::json!(["src/retry.py"])
    );
}

#[test]
fn a_no_op_run_fails_require_mutation() {
    // The agent never called the adapter: there is no trace file at all.
    let a = Agent::new();
    a.reconcile(&[]).assert_code(0);
    let out = a.reconcile(&["--require-mutation"]);
    out.assert_code(3);
    assert!(out.stdout.starts_with("no mutation"), "{}", out.stdout);
}

#[test]
fn a_write_to_the_same_bytes_is_a_phantom() {
    let a = Agent::new();
    let same = std::fs::read(a.path().join("src/retry.py")).unwrap();
    a.write("src/retry.py", &same).assert_code(0);
    let out = a.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(out.json()["report"]["phantoms"][0], "src/retry.py");
}

#[test]
fn a_delete_whose_path_came_back_is_a_hash_miss() {
    let a = Agent::new();
    a.ledger(&["trace", "delete", "src/retry.py"], None)
        .assert_code(0);
    std::fs::write(a.path().join("src/retry.py"), "resurrected\n").unwrap();
    let out = a.reconcile(&["--format", "json"]);
    out.assert_code(1);
    let miss = &out.json()["report"]["hash_misses"][0];
    assert_eq!(miss["path"], "src/retry.py");
    assert_eq!(miss["expected"], serde_json::Value::Null);
}

#[test]
fn bytes_changed_after_a_write_closed_are_a_hash_miss_whoever_reads_them() {
    // The walk reads a changed tracked file and a new one once, for the
    // delta and for what they hold; a link and a file whose mode changed
    // are read apart. Each, rewritten behind the adapter's back, is a miss
    // with what it holds now.
    use std::os::unix::fs::PermissionsExt;
    let a = Agent::new();
    a.honest_edits();
    a.write("src/util.sh", b"echo hi\n").assert_code(0);
    a.write("link", b"target\n").assert_code(0);
    a.reconcile(&[]).assert_code(0);
    std::fs::write(a.path().join("src/retry.py"), "tampered\n").unwrap();
    std::fs::write(a.path().join("docs/notes.md"), "# tampered\n").unwrap();
    std::fs::set_permissions(
        a.path().join("src/util.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::remove_file(a.path().join("link")).unwrap();
    std::os::unix::fs::symlink("target\n", a.path().join("link")).unwrap();
    let out = a.reconcile(&["--format", "json"]);
    out.assert_code(1);
    let report = &out.json()["report"];
    let sha = |b: &[u8]| agent_ledger::digest::sha256_hex(b);
    let misses: Vec<(String, String)> = report["hash_misses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_string(),
                m["actual"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        misses,
        [
            ("docs/notes.md".to_string(), sha(b"# tampered\n")),
            ("link".to_string(), format!("120000:{}", sha(b"target\n"))),
            ("src/retry.py".to_string(), sha(b"tampered\n")),
            (
                "src/util.sh".to_string(),
                format!("100755:{}", sha(b"echo hi\n"))
            ),
        ],
        "{report}"
    );
    assert_eq!(report["ghosts"], serde_json::json!([]), "{report}");
}

#[test]
fn a_base_tree_that_names_a_path_twice_is_an_error_naming_it() {
    // git fsck calls it duplicateEntries; `hash-object --literally` makes
    // one. Read one way, the other entry could hide a change; neither way
    // is right, so nothing is judged.
    use std::io::Write;
    let a = Agent::new();
    let hashed = |args: &[&str], input: &[u8]| -> String {
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(a.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let blob = hashed(&["hash-object", "-w", "--stdin"], b"x\n");
    let raw: Vec<u8> = (0..2)
        .flat_map(|_| {
            let mut entry = b"100644 dup\0".to_vec();
            entry.extend(hex::decode(&blob).unwrap());
            entry
        })
        .collect();
    let tree = hashed(
        &["hash-object", "-t", "tree", "-w", "--literally", "--stdin"],
        &raw,
    );
    let commit = git(a.path(), &["commit-tree", &tree, "-m", "dup"]);
    git(a.path(), &["update-ref", "HEAD", commit.trim()]);
    let out = a.reconcile(&[]);
    assert_eq!(out.code, 70, "{}", out.stderr);
    assert!(out.stderr.contains("names `dup` twice"), "{}", out.stderr);
}

#[test]
fn the_last_closed_span_judges_a_path() {
    let a = Agent::new();
    a.write("notes.txt", b"one\n").assert_code(0);
    a.write("notes.txt", b"two\n").assert_code(0);
    a.reconcile(&[]).assert_code(0);
    std::fs::write(a.path().join("notes.txt"), "one\n").unwrap();
    a.reconcile(&[]).assert_code(1);
}

#[test]
fn renames_are_a_delete_plus_an_add() {
    let a = Agent::new();
    // Untraced, staged rename: both paths are ghosts.
    git(a.path(), &["mv", "README.md", "README.txt"]);
    let out = a.reconcile(&["--format", "json"]);
    out.assert_code(1);
    let ghosts = out.json()["report"]["ghosts"].clone();
    assert_eq!(ghosts, serde_json::json!(["README.md", "README.txt"]));
    // The same move through the adapter reconciles.
    let b = Agent::new();
    let bytes = std::fs::read(b.path().join("README.md")).unwrap();
    b.write("README.txt", &bytes).assert_code(0);
    b.ledger(&["trace", "delete", "README.md"], None)
        .assert_code(0);
    b.reconcile(&[]).assert_code(0);
}

#[test]
fn awkward_paths_are_handled_exactly() {
    use std::os::unix::ffi::OsStrExt;
    let a = Agent::new();
    let names: [&[u8]; 7] = [
        b"with space.txt",
        b"tab\there.txt",
        b"new\nline.txt",
        b"quo\"te.txt",
        b"a -> b.txt",
        "caf\u{e9}.txt".as_bytes(),
        b"bad\xffbyte.txt",
    ];
    for name in names {
        let status = command(a.path())
            .arg("trace")
            .arg("write")
            .arg(std::ffi::OsStr::from_bytes(name))
            .arg("--from")
            .arg("-")
            .arg("--trace")
            .arg(&a.trace)
            .stdin(std::fs::File::open(fixture("patches/good.diff")).unwrap())
            .status()
            .unwrap();
        assert!(status.success(), "{}", String::from_utf8_lossy(name));
    }
    let out = a.reconcile(&["--require-mutation", "--format", "json"]);
    out.assert_code(0);
    assert_eq!(out.json()["report"]["changed"], 7);
    // An untraced file with an awkward name is listed, quoted exactly.
    std::fs::write(
        a.path()
            .join(std::ffi::OsStr::from_bytes(b"ghost\nname\xfe")),
        "g",
    )
    .unwrap();
    let out = a.reconcile(&[]);
    out.assert_code(1);
    assert!(
        out.stdout.contains("  \"ghost\\nname\\376\"\n"),
        "{}",
        out.stdout
    );
    let trace = std::fs::read_to_string(&a.trace).unwrap();
    assert!(
        trace.contains("\"path_hex\":\"626164ff627974652e747874\""),
        "{trace}"
    );
}

#[test]
fn paths_that_escape_are_refused_before_anything_is_written() {
    let a = Agent::new();
    let outside = a.path().parent().unwrap().join("escaped.txt");
    for path in [
        "../escaped.txt",
        "/tmp/abs.txt",
        ".git/hooks/pre-commit",
        "src/../../escaped.txt",
    ] {
        let out = a.write(path, b"x");
        out.assert_code(64);
    }
    std::os::unix::fs::symlink(a.path().parent().unwrap(), a.path().join("link")).unwrap();
    let out = a.write("link/escaped.txt", b"x");
    out.assert_code(64);
    assert!(out.stderr.contains("symlink"), "{}", out.stderr);
    assert!(!outside.exists());
    assert!(
        !a.trace.exists(),
        "nothing may be traced for a refused path"
    );
}

#[test]
fn exec_fails_when_the_command_changes_an_undeclared_path() {
    let a = Agent::new();
    let out = a.ledger(
        &[
            "trace",
            "exec",
            "--writes",
            "out.txt",
            "--",
            "sh",
            "-c",
            "echo a > out.txt; echo b > sneaky.txt",
        ],
        None,
    );
    out.assert_code(1);
    assert!(out.stderr.contains("sneaky.txt"), "{}", out.stderr);
    assert!(!out.stderr.contains("  out.txt"), "{}", out.stderr);
    // The declared output is on the trace; the undeclared one is a ghost.
    let rec = a.reconcile(&["--format", "json"]);
    rec.assert_code(1);
    assert_eq!(
        rec.json()["report"]["ghosts"],
        serde_json::json!(["sneaky.txt"])
    );
}

#[test]
fn a_crash_between_open_and_close_leaves_an_open_span() {
    let a = Agent::new();
    let mut child = command(a.path())
        .args(["trace", "exec", "--writes", "slow.txt", "--trace"])
        .arg(&a.trace)
        .args(["--", "sh", "-c", "sleep 30"])
        .spawn()
        .unwrap();
    // Wait for the open line, then kill the adapter mid-span.
    for _ in 0..200 {
        if std::fs::read_to_string(&a.trace).is_ok_and(|t| t.contains("\"event\":\"open\"")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = a.reconcile(&[]);
    out.assert_code(2);
    assert!(
        out.stdout.contains("open spans:") && out.stdout.contains("write slow.txt (line 1)"),
        "{}",
        out.stdout
    );
}

#[test]
fn concurrent_appends_never_tear_a_line() {
    let a = Agent::new();
    let children: Vec<_> = (0..16)
        .map(|i| {
            let mut cmd = command(a.path());
            cmd.args(["trace", "write", &format!("c/{i}.txt"), "--from", "-"])
                .arg("--trace")
                .arg(&a.trace)
                .stdin(std::fs::File::open(fixture("patches/good.diff")).unwrap());
            cmd.spawn().unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&a.trace).unwrap();
    assert_eq!(text.lines().count(), 32);
    a.reconcile(&[]).assert_code(0);
}

#[test]
fn a_malformed_trace_line_is_exit_65_with_its_number() {
    let a = Agent::new();
    a.write("x.txt", b"x").assert_code(0);
    let mut text = std::fs::read_to_string(&a.trace).unwrap();
    text.push_str("{\"schema\":1,\"span\":\"zz\",\"event\":\"close\"\n");
    std::fs::write(&a.trace, text).unwrap();
    let out = a.reconcile(&[]);
    out.assert_code(65);
    assert!(out.stderr.contains("line 3"), "{}", out.stderr);
}

#[test]
fn a_bad_base_is_named_before_a_bad_trace_and_a_missing_trace_before_both() {
    // The trace is read while git finds the repository; its errors still
    // come in the order they always did.
    let a = Agent::new();
    std::fs::write(&a.trace, "not a trace line\n").unwrap();
    let out = a.reconcile(&["--base", "no-such-revision"]);
    out.assert_code(66);
    assert!(out.stderr.contains("no-such-revision"), "{}", out.stderr);
    std::fs::remove_file(&a.trace).unwrap();
    let out = a.ledger(&["reconcile", "--base", "no-such-revision"], None);
    out.assert_code(66);
    assert!(out.stderr.contains("no trace"), "{}", out.stderr);
}

#[test]
fn a_repository_mid_merge_reconciles_by_its_paths() {
    let a = Agent::new();
    let p = a.path();
    git(p, &["checkout", "-q", "-b", "other"]);
    std::fs::write(p.join("src/retry.py"), "other side\n").unwrap();
    git(p, &["commit", "-q", "-am", "other"]);
    git(p, &["checkout", "-q", "-"]);
    std::fs::write(p.join("src/retry.py"), "this side\n").unwrap();
    git(p, &["commit", "-q", "-am", "this"]);
    let merge = std::process::Command::new("git")
        .args(["merge", "other"])
        .current_dir(p)
        .output()
        .unwrap();
    assert!(
        !merge.status.success() && String::from_utf8_lossy(&merge.stdout).contains("CONFLICT"),
        "the merge must conflict: {}{}",
        String::from_utf8_lossy(&merge.stdout),
        String::from_utf8_lossy(&merge.stderr)
    );
    let out = a.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!(["src/retry.py"])
    );
    // The merge wrote the conflict markers, outside the trace: the first
    // span on the path finds them, not the base's bytes.
    a.write("src/retry.py", b"resolved\n").assert_code(0);
    let out = a.reconcile(&["--format", "json"]);
    out.assert_code(1);
    let b = &out.json()["report"]["breaks"][0];
    assert_eq!(b["path"], "src/retry.py");
    assert_eq!(b["previous"], serde_json::Value::Null);
}

#[test]
fn check_runs_span_bijection_on_a_captured_trace() {
    let a = Agent::new();
    a.honest_edits();
    // The patch is the tree's delta; the trace is the adapter's.
    git(a.path(), &["add", "-A"]);
    let patch = a
        .path()
        .parent()
        .unwrap()
        .join(format!("{}.diff", a.repo.base));
    let diff = std::process::Command::new("git")
        .args(["diff", "--cached", "--binary", "HEAD"])
        .current_dir(a.path())
        .output()
        .unwrap();
    assert!(
        diff.status.success() && !diff.stdout.is_empty(),
        "git diff gave no patch: {}",
        String::from_utf8_lossy(&diff.stderr)
    );
    std::fs::write(&patch, &diff.stdout).unwrap();
    git(a.path(), &["reset", "-q", "--hard"]);
    git(a.path(), &["clean", "-qfd"]);
    let run_capture = |run_id: &str, trace: &Path| {
        run(
            a.path(),
            &[
                "capture",
                "--run",
                run_id,
                "--body",
                patch.to_str().unwrap(),
                "--trace",
                trace.to_str().unwrap(),
            ],
        )
        .assert_code(0);
    };
    run_capture("honest", &a.trace);
    let config = a.trace.with_file_name("ledger.toml");
    std::fs::write(
        &config,
        "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"span_bijection\"\nplugin = \"builtin:span_bijection\"\n",
    )
    .unwrap();
    let config = ["--config", config.to_str().unwrap()];
    let out = a.repo.check("honest", &config);
    out.assert_code(0);
    assert_eq!(
        outcome(&a.repo.properties("honest"), "span_bijection")["outcome"],
        "holds"
    );

    // The same patch with a trace that lost the notes write: a ghost.
    let partial = a.trace.with_file_name("partial.jsonl");
    let kept: Vec<&str> = std::fs::read_to_string(&a.trace)
        .unwrap()
        .leak()
        .lines()
        .filter(|l| !l.contains("docs/notes.md"))
        .collect();
    std::fs::write(&partial, kept.join("\n") + "\n").unwrap();
    run_capture("partial", &partial);
    a.repo.check("partial", &config).assert_code(4);
    let miss = outcome(&a.repo.properties("partial"), "span_bijection").clone();
    assert_eq!(miss["outcome"], "miss");
    assert_eq!(miss["findings"][0]["path"], "docs/notes.md");
    assert!(
        miss["findings"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("ghost")
    );
    let _ = std::fs::remove_file(patch);
}
