//! Snapshots of the human output of `check`, `classify`, `reconcile` and
//! `verify`: the exit code and stdout exactly as a user sees them today, so a
//! change to the wording or layout fails here. Only what legitimately varies
//! between machines and runs is redacted (see `redactions`).

use crate::support::*;
use std::path::{Path, PathBuf};

/// Filters for what varies between machines and runs, and nothing else.
/// `dirs` are the temporary directories a test made, each with the name it
/// is shown as.
fn redactions(dirs: &[(&Path, &str)]) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    for (dir, name) in dirs {
        let mut forms = vec![dir.to_path_buf()];
        if let Ok(real) = dir.canonicalize() {
            forms.push(real);
        }
        for form in forms {
            settings.add_filter(&regex_escape(&form.to_string_lossy()), *name);
        }
    }
    // Any other temporary directory (the test's own temp dir or the binary's).
    let tmp = std::env::temp_dir();
    settings.add_filter(
        &format!(
            r"{}/\.tmp[A-Za-z0-9]+",
            regex_escape(tmp.to_string_lossy().trim_end_matches('/'))
        ),
        "[TEMP]",
    );
    settings.add_filter(r"\b[0-9a-f]{64}\b", "[SHA256]");
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[COMMIT]");
    // Records named by the first 12 hex digits of their sha256 (`verify`).
    settings.add_filter(r"\b[0-9a-f]{12}\b", "[SHA256:12]");
    settings.add_filter(
        r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})",
        "[TIMESTAMP]",
    );
    // A span id is random per traced call.
    settings.add_filter(r"(?m)^  [0-9a-f]{16} ", "  [SPAN] ");
    // Fuel in the property table: a right-aligned 12-character column. The
    // whole column is replaced by a token of the same width, so the layout
    // around it stays literal (the host row's `-` is not fuel and stays).
    let fuel = (1..=12)
        .map(|digits| format!(" {{{}}}\\d{{{digits}}}", 12 - digits))
        .collect::<Vec<_>>()
        .join("|");
    settings.add_filter(
        &format!(r"(?m)^(  \S+ +(?:holds|miss|error|vacuous)   *)(?:{fuel})(  )"),
        "${1}      [fuel]${2}",
    );
    settings
}

fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What a user sees: the exit code, then stdout to its last byte (the end
/// marker keeps trailing newlines and blank lines visible).
fn shown(out: &Output) -> String {
    format!(
        "exit code: {}\n--- stdout\n{}--- end\n",
        out.code, out.stdout
    )
}

#[track_caller]
fn assert_shown(name: &str, description: &str, out: &Output, dirs: &[(&Path, &str)]) {
    let mut settings = redactions(dirs);
    settings.set_description(description);
    settings.bind(|| insta::assert_snapshot!(name, shown(out)));
}

// ---------------------------------------------------------------- check

/// `check` in the human format (no `--format`), with the shared cache.
fn check_human(repo: &DemoRepo, run_id: &str) -> Output {
    let cache = cache_dir();
    run(
        repo.path(),
        &[
            "check",
            "--run",
            run_id,
            "--base",
            &repo.base,
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    )
}

#[test]
fn check_review() {
    let repo = DemoRepo::new();
    repo.capture("run-001", "good");
    let out = check_human(&repo, "run-001");
    out.assert_code(0);
    assert_shown(
        "check_review",
        "check, human format: fixtures/patches/good.diff is review",
        &out,
        &[(repo.path(), "[REPO]")],
    );
}

#[test]
fn check_reject_deleted_test() {
    let repo = DemoRepo::new();
    repo.capture("run-002", "deletes-test");
    let out = check_human(&repo, "run-002");
    out.assert_code(4);
    assert_shown(
        "check_reject_deleted_test",
        "check, human format: fixtures/patches/deletes-test.diff is reject",
        &out,
        &[(repo.path(), "[REPO]")],
    );
}

#[test]
fn check_fixture_mismatch() {
    let repo = DemoRepo::new();
    repo.capture("run-003", "touches-fixture");
    let out = check_human(&repo, "run-003");
    out.assert_code(3);
    assert_shown(
        "check_fixture_mismatch",
        "check, human format: fixtures/patches/touches-fixture.diff is fixture_mismatch",
        &out,
        &[(repo.path(), "[REPO]")],
    );
}

#[test]
fn check_incomplete() {
    let repo = DemoRepo::new();
    let body = fixture("capture/truncated-hunk.diff");
    run(
        repo.path(),
        &[
            "capture",
            "--run",
            "run-004",
            "--body",
            body.to_str().unwrap(),
        ],
    )
    .assert_code(2);
    let out = check_human(&repo, "run-004");
    out.assert_code(2);
    assert_shown(
        "check_incomplete",
        "check, human format: fixtures/capture/truncated-hunk.diff is incomplete",
        &out,
        &[(repo.path(), "[REPO]")],
    );
}

// ---------------------------------------------------------------- classify

fn classify_human(dir: &Path, run_id: &str) -> Output {
    run(dir, &["classify", "--run", run_id])
}

#[test]
fn classify_review_after_check() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    repo.check("r", &[]).assert_code(0);
    let out = classify_human(repo.path(), "r");
    out.assert_code(0);
    assert_shown(
        "classify_review",
        "classify, human format: the records of a checked good.diff are review",
        &out,
        &[(repo.path(), "[REPO]")],
    );
}

#[test]
fn classify_reject_after_check() {
    let repo = DemoRepo::new();
    repo.capture("r", "deletes-test");
    repo.check("r", &[]).assert_code(4);
    let out = classify_human(repo.path(), "r");
    out.assert_code(4);
    assert_shown(
        "classify_reject_property_miss",
        "classify, human format: the records of a checked deletes-test.diff are reject",
        &out,
        &[(repo.path(), "[REPO]")],
    );
}

#[test]
fn classify_reject_without_a_property_record() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    capture_complete(d, "r");
    run(d, &["lock", "--run", "r", "--root", "tests/fixtures"]).assert_code(0);
    let out = classify_human(d, "r");
    out.assert_code(4);
    assert_shown(
        "classify_reject_properties_missing",
        "classify, human format: a transcript and a lock but no property record is reject",
        &out,
        &[(d, "[DIR]")],
    );
}

