//! Offline verification, in the style of the update-framework conformance
//! suites: a legitimate ledger, one mutation, a specific failure, and the
//! ledger left exactly as it was handed over.

use crate::support::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A demo repository with three checked runs (`good` review and signed,
/// `bad` reject, `drift` fixture_mismatch) and the public key.
struct Archive {
    repo: DemoRepo,
    keys: tempfile::TempDir,
}

impl Archive {
    fn new() -> Archive {
        let repo = DemoRepo::new();
        for (run_id, patch, code) in [
            ("good", "good", 0),
            ("bad", "deletes-test", 4),
            ("drift", "touches-fixture", 3),
        ] {
            repo.capture(run_id, patch);
            repo.check(run_id, &[]).assert_code(code);
        }
        let keys = tempdir();
        let (secret, public) = (keys.path().join("k.secret"), keys.path().join("k.public"));
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
        run(
            repo.path(),
            &["sign", "--run", "good", "--key", secret.to_str().unwrap()],
        )
        .assert_code(0);
        Archive { repo, keys }
    }

    fn ledger(&self) -> PathBuf {
        self.repo.path().join(".agent-ledger")
    }

    fn public(&self) -> String {
        self.keys
            .path()
            .join("k.public")
            .to_str()
            .unwrap()
            .to_string()
    }

    fn verify(&self, extra: &[&str]) -> Output {
        let ledger = self.ledger();
        let mut args = vec![
            "--ledger",
            ledger.to_str().unwrap(),
            "verify",
            "--trusted-key",
        ];
        let key = self.public();
        args.push(&key);
        args.extend_from_slice(extra);
        run(self.repo.path(), &args)
    }
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    walk(dir, dir, &mut files);
    files
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let i = at.min(bytes.len() - 1);
    bytes[i] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// Applies `mutate` to a fresh legitimate ledger, then asserts that verify
/// exits 5, names `failure` for `run_id`, and changed nothing.
#[track_caller]
fn mutation(run_id: &str, failure: &str, mutate: impl FnOnce(&Archive)) {
    let a = Archive::new();
    a.verify(&[]).assert_code(0);
    mutate(&a);
    let before = snapshot(&a.ledger());
    let out = a.verify(&["--format", "json"]);
    out.assert_code(5);
    let v = out.json();
    let report = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == run_id)
        .unwrap()
        .clone();
    assert_eq!(report["ok"], false, "{v:#}");
    let failures: Vec<String> = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(
        failures.iter().any(|f| f.contains(failure)),
        "expected `{failure}` in {failures:#?}"
    );
    assert_eq!(snapshot(&a.ledger()), before, "verify changed the ledger");
}

#[test]
fn a_legitimate_ledger_verifies_with_its_signature() {
    let a = Archive::new();
    let out = a.verify(&["--format", "json"]);
    out.assert_code(0);
    let v = out.json();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let good = runs.iter().find(|r| r["run_id"] == "good").unwrap();
    assert_eq!(good["signature"], "valid");
    // Re-running every replay from the archive gives the same records.
    a.verify(&["--replay", "--repo", a.repo.path().to_str().unwrap()])
        .assert_code(0);
}

#[test]
fn a_flipped_byte_in_the_patch_body() {
    mutation("good", "good.patch", |a| {
        flip(&a.ledger().join("transcripts/good.patch"), 40)
    });
}

#[test]
fn a_flipped_byte_in_each_record() {
    mutation("good", "transcript", |a| {
        flip(&a.ledger().join("transcripts/good.json"), 200)
    });
    mutation("good", "good.lock.json", |a| {
        flip(&a.ledger().join("fixtures/good.lock.json"), 200)
    });
    mutation("good", "property record", |a| {
        flip(&a.ledger().join("properties/good.json"), 300)
    });
    mutation("good", "verdict", |a| {
        flip(&a.ledger().join("verdicts/good.json"), 60)
    });
    mutation("good", "signature", |a| {
        flip(&a.ledger().join("signatures/good.dsse.json"), 100)
    });
}

#[test]
fn a_flipped_byte_in_a_stored_plugin() {
    mutation("good", "plugin of `retry_oracle`", |a| {
        let sha =
            agent_ledger::digest::sha256_hex(&std::fs::read(component("retry_oracle")).unwrap());
        flip(&a.ledger().join("objects").join(sha), 5000);
    });
}

#[test]
fn a_receipt_copied_in_from_another_run() {
    mutation("good", "run_id", |a| {
        let t = a.ledger().join("transcripts");
        std::fs::copy(t.join("bad.json"), t.join("good.json")).unwrap();
        std::fs::copy(t.join("bad.patch"), t.join("good.patch")).unwrap();
    });
}

#[test]
fn an_older_verdict_put_back_over_a_newer_one() {
    // The run was classified before its replay (reject: no properties),
    // then checked (review); the old verdict is put back.
    let a = Archive::new();
    let d = a.repo.path();
    let body = fixture("patches/good.diff");
    run(
        d,
        &[
            "capture",
            "--run",
            "again",
            "--body",
            body.to_str().unwrap(),
        ],
    )
    .assert_code(0);
    run(d, &["lock", "--run", "again", "--base", &a.repo.base]).assert_code(0);
    run(d, &["classify", "--run", "again"]).assert_code(4);
    let verdict = a.ledger().join("verdicts/again.json");
    let old = std::fs::read(&verdict).unwrap();
    std::fs::remove_file(&verdict).unwrap();
    a.repo.check("again", &[]).assert_code(0);
    std::fs::write(&verdict, old).unwrap();
    let out = a.verify(&["--run", "again"]);
    out.assert_code(5);
    assert!(
        out.stdout.contains("the record says `reject`") && out.stdout.contains("give `review`"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_record_with_an_unknown_schema_major_version() {
    mutation("bad", "schema", |a| {
        edit_json(&a.ledger().join("properties/bad.json"), |v| {
            v["schema"] = 2.into()
        })
    });
}

#[test]
fn a_missing_record() {
    mutation("good", "fixture lock: missing", |a| {
        std::fs::remove_file(a.ledger().join("fixtures/good.lock.json")).unwrap()
    });
    mutation("bad", "verdict: missing", |a| {
        std::fs::remove_file(a.ledger().join("verdicts/bad.json")).unwrap()
    });
}

#[test]
fn a_property_record_edited_from_miss_to_holds() {
    mutation("bad", "verdict", |a| {
        edit_json(&a.ledger().join("properties/bad.json"), |v| {
            for p in v["properties"].as_array_mut().unwrap() {
                if p["outcome"] == "miss" {
                    p["outcome"] = "holds".into();
                    p["findings"] = serde_json::json!([]);
                }
            }
        })
    });
}

#[test]
fn a_lock_with_one_row_removed() {
    mutation("good", "dir_hash", |a| {
        edit_json(&a.ledger().join("fixtures/good.lock.json"), |v| {
            v["files"].as_array_mut().unwrap().remove(0);
            v["count"] = 0.into();
        })
    });
}

#[test]
fn a_signature_by_an_unknown_key_or_for_another_payload_type() {
    let a = Archive::new();
    // Only the right key is trusted, not the key id in the envelope.
    let other = tempdir();
    let (secret, public) = (other.path().join("o.secret"), other.path().join("o.public"));
    run(
        a.repo.path(),
        &[
            "keygen",
            "--secret",
            secret.to_str().unwrap(),
            "--public",
            public.to_str().unwrap(),
        ],
    )
    .assert_code(0);
    let ledger = a.ledger();
    let out = run(
        a.repo.path(),
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "verify",
            "--trusted-key",
            public.to_str().unwrap(),
        ],
    );
    out.assert_code(5);
    assert!(
        out.stdout
            .contains("no signature verifies under a trusted key"),
        "{}",
        out.stdout
    );
    // Changing the payload type breaks the signature (it is signed too).
    mutation("good", "signature", |a| {
        edit_json(&a.ledger().join("signatures/good.dsse.json"), |v| {
            v["payloadType"] = "application/json".into()
        })
    });
    // A signature for another run's verdict, moved over.
    let b = Archive::new();
    let secret = b.keys.path().join("k.secret");
    run(
        b.repo.path(),
        &["sign", "--run", "bad", "--key", secret.to_str().unwrap()],
    )
    .assert_code(0);
    let sigs = b.ledger().join("signatures");
    std::fs::copy(sigs.join("bad.dsse.json"), sigs.join("good.dsse.json")).unwrap();
    let out = b.verify(&[]);
    out.assert_code(5);
    assert!(
        out.stdout.contains("does not match the records on file"),
        "{}",
        out.stdout
    );
}

#[test]
fn require_signatures_fails_unsigned_runs() {
    let a = Archive::new();
    let out = a.verify(&["--require-signatures"]);
    out.assert_code(5);
    assert!(
        out.stdout.contains("FAILED  bad") && out.stdout.contains("ok      good"),
        "{}",
        out.stdout
    );
}

#[test]
fn an_archive_verifies_in_another_directory_and_refuses_tampering() {
    let a = Archive::new();
    let out_dir = tempdir();
    let tar = out_dir.path().join("runs.tar");
    run(
        a.repo.path(),
        &[
            "pack",
            "--run",
            "good",
            "--run",
            "bad",
            "--run",
            "drift",
            "-o",
            tar.to_str().unwrap(),
        ],
    )
    .assert_code(0);
    // Moved elsewhere, verified there, with the repository gone.
    let elsewhere = tempdir();
    let moved = elsewhere.path().join("archive.tar");
    std::fs::rename(&tar, &moved).unwrap();
    drop(a.repo);
    let key = a.keys.path().join("k.public");
    let out = run(
        elsewhere.path(),
        &[
            "verify",
            "archive.tar",
            "--trusted-key",
            key.to_str().unwrap(),
        ],
    );
    out.assert_code(0);
    assert!(
        out.stdout.contains("3 of 3 run(s) verified"),
        "{}",
        out.stdout
    );
    // A byte flipped inside the archive.
    let mut bytes = std::fs::read(&moved).unwrap();
    let at = bytes.windows(9).position(|w| w == b"\"verdict\"").unwrap() + 12;
    bytes[at] ^= 0x01;
    std::fs::write(&moved, &bytes).unwrap();
    let out = run(elsewhere.path(), &["verify", "archive.tar"]);
    out.assert_code(5);
    assert!(
        out.stdout.contains("does not match its digest"),
        "{}",
        out.stdout
    );
    // Not an archive at all.
    std::fs::write(elsewhere.path().join("junk.tar"), b"junk").unwrap();
    run(elsewhere.path(), &["verify", "junk.tar"]).assert_code(65);
}

#[test]
fn a_run_that_does_not_verify_is_not_signed() {
    let a = Archive::new();
    flip(&a.ledger().join("transcripts/bad.patch"), 40);
    let secret = a.keys.path().join("k.secret");
    let out = run(
        a.repo.path(),
        &["sign", "--run", "bad", "--key", secret.to_str().unwrap()],
    );
    out.assert_code(65);
    assert!(out.stderr.contains("does not verify"), "{}", out.stderr);
    assert!(!a.ledger().join("signatures/bad.dsse.json").exists());
}

/// A run whose test record was replaced and relinked (a fake command's
/// passing report, the record then made to name the real command) is
/// consistent in itself: `verify --replay` re-judges the stored report and
/// says so, naming what it took from the records; `--rerun-tests` runs
/// the real command again and fails the run.
#[test]
fn a_replaced_and_relinked_test_record_fails_only_when_the_tests_are_run_again() {
    use sha2::Digest;
    let repo = crate::evaluation::repo();
    let patch = patch_of(&repo, |root| {
        write(
            &root.join("calc.py"),
            "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n",
        )
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(&config_file, "schema = 1\n[fixtures]\nnone = \"no data\"\n");
    let real = "python3 run_tests.py";
    let fake = r#"printf '<testsuite><testcase classname="tests.test_calc.TestCalc" name="test_sub"/></testsuite>' > "$AGENT_LEDGER_JUNIT""#;
    // The real command rejects the patch.
    let ledger = repo.path().join(".agent-ledger");
    let args = |cmd: &str| {
        vec![
            "--test-cmd".to_string(),
            cmd.to_string(),
            "--config".to_string(),
            config_file.to_str().unwrap().to_string(),
        ]
    };
    let a = args(real);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "honest", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    repo.check("honest", &a).assert_code(4);
    // The forger runs the fake and relinks the record to the real command.
    let f = args(fake);
    let f: Vec<&str> = f.iter().map(String::as_str).collect();
    repo.check("r", &f).assert_code(0);
    let props = ledger.join("properties/r.json");
    let text = std::fs::read_to_string(&props).unwrap();
    let quoted = |s: &str| serde_json::to_string(s).unwrap();
    assert!(text.contains(&quoted(fake)), "{text}");
    let forged = text.replace(&quoted(fake), &quoted(real));
    let hex = |b: &[u8]| {
        sha2::Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    let verdict = ledger.join("verdicts/r.json");
    let v = std::fs::read_to_string(&verdict)
        .unwrap()
        .replace(&hex(text.as_bytes()), &hex(forged.as_bytes()));
    std::fs::write(&props, &forged).unwrap();
    std::fs::write(&verdict, v).unwrap();

    let out = run(
        repo.path(),
        &["verify", "--run", "r", "--replay", "--format", "json"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let from = out.json()["runs"][0]["evidence"]["from_records"].to_string();
    assert!(from.contains("the command is not re-run"), "{from}");
    let out = run(repo.path(), &["verify", "--run", "r", "--replay"]);
    assert!(
        out.stdout
            .contains("taken from the records: the test command's run"),
        "{}",
        out.stdout
    );
    let out = run(
        repo.path(),
        &["verify", "--run", "r", "--replay", "--rerun-tests"],
    );
    assert_eq!(out.code, 5, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("`tests_pass` is miss (the record says holds)"),
        "{}",
        out.stdout
    );
    // The honest run verifies with its tests run again.
    let out = run(
        repo.path(),
        &[
            "verify",
            "--run",
            "honest",
            "--replay",
            "--rerun-tests",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let re = out.json()["runs"][0]["evidence"]["recomputed"].to_string();
    assert!(re.contains("the test command's runs"), "{re}");
    // `--test-ro` without `--rerun-tests` is refused.
    run(repo.path(), &["verify", "--test-ro", "/usr"]).assert_code(64);
}
