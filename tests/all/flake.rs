//! Flake freezes: rows only from evidence, expiry against one injected now,
//! and `tests_pass` that keeps frozen failures visible.

use crate::support::*;
use std::path::Path;

const FLAKY: &str = "tests.test_queue.TestRetry::test_retry_window";

fn junit(name: &str) -> String {
    fixture(&format!("junit/{name}.xml"))
        .to_str()
        .unwrap()
        .to_string()
}

/// The demo repository with `tests_pass` added to its properties.
fn flaky_repo() -> DemoRepo {
    DemoRepo::with(|root| {
        let mut config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
        config.push_str("\n[[property]]\nname = \"tests_pass\"\nplugin = \"builtin:tests_pass\"\n");
        std::fs::write(root.join("agent-ledger.toml"), config).unwrap();
    })
}

fn observe(dir: &Path, reports: &[&str], expires: &str, now: &str) -> Output {
    let mut args = vec![
        "flake",
        "observe",
        "--test",
        FLAKY,
        "--revision",
        "HEAD",
        "--reason",
        "races the retry timer",
        "--expires",
        expires,
        "--now",
        now,
    ];
    let paths: Vec<String> = reports.iter().map(|r| junit(r)).collect();
    for p in &paths {
        args.extend(["--report", p.as_str()]);
    }
    run(dir, &args)
}

fn freeze(dir: &Path) -> toml::Value {
    toml::from_str(&std::fs::read_to_string(dir.join("flakes.toml")).unwrap()).unwrap()
}

/// Commits the working tree's freeze file as a new base revision.
fn commit_freeze(repo: &DemoRepo) -> String {
    git(repo.path(), &["add", "flakes.toml"]);
    git(repo.path(), &["commit", "-q", "-m", "freeze"]);
    git(repo.path(), &["rev-parse", "HEAD"])
}

fn check(repo: &DemoRepo, run_id: &str, base: &str, report: &str, now: &str) -> Output {
    let cache = cache_dir();
    let report = junit(report);
    run(
        repo.path(),
        &[
            "check",
            "--run",
            run_id,
            "--base",
            base,
            "--junit",
            &report,
            "--now",
            now,
            "--cache-dir",
            cache.to_str().unwrap(),
            "--format",
            "json",
        ],
    )
}

#[test]
fn a_flip_between_two_reports_creates_a_row() {
    let repo = flaky_repo();
    let out = observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-10",
        "2026-11-30T12:00:00Z",
    );
    out.assert_code(0);
    let f = freeze(repo.path());
    assert_eq!(f["schema"].as_integer(), Some(1));
    let row = &f["flake"][0];
    assert_eq!(row["test"].as_str(), Some(FLAKY));
    assert_eq!(row["revision"].as_str(), Some(repo.base.as_str()));
    assert_eq!(row["expires"].as_str(), Some("2026-12-10T00:00:00Z"));
    assert_eq!(row["observed_at"].as_str(), Some("2026-11-30T12:00:00Z"));
    assert_eq!(row["reports"].as_array().unwrap().len(), 2);
    // The rewrite keeps an ordinary file mode (temp files start as 0600).
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(repo.path().join("flakes.toml"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    // An error counts as a failure too.
    let other = flaky_repo();
    observe(
        other.path(),
        &["flaky-passes", "flaky-errors"],
        "2026-12-10",
        "2026-11-30",
    )
    .assert_code(0);
}

#[test]
fn a_plain_failure_cannot_create_a_row() {
    let repo = flaky_repo();
    let out = observe(
        repo.path(),
        &["flaky-fails", "flaky-and-real-failure"],
        "2026-12-10",
        "2026-11-30",
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("no evidence of nondeterminism") && out.stderr.contains("rule 1"),
        "{}",
        out.stderr
    );
    assert!(!repo.path().join("flakes.toml").exists());
}

#[test]
fn one_report_twice_is_not_two_observations() {
    let repo = flaky_repo();
    let out = observe(
        repo.path(),
        &["flaky-fails", "flaky-fails"],
        "2026-12-10",
        "2026-11-30",
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("two or more distinct"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_expiry_past_max_days_or_already_past_is_refused() {
    let repo = flaky_repo();
    let out = observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2027-01-15",
        "2026-11-30",
    );
    out.assert_code(65);
    assert!(out.stderr.contains("max_days"), "{}", out.stderr);
    observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-11-30",
        "2026-11-30",
    )
    .assert_code(65);
    // Exactly max_days (30) ahead is allowed.
    observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-30",
        "2026-11-30",
    )
    .assert_code(0);
}

#[test]
fn extending_a_row_needs_a_new_observation() {
    let repo = flaky_repo();
    observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-05",
        "2026-11-30",
    )
    .assert_code(0);
    let out = observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-20",
        "2026-12-01",
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("needs a new observation"),
        "{}",
        out.stderr
    );
    assert_eq!(
        freeze(repo.path())["flake"][0]["expires"].as_str(),
        Some("2026-12-05T00:00:00Z")
    );
    // A new report showing the flip again extends it.
    observe(
        repo.path(),
        &["flaky-passes", "flaky-errors"],
        "2026-12-20",
        "2026-12-01",
    )
    .assert_code(0);
    let f = freeze(repo.path());
    assert_eq!(f["flake"].as_array().unwrap().len(), 1);
    assert_eq!(
        f["flake"][0]["expires"].as_str(),
        Some("2026-12-20T00:00:00Z")
    );
    assert_eq!(f["flake"][0]["reports"].as_array().unwrap().len(), 3);
}