#[test]
fn classify_fixture_mismatch_without_a_lock() {
    let dir = tempdir();
    capture_complete(dir.path(), "r");
    let out = classify_human(dir.path(), "r");
    out.assert_code(3);
    assert_shown(
        "classify_fixture_mismatch_lock_missing",
        "classify, human format: a complete transcript with no lock is fixture_mismatch",
        &out,
        &[(dir.path(), "[DIR]")],
    );
}

#[test]
fn classify_incomplete_without_a_transcript() {
    let dir = tempdir();
    let out = classify_human(dir.path(), "r");
    out.assert_code(2);
    assert_shown(
        "classify_incomplete_transcript_missing",
        "classify, human format: no transcript at all is incomplete",
        &out,
        &[(dir.path(), "[DIR]")],
    );
}

// ---------------------------------------------------------------- reconcile

/// A demo repository and a trace file outside it, as in `reconcile.rs`.
struct Traced {
    repo: DemoRepo,
    scratch: tempfile::TempDir,
    trace: PathBuf,
}

impl Traced {
    fn new() -> Traced {
        let scratch = tempdir();
        let trace = scratch.path().join("trace.jsonl");
        Traced {
            repo: DemoRepo::new(),
            scratch,
            trace,
        }
    }

    fn path(&self) -> &Path {
        self.repo.path()
    }

    fn ledger(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut full: Vec<&str> = args.to_vec();
        let at = full.iter().position(|a| *a == "--").unwrap_or(full.len());
        full.splice(at..at, ["--trace", self.trace.to_str().unwrap()]);
        run_with_stdin(self.path(), &full, stdin)
    }

