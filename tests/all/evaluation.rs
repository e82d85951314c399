//! Evaluating a trial the way SWE-bench does: the evaluator's test patch
//! applied after the agent's, the tests that decide (`FAIL_TO_PASS`,
//! `PASS_TO_PASS`), verdicts relative to the base revision, interpreters
//! the sandbox would hide, and runners that write no JUnit. Each test
//! builds a small Python repository with no `agent-ledger.toml` and no
//! fixture directory, as every SWE-bench base is.

use crate::support::*;
use std::path::Path;

/// unittest discovery under `tests/`, writing JUnit with passes, failures,
/// errors and skips.
const RUNNER: &str = r#"import os, sys, unittest
from xml.sax.saxutils import quoteattr
sys.path.insert(0, ".")
class R(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k); self.cases = []
    def addSuccess(self, t): super().addSuccess(t); self.cases.append((t, None))
    def addFailure(self, t, e): super().addFailure(t, e); self.cases.append((t, "failure"))
    def addError(self, t, e): super().addError(t, e); self.cases.append((t, "error"))
    def addSkip(self, t, r): super().addSkip(t, r); self.cases.append((t, "skipped"))
suite = unittest.defaultTestLoader.discover("tests", top_level_dir=".")
result = unittest.TextTestRunner(resultclass=R, verbosity=0).run(suite)
with open(os.environ["AGENT_LEDGER_JUNIT"], "w") as out:
    out.write("<testsuites><testsuite name='all'>")
    for t, kind in result.cases:
        c = type(t).__module__ + "." + type(t).__name__
        out.write("<testcase classname=%s name=%s>" % (quoteattr(c), quoteattr(t._testMethodName)))
        if kind: out.write("<%s/>" % kind)
        out.write("</testcase>")
    out.write("</testsuite></testsuites>")
sys.exit(0 if result.wasSuccessful() else 1)
"#;

const TESTS: &str = "import unittest\nfrom calc import add, sub\n\n\nclass TestCalc(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(sub(3, 1), 2)\n\n    def test_network(self):\n        raise OSError(\"no network in the sandbox\")\n";

/// A repository whose `add` is wrong, with a test that always fails (it
/// wants a network), and its base commit.
pub(crate) fn repo() -> DemoRepo {
    let dir = tempdir();
    let root = dir.path();
    write(
        &root.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    );
    write(&root.join("run_tests.py"), RUNNER);
    write(&root.join("bin_test.py"), SYMPY_LIKE);
    write(&root.join("tests/__init__.py"), "");
    write(&root.join("tests/test_calc.py"), TESTS);
    write(
        &root.join("tests/test_more.py"),
        "import unittest\n\n\nclass TestMore(unittest.TestCase):\n    def test_more(self):\n        self.assertEqual(2 * 2, 4)\n",
    );
    write(&root.join("README.md"), "calc\n");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    DemoRepo { dir, base }
}

/// The evaluator's test patch: `test_add`, which fails on the base.
pub(crate) fn eval_patch(repo: &DemoRepo) -> Vec<u8> {
    patch_of(repo, |root| {
        let text = std::fs::read_to_string(root.join("tests/test_calc.py")).unwrap();
        write(
            &root.join("tests/test_calc.py"),
            format!("{text}\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"),
        );
    })
}

pub(crate) fn fix(root: &Path) {
    write(
        &root.join("calc.py"),
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    );
}

/// The upstream fix, committed after the base on another branch (the
/// checkout is back on the base's branch): its commit id.
pub(crate) fn upstream_fix(repo: &DemoRepo) -> String {
    git(repo.path(), &["checkout", "-q", "-b", "upstream"]);
    fix(repo.path());
    git(repo.path(), &["commit", "-q", "-am", "the fix"]);
    let future = git(repo.path(), &["rev-parse", "HEAD"]);
    git(repo.path(), &["checkout", "-q", "-"]);
    future
}

pub(crate) const F2P: &str = "tests/test_calc.py::TestCalc::test_add";
pub(crate) const P2P: &str = "test_sub (tests.test_calc.TestCalc)";

