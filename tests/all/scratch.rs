//! Temporary trees of killed runs are swept; temp files in the ledger are
//! never records.

use crate::support::*;

#[test]
fn a_killed_checks_trial_directory_is_removed_by_the_next_run() {
    let tmp = plain_tempdir();
    // What a `check` killed with SIGKILL leaves: its tree and an unlocked
    // lock file (the kernel released the lock with the process).
    let stale = tmp.path().join("agent-ledger-trial-killed");
    write(&stale.join("patched/src/retry.py"), "x");
    write(&stale.join("owner.lock"), "");
    // A live run's directory: its lock is held.
    let live = tmp.path().join("agent-ledger-trial-live");
    write(&live.join("owner.lock"), "");
    let held = std::fs::File::open(live.join("owner.lock")).unwrap();
    held.lock().unwrap();
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let cache = cache_dir();
    let out = command(repo.path())
        .args(["check", "--run", "r", "--base", &repo.base])
        .args(["--cache-dir", cache.to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stale.exists(), "the killed run's tree is still there");
    assert!(live.exists(), "a live run's tree was removed");
    // The check cleaned up after itself too.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["agent-ledger-trial-live".to_string()]);
}

#[test]
fn a_leftover_temp_file_in_the_ledger_is_never_read_as_a_record() {
    let dir = tempdir();
    capture_complete(dir.path(), "r");
    let transcripts = dir.path().join(".agent-ledger/transcripts");
    // A writer killed before its rename leaves `.tmp-*` beside the records.
    std::fs::copy(transcripts.join("r.json"), transcripts.join(".tmp-x.json")).unwrap();
    std::fs::remove_file(transcripts.join("r.json")).unwrap();
    let out = run(dir.path(), &["classify", "--run", "r"]);
    out.assert_code(2);
    assert!(out.stdout.contains("transcript_missing"), "{}", out.stdout);
    let out = run(dir.path(), &["verify", "--format", "json"]);
    let runs: Vec<String> = out.json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect();
    assert!(!runs.iter().any(|r| r.contains("tmp")), "{runs:?}");
}

// As root, a killed check's scratch directory had been given to the
// sandbox's user, and the next run's sweep (which judges only its own
// user's directories) kept it.
#[test]
fn a_check_killed_while_its_test_command_runs_leaves_nothing_the_next_run_keeps() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = plain_tempdir();
    // As /tmp is: as root, the sandbox's user makes its runtime directory
    // there.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    repo.capture("s", "good");
    let cache = cache_dir();
    let check = |run: &str, cmd: &str| {
        let mut c = command(repo.path());
        c.args(["check", "--run", run, "--base", &repo.base])
            .args(["--cache-dir", cache.to_str().unwrap()])
            .args(["--test-cmd", cmd, "--no-test-baseline"])
            .env("TMPDIR", tmp.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    };
    let mut killed = check("r", "sleep 60").spawn().unwrap();
    // Until its test command runs (the scratch directory holds its copy).
    let started = std::time::Instant::now();
    while !std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .any(|e| e.path().join("report").exists())
    {
        assert!(
            started.elapsed().as_secs() < 60,
            "the test command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    killed.kill().unwrap();
    killed.wait().unwrap();
    let out = check("s", "true").output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("agent-ledger-trial-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

// Issue 39's eleventh class: a test command that nests directories deeper
// than the descriptor limit left its scratch tree behind for good (the
// removal held a descriptor per level, and so did the next run's sweep);
// a batch of such trials fills the disk.
#[test]
fn a_tree_nested_past_the_descriptor_limit_by_the_test_command_is_removed() {
    let tmp = plain_tempdir();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    }
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let cache = cache_dir();
    // 1500 levels, each entered before the next is made (one path would
    // pass PATH_MAX).
    let nest = "python3 -c \"import os\nfor _ in range(1500):\n    os.mkdir('n'); os.chdir('n')\nopen('f', 'w').write('x')\nprint('nested', flush=True)\"; true";
    let out = agent_ledger_with_1024_descriptors()
        .args([
            "check", "--run", "r", "--base", &repo.base, "--format", "json",
        ])
        .args(["--cache-dir", cache.to_str().unwrap()])
        .args([
            "--test-cmd",
            nest,
            "--no-test-baseline",
            "--show-test-output",
        ])
        .current_dir(repo.path())
        .env("TMPDIR", tmp.path())
        .env("AGENT_LEDGER_RUNS_DIR", runs_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // No report: not review; what matters is what is left.
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("agent-ledger-"))
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("test | nested"),
        "the tree was not made: {stderr}"
    );
    assert!(left.is_empty(), "left behind: {left:?}");
}