    /// Edits only through the traced adapter: a write, a new file, a delete
    /// and a traced command.
    fn honest_edits(&self) {
        let fixed = std::fs::read_to_string(self.path().join("src/retry.py"))
            .unwrap()
            .replace("2 ** attempt", "2 ** (attempt - 1)");
        self.ledger(&["trace", "write", "src/retry.py"], Some(fixed.as_bytes()))
            .assert_code(0);
        self.ledger(&["trace", "write", "docs/notes.md"], Some(b"# notes\n"))
            .assert_code(0);
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

    fn reconcile(&self, extra: &[&str]) -> Output {
        // An agent that never called the adapter left an empty trace.
        if !self.trace.exists() {
            write(&self.trace, "");
        }
        let mut args = vec!["reconcile"];
        args.extend_from_slice(extra);
        self.ledger(&args, None)
    }

    fn dirs(&self) -> [(&Path, &str); 2] {
        [(self.path(), "[REPO]"), (self.scratch.path(), "[SCRATCH]")]
    }
}

#[test]
fn reconcile_reconciled() {
    let t = Traced::new();
    t.honest_edits();
    let out = t.reconcile(&["--require-mutation"]);
    out.assert_code(0);
    assert_shown(
        "reconcile_reconciled",
        "reconcile --require-mutation, human format: four traced changes agree with the tree",
        &out,
        &t.dirs(),
    );
}

#[test]
fn reconcile_mismatch_ghost_phantom_hash_miss() {
    let t = Traced::new();
    t.honest_edits();
    // A ghost: a change no span covers.
    let config = t.path().join("agent-ledger.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text + "# edited behind the adapter\n").unwrap();
    // A phantom: a traced new file removed again, so its path is unchanged.
    std::fs::remove_file(t.path().join("docs/notes.md")).unwrap();
    // A hash miss: a traced file edited again behind the adapter's back.
    let retry = t.path().join("src/retry.py");
    let text = std::fs::read_to_string(&retry).unwrap();
    std::fs::write(&retry, text + "# untraced\n").unwrap();
    let out = t.reconcile(&[]);
    out.assert_code(1);
    assert_shown(
        "reconcile_mismatch",
        "reconcile, human format: a ghost (agent-ledger.toml), a phantom (docs/notes.md) and a hash miss (src/retry.py)",
        &out,
        &t.dirs(),
    );
}

#[test]
fn reconcile_open_span() {
    let t = Traced::new();
    let mut child = command(t.path())
        .args(["trace", "exec", "--writes", "slow.txt", "--trace"])
        .arg(&t.trace)
        .args(["--", "sh", "-c", "sleep 30"])
        .spawn()
        .unwrap();
    // Wait for the open line, then kill the adapter mid-span.
    let mut opened = false;
    for _ in 0..500 {
        if std::fs::read_to_string(&t.trace).is_ok_and(|s| s.contains("\"event\":\"open\"")) {
            opened = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(opened, "the adapter never wrote its open line");
    let out = t.reconcile(&[]);
    out.assert_code(2);
    assert_shown(
        "reconcile_open_span",
        "reconcile, human format: the adapter was killed between open and close",
        &out,
        &t.dirs(),
    );
}

#[test]
fn reconcile_require_mutation_on_a_clean_tree() {
    let t = Traced::new();
    let out = t.reconcile(&["--require-mutation"]);
    out.assert_code(3);
    assert_shown(
        "reconcile_no_mutation",
        "reconcile --require-mutation, human format: a clean tree and no trace",
        &out,
        &t.dirs(),
    );
}

// ---------------------------------------------------------------- verify

/// A demo repository with three checked runs (`good` review and signed,
/// `bad` reject, `drift` fixture_mismatch) and the public key, as in
/// `verify.rs`.
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

    fn verify(&self) -> Output {
        let ledger = self.ledger();
        let key = self.keys.path().join("k.public");
        run(
            self.repo.path(),
            &[
                "--ledger",
                ledger.to_str().unwrap(),
                "verify",
                "--trusted-key",
                key.to_str().unwrap(),
            ],
        )
    }

    fn dirs(&self) -> [(&Path, &str); 2] {
        [(self.repo.path(), "[REPO]"), (self.keys.path(), "[KEYS]")]
    }
}

#[test]
fn verify_ok() {
    let a = Archive::new();
    let out = a.verify();
    out.assert_code(0);
    assert_shown(
        "verify_ok",
        "verify --trusted-key, human format: three runs, one signed, all verify",
        &out,
        &a.dirs(),
    );
}

#[test]
fn verify_tampered() {
    let a = Archive::new();
    // One byte of the signed run's stored patch flipped.
    let patch = a.ledger().join("transcripts/good.patch");
    let mut bytes = std::fs::read(&patch).unwrap();
    bytes[40] ^= 0x01;
    std::fs::write(&patch, bytes).unwrap();
    // The rejected run's property record edited from miss to holds.
    let props = a.ledger().join("properties/bad.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&props).unwrap()).unwrap();
    for p in v["properties"].as_array_mut().unwrap() {
        if p["outcome"] == "miss" {
            p["outcome"] = "holds".into();
            p["findings"] = serde_json::json!([]);
        }
    }
    std::fs::write(&props, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = a.verify();
    out.assert_code(5);
    assert_shown(
        "verify_tampered",
        "verify --trusted-key, human format: a flipped patch byte in `good`, a miss edited to holds in `bad`",
        &out,
        &a.dirs(),
    );
}