#[test]
fn a_report_of_an_incomplete_trial_cannot_open_a_row() {
    let repo = flaky_repo();
    let body = fixture("capture/openai-sse-no-done.txt");
    run(
        repo.path(),
        &[
            "capture",
            "--run",
            "dropped",
            "--body",
            body.to_str().unwrap(),
            "--format",
            "openai-sse",
        ],
    )
    .assert_code(2);
    check(&repo, "dropped", "HEAD", "flaky-fails", "2026-11-30").assert_code(2);
    assert!(
        repo.path()
            .join(".agent-ledger/properties/dropped.junit.xml")
            .exists()
    );
    let out = observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-10",
        "2026-11-30",
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("`dropped`") && out.stderr.contains("rule 2"),
        "{}",
        out.stderr
    );
}

#[test]
fn list_and_prune_judge_expiry_against_the_injected_now() {
    let repo = flaky_repo();
    observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-10",
        "2026-11-30",
    )
    .assert_code(0);
    let list = |now: &str| {
        run(
            repo.path(),
            &["flake", "list", "--now", now, "--format", "json"],
        )
        .json()["rows"][0]["status"]
            .clone()
    };
    assert_eq!(list("2026-12-09T23:59:59Z"), "active");
    assert_eq!(
        list("2026-12-10T00:00:00Z"),
        "expired",
        "now == expires is already expired"
    );
    let out = run(repo.path(), &["flake", "prune", "--now", "2026-12-09"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("pruned 0 expired row(s)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("active"), "{}", out.stdout);
    let out = run(repo.path(), &["flake", "prune", "--now", "2026-12-10"]);
    assert!(
        out.stdout.contains("pruned 1 expired row(s)"),
        "{}",
        out.stdout
    );
    assert!(
        freeze(repo.path())["flake"]
            .as_array()
            .is_none_or(|rows| rows.is_empty())
    );
    let out = run(repo.path(), &["flake", "list", "--now", "someday"]);
    out.assert_code(64);
    assert!(out.stderr.contains("`someday`"), "{}", out.stderr);
}

#[test]
fn a_frozen_failure_is_review_and_listed_until_the_freeze_expires() {
    let repo = flaky_repo();
    observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-10",
        "2026-11-30",
    )
    .assert_code(0);
    let base = commit_freeze(&repo);
    let body = fixture("patches/good.diff");
    run(
        repo.path(),
        &["capture", "--run", "r1", "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
    let out = check(&repo, "r1", &base, "flaky-fails", "2026-12-01");
    out.assert_code(0);
    let p = outcome(&repo.properties("r1"), "tests_pass").clone();
    assert_eq!(p["outcome"], "holds");
    assert_eq!(p["findings"][0]["frozen"], true);
    assert!(
        p["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains(FLAKY)
    );
    assert_eq!(repo.properties("r1")["now"], "2026-12-01T00:00:00Z");
    // After expiry the same trial is reject.
    run(
        repo.path(),
        &["capture", "--run", "r2", "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
    check(&repo, "r2", &base, "flaky-fails", "2026-12-10").assert_code(4);
    let p = outcome(&repo.properties("r2"), "tests_pass").clone();
    assert_eq!(p["outcome"], "miss");
    assert!(p["findings"][0].get("frozen").is_none());
}

#[test]
fn a_freeze_never_covers_a_second_failing_test() {
    let repo = flaky_repo();
    observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-10",
        "2026-11-30",
    )
    .assert_code(0);
    let base = commit_freeze(&repo);
    repo.capture("r", "good");
    check(&repo, "r", &base, "flaky-and-real-failure", "2026-12-01").assert_code(4);
    let p = outcome(&repo.properties("r"), "tests_pass").clone();
    assert_eq!(p["outcome"], "miss");
    let findings = p["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{p:#}");
    assert!(findings.iter().any(|f| f["frozen"] == true));
    assert!(
        findings
            .iter()
            .any(|f| f.get("frozen").is_none()
                && f["message"].as_str().unwrap().contains("test_cap"))
    );
}

#[test]
fn a_report_that_ran_zero_tests_is_reject() {
    for report in ["zero-tests", "only-skipped"] {
        let repo = flaky_repo();
        repo.capture("r", "good");
        check(&repo, "r", "HEAD", report, "2026-12-01").assert_code(4);
        let p = outcome(&repo.properties("r"), "tests_pass").clone();
        assert_eq!(
            p["findings"][0]["message"], "the test report ran zero tests",
            "{report}"
        );
    }
}

#[test]
fn a_clean_report_is_review_and_stored_with_its_digest() {
    let repo = flaky_repo();
    repo.capture("r", "good");
    check(&repo, "r", "HEAD", "all-pass", "2026-12-01").assert_code(0);
    let record = repo.properties("r");
    let stored = std::fs::read(repo.path().join(".agent-ledger/properties/r.junit.xml")).unwrap();
    assert_eq!(
        record["junit"]["sha256"],
        agent_ledger::digest::sha256_hex(&stored)
    );
    assert_eq!(
        outcome(&record, "tests_pass")["inputs"]["junit"],
        record["junit"]["sha256"]
    );
}

#[test]
fn a_patch_that_edits_the_freeze_file_is_rejected() {
    let repo = flaky_repo();
    repo.capture("r", "touches-flakes");
    let out = check(&repo, "r", "HEAD", "all-pass", "2026-12-01");
    out.assert_code(4);
    let miss = outcome(&repo.properties("r"), "patch_applies").clone();
    assert_eq!(miss["findings"][0]["path"], "flakes.toml");
    assert!(
        miss["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("protected")
    );
}

#[test]
fn the_test_command_runs_without_network() {
    // The probe's own answers, distinct from what sh or python3 exit with
    // when the probe cannot run at all (127: no python3; 1: an exception;
    // 2: a usage error), so a missing tool can never read as "isolated".
    const CONNECTED: i64 = 10;
    const UNREACHABLE: i64 = 11;
    fn probe(port: u16) -> String {
        format!(
            "python3 -c 'import errno, socket, sys
s = socket.socket()
s.settimeout(2)
try:
    s.connect((\"127.0.0.1\", {port}))
except (ConnectionRefusedError, socket.timeout):
    sys.exit({UNREACHABLE})
except OSError as e:
    sys.exit({UNREACHABLE} if e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH) else 3)
sys.exit({CONNECTED})'"
        )
    }
    fn probe_outside(port: u16) -> (i64, String) {
        let out = std::process::Command::new("sh")
            .args(["-c", &probe(port)])
            .output()
            .expect("`sh` is needed to run the network probe");
        let code = out.status.code().map_or(-1, i64::from);
        (code, String::from_utf8_lossy(&out.stderr).into_owned())
    }
    // The product isolates the test command with `unshare --net`; without a
    // working one it refuses to run the command, and this test would prove
    // nothing about isolation.
    match std::process::Command::new("unshare")
        .args(["--net", "true"])
        .output()
    {
        Err(e) => panic!("`unshare` (util-linux) is needed for this test and cannot run: {e}"),
        Ok(o) => assert!(
            o.status.success(),
            "`unshare --net true` failed ({}), so no network namespace can be made here: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
    }
    let repo = flaky_repo();
    repo.capture("r", "good");
    // A listener on the host's loopback: the test command must not reach it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Controls, outside the sandbox: the probe runs, reaches the listener,
    // and tells a refused connection apart.
    let (code, stderr) = probe_outside(port);
    assert_eq!(
        code, CONNECTED,
        "the probe must connect to a reachable listener outside the sandbox \
         (127: `python3` is missing; other: the probe could not run): {stderr}"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let (code, stderr) = probe_outside(closed_port);
    assert_eq!(
        code, UNREACHABLE,
        "the probe must report a refused connection as unreachable: {stderr}"
    );
    // In the sandbox: only an "unreachable" answer copies the passing report
    // and exits 0; any other answer writes a failing report and exits with
    // the probe's answer, which the record keeps. (A non-zero exit with a
    // green report is an error of its own: the two must agree.)
    // The reports travel in the command: the sandbox hides temp dirs and
    // homes, where a checkout of this repository may live.
    let pass = report_in_command("all-pass");
    let fail = report_in_command("flaky-and-real-failure");
    let cmd = format!(
        "{}; rc=$?; if [ \"$rc\" -eq {UNREACHABLE} ]; then {pass}; exit 0; else {fail}; fi; exit \"$rc\"",
        probe(port)
    );
    let cache = cache_dir();
    let out = run(
        repo.path(),
        &[
            "check",
            "--run",
            "r",
            "--base",
            "HEAD",
            "--test-cmd",
            &cmd,
            "--cache-dir",
            cache.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(
        repo.path().join(".agent-ledger/properties/r.json").exists(),
        "check wrote no property record (exit {}): {}",
        out.code,
        out.stderr
    );
    let record = repo.properties("r");
    assert_eq!(record["test_run"]["network"], "isolated");
    assert_eq!(record["test_run"]["sandbox"], "namespaces");
    assert_eq!(
        record["test_run"]["exit_code"], 0,
        "the probe in the sandbox did not report the listener unreachable \
         ({CONNECTED}: it connected; 127: `python3` is missing; other: the probe could not run): {}",
        out.stderr
    );
    out.assert_code(0);
    assert_eq!(outcome(&record, "tests_pass")["outcome"], "holds");
    drop(listener);
}

/// A shell command writing the fixture report `name` to
/// `$AGENT_LEDGER_JUNIT`.
fn report_in_command(name: &str) -> String {
    let xml = std::fs::read_to_string(junit(name)).unwrap();
    assert!(!xml.contains('\''), "{name} cannot be single-quoted");
    format!("printf '%s' '{xml}' > \"$AGENT_LEDGER_JUNIT\"")
}

/// Where the kernel refuses the test command's sandbox (no new user
/// namespace can be made: `user.max_user_namespaces` is 0 in the user
/// namespace `check` runs in), the command runs only with
/// `--allow-unsandboxed`, or its old name `--allow-network`.
#[test]
fn without_a_network_namespace_the_test_command_needs_allow_network() {
    let repo = flaky_repo();
    repo.capture("r", "good");
    let cmd = report_in_command("all-pass");
    let cache = cache_dir();
    let no_userns = |extra: &[&str]| {
        let out = std::process::Command::new("unshare")
            .args(["--user", "--map-root-user", "sh", "-c"])
            .arg(r#"echo 0 > /proc/sys/user/max_user_namespaces && exec "$@""#)
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_agent-ledger"))
            .args(["check", "--run", "r", "--base", "HEAD", "--test-cmd", &cmd])
            .arg("--cache-dir")
            .arg(&cache)
            .args(extra)
            .current_dir(repo.path())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("`unshare` (util-linux) is needed for this test");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = no_userns(&[]);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains("--allow-unsandboxed"), "{stderr}");
    let (code, stderr) = no_userns(&["--allow-network"]);
    assert_eq!(code, Some(0), "{stderr}");
    let record = repo.properties("r");
    assert_eq!(record["test_run"]["network"], "allowed");
    assert_eq!(record["test_run"]["sandbox"], "none");
}

#[test]
fn a_freeze_does_not_cover_a_test_the_patch_rewrites() {
    // The patch writes the file that defines the frozen test (here: adds a
    // `tests/test_queue.py` whose `test_retry_window` fails for real): its
    // failure is the patch's, whatever the freeze says.
    let repo = flaky_repo();
    observe(
        repo.path(),
        &["flaky-passes", "flaky-fails"],
        "2026-12-10",
        "2026-11-30",
    )
    .assert_code(0);
    let base = commit_freeze(&repo);
    let body = repo.path().join("../rewrites-frozen.diff");
    std::fs::write(
        &body,
        "diff --git a/tests/test_queue.py b/tests/test_queue.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_queue.py\n@@ -0,0 +1,3 @@\n+class TestRetry:\n+    def test_retry_window(self):\n+        assert False\n",
    )
    .unwrap();
    run(
        repo.path(),
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
    check(&repo, "r", &base, "flaky-fails", "2026-12-01").assert_code(4);
    let p = outcome(&repo.properties("r"), "tests_pass").clone();
    assert_eq!(p["outcome"], "miss", "{p:#}");
    assert!(p["findings"][0].get("frozen").is_none(), "{p:#}");
    assert!(
        p["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("frozen, but counted: the patch changes `tests/test_queue.py`"),
        "{p:#}"
    );
}