/// Captures `edit` as run `run` and checks it with the evaluator's patch
/// and the required tests; returns the exit code and the record.
fn evaluated(
    repo: &DemoRepo,
    run_id: &str,
    edit: impl FnOnce(&Path),
    extra: &[&str],
) -> (Output, serde_json::Value) {
    let eval = eval_patch(repo);
    let patch = patch_of(repo, edit);
    let scratch = tempdir();
    let eval_file = scratch.path().join("test.patch");
    write(&eval_file, &eval);
    run_with_stdin(
        repo.path(),
        &["capture", "--run", run_id, "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let mut args = vec![
        "--test-cmd",
        "python3 run_tests.py",
        "--eval-patch",
        eval_file.to_str().unwrap(),
        "--require-pass",
        F2P,
        "--require-pass",
        P2P,
    ];
    args.extend_from_slice(extra);
    let out = repo.check(run_id, &args);
    let record = repo.properties(run_id);
    (out, record)
}

#[test]
fn a_resolving_patch_is_review_with_each_tests_transition_on_record() {
    let repo = repo();
    let (out, record) = evaluated(&repo, "r", fix, &[]);
    assert_eq!(out.code, 0, "{}\n{record:#}", out.stderr);
    // The evaluator's patch is stored, locked and named in the chain.
    let e = &record["evaluation"];
    assert_eq!(
        e["paths"],
        serde_json::json!(["tests/test_calc.py"]),
        "{record:#}"
    );
    let stored = std::fs::read(repo.path().join(".agent-ledger/properties/r.eval.patch")).unwrap();
    assert_eq!(
        e["patch"]["sha256"],
        agent_ledger::digest::sha256_hex(&stored)
    );
    let lock: serde_json::Value = serde_json::from_slice(
        &std::fs::read(repo.path().join(".agent-ledger/fixtures/r.lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        lock["evaluation"]["patch_sha256"], e["patch"]["sha256"],
        "{lock:#}"
    );
    // Each required test, and the failure that was already there.
    let t = &record["tests"];
    assert_eq!(t["required"][0]["id"], F2P, "{t:#}");
    assert_eq!(t["required"][0]["base"], "failed", "{t:#}");
    assert_eq!(t["required"][0]["after"], "passed", "{t:#}");
    assert_eq!(t["required"][1]["base"], "passed", "{t:#}");
    assert_eq!(
        t["fail_to_fail"],
        serde_json::json!(["tests.test_calc.TestCalc::test_network"]),
        "{t:#}"
    );
    let p = outcome(&record, "tests_pass");
    assert_eq!(p["outcome"], "holds", "{p:#}");
    // The change-judging properties saw the agent's patch only.
    assert_eq!(outcome(&record, "tests_not_deleted")["outcome"], "holds");
    run(repo.path(), &["verify", "--run", "r", "--replay"]).assert_code(0);
}

#[test]
fn a_patch_that_does_not_make_the_failing_test_pass_is_reject() {
    let repo = repo();
    let (out, record) = evaluated(
        &repo,
        "r",
        |root| write(&root.join("README.md"), "calc, fixed?\n"),
        &[],
    );
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(
        &record,
        "tests_pass",
        "",
        &format!("required test `{F2P}` (require_pass) failed after the patch"),
    );
}

#[test]
fn a_patch_that_breaks_a_test_that_passed_is_reject() {
    let repo = repo();
    let (out, record) = evaluated(
        &repo,
        "r",
        |root| {
            write(
                &root.join("calc.py"),
                "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n",
            )
        },
        &[],
    );
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(
        &record,
        "tests_pass",
        "",
        &format!("required test `{P2P}` (require_pass) failed after the patch"),
    );
}

/// The agent rewrites the evaluator's test file so that its own version
/// passes without the fix: the evaluator's file replaces it before the
/// tests run, and the overwrite is on record.
#[test]
fn an_agent_that_rewrites_the_evaluators_test_file_is_tested_on_the_evaluators() {
    let repo = repo();
    let (out, record) = evaluated(
        &repo,
        "r",
        |root| {
            write(
                &root.join("tests/test_calc.py"),
                "import unittest\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        pass\n\n    def test_sub(self):\n        pass\n",
            );
        },
        &[],
    );
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(&record, "tests_pass", "", "failed after the patch");
    let files = outcome(&record, "evaluator_files");
    assert_eq!(files["outcome"], "holds", "{files:#}");
    assert_eq!(
        files["findings"][0]["path"], "tests/test_calc.py",
        "{files:#}"
    );
    assert_eq!(
        record["evaluation"]["agent_overwritten"],
        serde_json::json!(["tests/test_calc.py"])
    );
}

/// Failures that were already there on the base are not the patch's:
/// without required tests, a baseline keeps `test_network` (it fails
/// before and after every patch) from rejecting an honest fix.
#[test]
fn a_failure_already_there_on_the_base_is_recorded_not_counted() {
    let repo = repo();
    let patch = patch_of(&repo, fix);
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(
        &config_file,
        "schema = 1\n[fixtures]\nnone = \"a library with no data files\"\n",
    );
    let out = repo.check(
        "r",
        &[
            "--test-cmd",
            "python3 run_tests.py",
            "--config",
            config_file.to_str().unwrap(),
        ],
    );
    let record = repo.properties("r");
    assert_eq!(out.code, 0, "{}\n{record:#}", out.stderr);
    let p = outcome(&record, "tests_pass");
    let f = &p["findings"][0];
    assert_eq!(f["frozen"], true, "{p:#}");
    assert!(
        f["message"].as_str().unwrap().contains("fail_to_fail"),
        "{p:#}"
    );
    // Without the baseline, the same failure counts.
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "s", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check(
        "s",
        &[
            "--test-cmd",
            "python3 run_tests.py",
            "--no-test-baseline",
            "--config",
            config_file.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 4, "{}", out.stderr);
}

/// `[fixtures] none` is a lock of no files that says why; without it, a
/// repository with no fixture roots is still `fixture_mismatch`.
#[test]
fn a_repository_without_fixtures_says_so_in_its_lock() {
    let repo = repo();
    let patch = patch_of(&repo, fix);
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check("r", &[]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(
        &config_file,
        "schema = 1\n[fixtures]\nnone = \"no data files\"\n",
    );
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "s", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    repo.check("s", &["--config", config_file.to_str().unwrap()])
        .assert_code(0);
    let lock: serde_json::Value = serde_json::from_slice(
        &std::fs::read(repo.path().join(".agent-ledger/fixtures/s.lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(lock["none"], "no data files", "{lock:#}");
    write(&config_file, "schema = 1\n[fixtures]\nnone = \"\"\n");
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "t", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check("t", &["--config", config_file.to_str().unwrap()]);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains("fixtures.none"), "{}", out.stderr);
}

/// An interpreter in a directory the sandbox hides (a virtualenv under
/// `$HOME`) is not found, and the error says what to do; shown with
/// `--test-ro` (and a variable passed with `--test-env`), it runs. The
/// rest of `$HOME` stays hidden.
#[test]
fn an_interpreter_under_home_runs_when_shown_read_only() {
    let repo = repo();
    let home = tempfile::Builder::new()
        .prefix("al-home-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let venv = home.path().join("venv/bin");
    write(
        &venv.join("runtests"),
        format!(
            "#!/bin/sh\ntest \"$SUITE\" = calc || exit 3\ntest -e {secret} && exit 4\nexec python3 run_tests.py\n",
            secret = home.path().join("secret").display()
        ),
    );
    write(&home.path().join("secret"), "s3cret");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        venv.join("runtests"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let patch = patch_of(&repo, fix);
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(
        &config_file,
        "schema = 1\n[fixtures]\nnone = \"no data files\"\n",
    );
    let cmd = venv.join("runtests").display().to_string();
    let check = |run_id: &str, extra: &[&str]| {
        run_with_stdin(
            repo.path(),
            &["capture", "--run", run_id, "--body", "-"],
            Some(&patch),
        )
        .assert_code(0);
        let cache = cache_dir();
        let mut args = vec![
            "check",
            "--run",
            run_id,
            "--base",
            &repo.base,
            "--cache-dir",
            cache.to_str().unwrap(),
            "--config",
            config_file.to_str().unwrap(),
            "--test-cmd",
            &cmd,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let mut c = command(repo.path());
        c.env("HOME", home.path());
        run_command(c, &args, None)
    };
    let out = check("r", &["--test-env", "SUITE=calc"]);
    assert_eq!(out.code, 4, "{}", out.stdout);
    let record = repo.properties("r");
    let why = outcome(&record, "test_command")["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(why.contains("exited 127"), "{why}");
    assert!(why.contains("--test-ro"), "{why}");
    let venv_dir = home.path().join("venv").display().to_string();
    let out = check("s", &["--test-ro", &venv_dir, "--test-env", "SUITE=calc"]);
    assert_eq!(out.code, 0, "{}\n{:#}", out.stderr, repo.properties("s"));
    // A path that holds what the sandbox hides is refused.
    let out = check(
        "t",
        &["--test-ro", repo.path().parent().unwrap().to_str().unwrap()],
    );
    assert_eq!(out.code, 64, "{}", out.stderr);
    assert!(out.stderr.contains("--test-ro"), "{}", out.stderr);
}

/// Prints what sympy's `bin/test --verbose` prints for `tests/test_calc.py`.
const SYMPY_LIKE: &str = r#"import sys
from calc import add
ok = add(1, 2) == 3
print("tests/test_calc.py[2] ")
print("test_sub ok")
print("test_add " + ("ok" if ok else "F"))
print("== tests finished: %s in 0.01 seconds ==" % ("2 passed," if ok else "1 passed, 1 failed,"))
sys.exit(0 if ok else 1)
"#;

/// A runner that writes no JUnit: its log is parsed (sympy's `bin/test`
/// here), and its output's tail is on record.
#[test]
fn a_runner_without_junit_is_read_from_its_log() {
    let repo = repo();
    let script = "python3 bin_test.py";
    let patch = patch_of(&repo, fix);
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(
        &config_file,
        "schema = 1\n[fixtures]\nnone = \"no data files\"\n",
    );
    for (run_id, body, code) in [("r", Some(&patch), 0), ("s", None, 4)] {
        let body = body
            .cloned()
            .unwrap_or_else(|| patch_of(&repo, |root| write(&root.join("README.md"), "x\n")));
        run_with_stdin(
            repo.path(),
            &["capture", "--run", run_id, "--body", "-"],
            Some(&body),
        )
        .assert_code(0);
        let out = repo.check(
            run_id,
            &[
                "--test-cmd",
                script,
                "--test-log-parser",
                "sympy",
                "--require-pass",
                "test_add",
                "--config",
                config_file.to_str().unwrap(),
            ],
        );
        let record = repo.properties(run_id);
        assert_eq!(out.code, code, "{}\n{record:#}", out.stderr);
        assert_eq!(record["test_run"]["log_parser"], "sympy", "{record:#}");
        assert!(
            record["test_run"]["stdout_tail"]
                .as_str()
                .unwrap()
                .contains("test_sub ok"),
            "{record:#}"
        );
    }
}

/// Manifest lines carry the evaluator's inputs: an inline test patch and
/// SWE-bench's JSON-encoded id lists.
#[test]
fn a_batch_line_carries_the_evaluators_inputs() {
    let repo = repo();
    let eval = String::from_utf8(eval_patch(&repo)).unwrap();
    let dir = tempdir();
    for (run_id, edit) in [("good", true), ("bad", false)] {
        let patch = if edit {
            patch_of(&repo, fix)
        } else {
            patch_of(&repo, |root| write(&root.join("README.md"), "x\n"))
        };
        write(&dir.path().join(format!("{run_id}.diff")), patch);
    }
    let line = |run_id: &str| {
        serde_json::json!({
            "run": run_id,
            "body": format!("{run_id}.diff"),
            "repo": repo.path(),
            "base": repo.base,
            "test_cmd": "python3 run_tests.py",
            "eval_patch": eval,
            "fail_to_pass": serde_json::to_string(&[F2P]).unwrap(),
            "pass_to_pass": [P2P],
            "captured_at": "2026-11-01T00:00:00Z",
        })
        .to_string()
    };
    let manifest = dir.path().join("trials.jsonl");
    write(&manifest, format!("{}\n{}\n", line("good"), line("bad")));
    let cache = cache_dir();
    let out = run(
        repo.path(),
        &[
            "batch",
            "--manifest",
            manifest.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 4, "{}\n{}", out.stdout, out.stderr);
    let good = repo.properties("good");
    assert_eq!(outcome(&good, "tests_pass")["outcome"], "holds", "{good:#}");
    assert_eq!(good["evaluation"]["fail_to_pass"], serde_json::json!([F2P]));
    let bad = repo.properties("bad");
    assert_miss(
        &bad,
        "tests_pass",
        "",
        "(fail_to_pass) failed after the patch",
    );
}

/// The base's run is cached on disk: a second `check` of the same base,
/// evaluator patch and command (another process) reuses it, an entry that
/// does not verify under this user's key is run again, and `--no-cache`
/// never reads it.
#[test]
fn the_base_run_is_cached_across_processes_and_a_forged_entry_is_not_trusted() {
    let repo = repo();
    let patch = patch_of(&repo, fix);
    let cache = tempdir();
    let state = tempdir();
    // Each run of the command leaves a mark of its own in its report.
    let cmd = "python3 run_tests.py; python3 -c 'import os,uuid; p=os.environ[\"AGENT_LEDGER_JUNIT\"]; t=open(p).read(); open(p,\"w\").write(t.replace(\"</testsuites>\", \"<system-out>%s</system-out></testsuites>\" % uuid.uuid4()))'; python3 -c 'import unittest,sys; sys.path.insert(0,\".\"); from calc import add; sys.exit(0 if add(1,2)==3 else 1)'";
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(
        &config_file,
        "schema = 1\n[fixtures]\nnone = \"no data files\"\n",
    );
    let check = |run_id: &str, extra: &[&str]| {
        run_with_stdin(
            repo.path(),
            &["capture", "--run", run_id, "--body", "-"],
            Some(&patch),
        )
        .assert_code(0);
        let mut args = vec![
            "check",
            "--run",
            run_id,
            "--base",
            &repo.base,
            "--config",
            config_file.to_str().unwrap(),
            "--test-cmd",
            cmd,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let mut c = command(repo.path());
        c.env("XDG_STATE_HOME", state.path());
        let out = run_command(c, &args, None);
        (
            out.code,
            std::fs::read(
                repo.path()
                    .join(format!(".agent-ledger/properties/{run_id}.base-junit.xml")),
            )
            .unwrap(),
        )
    };
    let dir = cache.path().to_str().unwrap();
    let (code, first) = check("r", &["--cache-dir", dir]);
    assert_eq!(code, 0);
    let (code, second) = check("s", &["--cache-dir", dir]);
    assert_eq!(code, 0);
    assert_eq!(first, second, "the second check ran the base again");
    let entries: Vec<_> = std::fs::read_dir(cache.path().join("baselines"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(entries.len(), 1);
    // Someone who can write the cache but not read the key forges it.
    let mut forged = std::fs::read(entries[0].path()).unwrap();
    let last = forged.len() - 3;
    forged[last] ^= 1;
    std::fs::write(entries[0].path(), forged).unwrap();
    let (code, third) = check("t", &["--cache-dir", dir]);
    assert_eq!(code, 0);
    assert_ne!(third, first, "a forged entry was trusted");
    let (code, fourth) = check("u", &["--no-cache"]);
    assert_eq!(code, 0);
    assert_ne!(fourth, third, "--no-cache read the cache");
}

// The disk cache was keyed by the environment's names alone. A base run in
// an environment without a module failed the test that needs it; after the
// module was installed into that same environment, a patch that really
// broke the test reused the cached base run ("failed on the base revision
// too") and was `review`.
#[test]
fn a_base_run_cached_before_the_environment_changed_is_not_reused() {
    let mut repo = repo();
    write(
        &repo.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef double(x):\n    return 2 * x\n",
    );
    write(
        &repo.path().join("tests/test_env.py"),
        "import unittest\nfrom calc import double\n\n\nclass TestEnv(unittest.TestCase):\n    def test_double(self):\n        import helperlib\n        self.assertEqual(double(2), helperlib.FOUR)\n",
    );
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "double"]);
    repo.base = git(repo.path(), &["rev-parse", "HEAD"]);
    let repo = repo;
    let env = tempfile::Builder::new()
        .prefix("al-env-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let lib = env.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let cache = tempdir();
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(
        &config_file,
        "schema = 1\n[fixtures]\nnone = \"no data files\"\n",
    );
    let check = |run_id: &str, edit: &dyn Fn(&Path)| {
        let patch = patch_of(&repo, edit);
        run_with_stdin(
            repo.path(),
            &["capture", "--run", run_id, "--body", "-"],
            Some(&patch),
        )
        .assert_code(0);
        let pythonpath = format!("PYTHONPATH={}", lib.display());
        run(
            repo.path(),
            &[
                "check",
                "--run",
                run_id,
                "--base",
                &repo.base,
                "--cache-dir",
                cache.path().to_str().unwrap(),
                "--config",
                config_file.to_str().unwrap(),
                "--test-cmd",
                "python3 run_tests.py",
                "--test-ro",
                env.path().to_str().unwrap(),
                "--test-env",
                &pythonpath,
                "--format",
                "json",
            ],
        )
    };
    // Without helperlib the base fails test_double; the run is cached.
    let out = check("before", &|root: &Path| {
        write(&root.join("README.md"), "calc, documented\n")
    });
    let record = repo.properties("before");
    assert!(
        record.to_string().contains("fail_to_fail"),
        "{}\n{record:#}",
        out.stderr
    );
    // The environment gains the module; the patch breaks `double`.
    write(&lib.join("helperlib.py"), "FOUR = 4\n");
    let out = check("after", &|root: &Path| {
        let text = std::fs::read_to_string(root.join("calc.py")).unwrap();
        write(&root.join("calc.py"), text.replace("2 * x", "3 * x"));
    });
    let record = repo.properties("after");
    assert_eq!(out.code, 4, "{}\n{record:#}", out.stdout);
    let tests_pass = outcome(&record, "tests_pass");
    assert_eq!(tests_pass["outcome"], "miss", "{tests_pass:#}");
    assert!(
        tests_pass["findings"].to_string().contains("test_double"),
        "{tests_pass:#}"
    );
}

// The agent added a package `tests/test_calc/` whose stand-in `TestCalc`
// Python imports instead of the evaluator's `tests/test_calc.py`, leaving
// `add` broken: `review`.
#[test]
fn an_agent_file_that_shadows_the_evaluators_test_module_is_reject() {
    let repo = repo();
    let (out, record) = evaluated(
        &repo,
        "r",
        |root| {
            write(
                &root.join("tests/test_calc/__init__.py"),
                "import unittest\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(2 + 3, 5)\n\n    def test_sub(self):\n        pass\n",
            );
        },
        &[],
    );
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(
        &record,
        "evaluator_files",
        "tests/test_calc/__init__.py",
        "instead of the evaluator's `tests/test_calc.py`",
    );
}

/// The test command may run git on its tree, as SWE-bench's eval scripts
/// do (`git checkout BASE -- FILES`, `git status`): HEAD is the base, the
/// trial's changes are staged, and nothing later than the base is there,
/// so patched code cannot load the upstream fix from the history.
#[test]
fn the_test_command_runs_git_on_a_tree_that_holds_the_base_and_nothing_later() {
    let repo = repo();
    let future = upstream_fix(&repo);
    let patch = patch_of(&repo, fix);
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let script = format!(
        "set -e; echo head=$(git rev-parse HEAD); echo commits=$(git rev-list --count HEAD); \
         if git cat-file -e {future} 2>/dev/null; then echo future=seen; else echo future=absent; fi; \
         git status --porcelain; echo README > README.md; git checkout -q {base} -- README.md; \
         git diff --quiet -- README.md && echo checkout=ok; python3 run_tests.py",
        base = repo.base
    );
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(&config_file, "schema = 1\n[fixtures]\nnone = \"no data\"\n");
    let out = repo.check(
        "r",
        &[
            "--test-cmd",
            &script,
            "--no-test-baseline",
            "--require-pass",
            P2P,
            "--config",
            config_file.to_str().unwrap(),
        ],
    );
    let record = repo.properties("r");
    let stdout = record["test_run"]["stdout_tail"].as_str().unwrap_or("");
    assert!(
        stdout.contains(&format!("head={}", repo.base)),
        "{record:#}"
    );
    assert!(stdout.contains("commits=1"), "{stdout}");
    assert!(stdout.contains("future=absent"), "{stdout}");
    assert!(stdout.contains("M  calc.py"), "{stdout}");
    assert!(stdout.contains("checkout=ok"), "{stdout}");
    // test_network fails (no baseline to discount it): the run itself
    // went through to the suite.
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert_eq!(record["test_run"]["exit_code"], 1, "{record:#}");
}

/// The test command sees the system directories, its tree and what
/// `--test-ro` shows, nothing else: a dataset beside the checkout (which
/// holds the upstream fix as its `patch`) is out of sight, so patched code
/// cannot apply it at test time.
#[test]
fn a_dataset_outside_the_system_directories_is_out_of_sight() {
    let repo = repo();
    let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dataset = data.path().join("dataset.jsonl");
    write(&dataset, "{\"patch\": \"the upstream fix\"}\n");
    let patch = patch_of(&repo, |root| write(&root.join("README.md"), "calc!\n"));
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(&config_file, "schema = 1\n[fixtures]\nnone = \"no data\"\n");
    let script = format!(
        "if cat {} 2>/dev/null; then echo dataset=seen; else echo dataset=hidden; fi; python3 run_tests.py",
        dataset.display()
    );
    repo.check(
        "r",
        &[
            "--test-cmd",
            &script,
            "--no-test-baseline",
            "--config",
            config_file.to_str().unwrap(),
        ],
    );
    let record = repo.properties("r");
    let stdout = record["test_run"]["stdout_tail"].as_str().unwrap_or("");
    assert!(stdout.contains("dataset=hidden"), "{record:#}");
    // Shown with --test-ro, it is there.
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "s", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    repo.check(
        "s",
        &[
            "--test-cmd",
            &script,
            "--no-test-baseline",
            "--test-ro",
            data.path().to_str().unwrap(),
            "--config",
            config_file.to_str().unwrap(),
        ],
    );
    let record = repo.properties("s");
    let stdout = record["test_run"]["stdout_tail"].as_str().unwrap_or("");
    assert!(stdout.contains("dataset=seen"), "{record:#}");
}

/// A checkout that is a worktree keeps its history in the main
/// repository's git directory; the sandbox hides it wherever it lies, and
/// `--test-ro` may not show it.
#[test]
fn a_worktrees_history_is_hidden_and_cannot_be_shown() {
    let main = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = main.path();
    write(&root.join("calc.py"), "def add(a, b):\n    return a - b\n");
    write(
        &root.join("agent-ledger.toml"),
        "schema = 1\n[fixtures]\nnone = \"no data\"\n",
    );
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    write(&root.join("calc.py"), "def add(a, b):\n    return a + b\n");
    git(root, &["commit", "-q", "-am", "the upstream fix"]);
    let wt_dir = tempdir();
    let wt = wt_dir.path().join("wt");
    git(
        root,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            wt.to_str().unwrap(),
            &base,
        ],
    );
    run_with_stdin(
        &wt,
        &["capture", "--run", "r", "--body", "-"],
        Some(b"diff --git a/notes.txt b/notes.txt\nnew file mode 100644\nindex 0000000..8e27be7\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+text\n"),
    )
    .assert_code(0);
    let out = run(
        &wt,
        &[
            "check",
            "--run",
            "r",
            "--base",
            &base,
            "--test-cmd",
            "true",
            "--test-ro",
            root.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 64, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("which the test command's sandbox hides"),
        "{}",
        out.stderr
    );
}

/// The package that holds the evaluator's test module redirects where its
/// modules load from (`__path__`), to a passing copy the agent added; or
/// the patch ships compiled bytecode, which runs without its source: each
/// is a miss of `evaluator_files`, so the trial is `reject`.
#[test]
fn a_package_that_redirects_the_evaluators_module_or_bytecode_is_reject() {
    let fake = "import unittest\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        pass\n\n    def test_sub(self):\n        pass\n";
    let repo = repo();
    let (out, record) = evaluated(
        &repo,
        "r",
        |root| {
            write(
                &root.join("tests/__init__.py"),
                "import os\n__path__.insert(0, os.path.join(os.path.dirname(__file__), '..', 'compat'))\n",
            );
            write(&root.join("compat/test_calc.py"), fake);
        },
        &[],
    );
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(
        &record,
        "evaluator_files",
        "tests/__init__.py",
        "changes a package that holds the evaluator's `tests/test_calc.py`",
    );
    let repo = self::repo();
    let (out, record) = evaluated(
        &repo,
        "s",
        |root| {
            fix(root);
            write(
                &root.join("__pycache__/calc.cpython-311.pyc"),
                "not really bytecode",
            );
        },
        &[],
    );
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(
        &record,
        "evaluator_files",
        "__pycache__/calc.cpython-311.pyc",
        "adds compiled bytecode",
    );
}

/// A module the test command runs with `python -m` (here `unittest`, which
/// the base does not have) is the runner's, in every form Python imports:
/// a patch that adds `unittest.py` (cwd comes first on `sys.path`) is
/// refused before anything runs.
#[test]
fn a_patch_that_adds_the_module_the_command_runs_is_refused() {
    for added in [
        "unittest.py",
        "unittest/__init__.py",
        "__pycache__/unittest.cpython-311.pyc",
    ] {
        let repo = repo();
        let patch = patch_of(&repo, |root| {
            fix(root);
            write(&root.join(added), "raise SystemExit(0)\n");
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
        let out = repo.check(
            "r",
            &[
                "--test-cmd",
                "python3 -m unittest discover -s tests -t . && python3 run_tests.py",
                "--config",
                config_file.to_str().unwrap(),
            ],
        );
        let record = repo.properties("r");
        assert_eq!(out.code, 4, "{added}: {record:#}");
        assert_miss(&record, "patch_applies", added, "protected");
    }
    // Anywhere in the tree: `PYTHONPATH=src` puts `src/unittest.py` before
    // the standard library's.
    let repo = repo();
    let patch = patch_of(&repo, |root| {
        write(
            &root.join("src/unittest.py"),
            "raise SystemExit(0)
",
        );
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
    let out = repo.check(
        "r",
        &[
            "--test-cmd",
            "PYTHONPATH=src python3 -m unittest discover -s tests -t . && python3 run_tests.py",
            "--config",
            config_file.to_str().unwrap(),
        ],
    );
    let record = repo.properties("r");
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(
        &record,
        "patch_applies",
        "src/unittest.py",
        "named like the one the test command runs",
    );
}

/// `tests.py` beside `tests/` is imported instead of the package that
/// holds the evaluator's test module.
#[test]
fn a_module_beside_the_evaluators_test_directory_is_reject() {
    let repo = repo();
    let (out, record) = evaluated(
        &repo,
        "r",
        |root| write(&root.join("tests.py"), "__path__ = []\n"),
        &[],
    );
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(
        &record,
        "evaluator_files",
        "tests.py",
        "instead of the evaluator's",
    );
}
