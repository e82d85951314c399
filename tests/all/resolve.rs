//! `--repo`, `--config` and `--ledger` mean the same thing to every command,
//! and every exit code keeps its own meaning.

use crate::support::*;
use std::path::Path;

/// A demo repository whose configuration names `records` as the ledger.
fn repo_with_ledger(ledger: &str) -> DemoRepo {
    DemoRepo::with(|root| {
        let path = root.join("agent-ledger.toml");
        let text = std::fs::read_to_string(&path).unwrap().replace(
            "ledger = \".agent-ledger\"",
            &format!("ledger = \"{ledger}\""),
        );
        std::fs::write(&path, text).unwrap();
    })
}

fn trace_exec(dir: &Path, trace: &Path, script: &str, writes: &[&str]) -> Output {
    let mut args = vec!["trace", "exec", "--trace", trace.to_str().unwrap()];
    for w in writes {
        args.extend(["--writes", w]);
    }
    args.extend(["--", "sh", "-c", script]);
    run(dir, &args)
}

#[test]
fn a_traced_command_exiting_4_is_not_a_reject() {
    // The child's own status must never pass for a verdict code.
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("exec-trace.jsonl");
    let out = trace_exec(repo.path(), &trace, "exit 4", &[]);
    out.assert_code(6);
    assert!(out.stderr.contains("exits 6"), "{}", out.stderr);
    let out = trace_exec(repo.path(), &trace, "exit 0", &[]);
    out.assert_code(0);
}

#[test]
fn a_traced_command_killed_by_a_signal_is_a_failed_command() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("exec-trace.jsonl");
    trace_exec(repo.path(), &trace, "kill -9 $$", &[]).assert_code(6);
}

#[test]
fn an_undeclared_change_outranks_a_failed_command() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("exec-trace.jsonl");
    let out = trace_exec(repo.path(), &trace, "echo x > stray.txt; exit 4", &[]);
    out.assert_code(1);
    assert!(out.stderr.contains("stray.txt"), "{}", out.stderr);
}

#[test]
fn trace_exec_json_keeps_the_commands_status_apart() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("exec-trace.jsonl");
    let out = run(
        repo.path(),
        &[
            "trace",
            "exec",
            "--trace",
            trace.to_str().unwrap(),
            "--format",
            "json",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
    );
    out.assert_code(6);
    let json = out.json();
    assert_eq!(json["command_exit_code"], 3);
    assert_eq!(json["exit_code"], 6);
}

#[test]
fn reconcile_honours_the_configured_ledger() {
    let repo = repo_with_ledger("records");
    let scratch = tempdir();
    let trace = scratch.path().join("t.jsonl");
    write(&trace, "");
    // Records the operator keeps in the configured ledger are not changes.
    write(&repo.path().join("records/transcripts/r.json"), "{}");
    let out = run(
        repo.path(),
        &["reconcile", "--trace", trace.to_str().unwrap()],
    );
    out.assert_code(0);
    // `.agent-ledger` is an ordinary directory here: a write there is a ghost.
    write(&repo.path().join(".agent-ledger/x"), "x");
    let out = run(
        repo.path(),
        &["reconcile", "--trace", trace.to_str().unwrap()],
    );
    out.assert_code(1);
    assert!(out.stdout.contains(".agent-ledger/x"), "{}", out.stdout);
}

#[test]
fn an_agent_cannot_hide_a_ghost_by_moving_the_ledger_in_the_working_tree() {
    // The working tree is the agent's: its agent-ledger.toml is never read
    // by reconcile, so pointing `ledger` at `src` hides nothing.
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("t.jsonl");
    write(&trace, "");
    let config = repo.path().join("agent-ledger.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("ledger = \".agent-ledger\"", "ledger = \"src\"");
    std::fs::write(&config, text).unwrap();
    write(&repo.path().join("src/evil.py"), "import os\n");
    let out = run(
        repo.path(),
        &[
            "reconcile",
            "--trace",
            trace.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    out.assert_code(1);
    let ghosts = out.json()["report"]["ghosts"].clone();
    let ghosts: Vec<&str> = ghosts
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(ghosts.contains(&"src/evil.py"), "{ghosts:?}");
    assert!(ghosts.contains(&"agent-ledger.toml"), "{ghosts:?}");
}

#[test]
fn reconcile_refuses_a_config_file_inside_the_repository() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("t.jsonl");
    let out = run(
        repo.path(),
        &[
            "reconcile",
            "--trace",
            trace.to_str().unwrap(),
            "--config",
            "agent-ledger.toml",
        ],
    );
    out.assert_code(64);
    assert!(
        out.stderr.contains("inside the repository"),
        "{}",
        out.stderr
    );
}

#[test]
fn lock_without_roots_locks_the_configured_fixture_roots() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let out = run(repo.path(), &["lock", "--run", "r", "--format", "json"]);
    out.assert_code(0);
    let lock: serde_json::Value = serde_json::from_slice(
        &std::fs::read(repo.path().join(".agent-ledger/fixtures/r.lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(lock["roots"], serde_json::json!(["tests/fixtures"]));
    assert!(lock["count"].as_u64().unwrap() > 0);
}

#[test]
fn lock_without_roots_anywhere_is_a_usage_error_naming_the_configuration() {
    let dir = tempdir();
    capture_complete(dir.path(), "r");
    let out = run(dir.path(), &["lock", "--run", "r"]);
    out.assert_code(64);
    assert!(out.stderr.contains("[fixtures].roots"), "{}", out.stderr);
    assert!(
        !dir.path()
            .join(".agent-ledger/fixtures/r.lock.json")
            .exists()
    );
}

#[test]
fn capture_from_a_subdirectory_writes_to_the_repositorys_ledger() {
    // Before, capture wrote `.agent-ledger` under the current directory, so
    // `check` (which reads the repository's) found no transcript.
    let repo = DemoRepo::new();
    let body = fixture("patches/good.diff");
    run(
        &repo.path().join("src"),
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
    assert!(
        repo.path()
            .join(".agent-ledger/transcripts/r.json")
            .exists()
    );
    assert!(!repo.path().join("src/.agent-ledger").exists());
    repo.check("r", &[]).assert_code(0);
}

#[test]
fn capture_and_verify_honour_the_configured_ledger() {
    let repo = repo_with_ledger("records");
    repo.capture("r", "good");
    assert!(repo.path().join("records/transcripts/r.json").exists());
    repo.check("r", &[]).assert_code(0);
    let out = run(repo.path(), &["verify"]);
    out.assert_code(0);
    assert!(out.stdout.contains("ok      r"), "{}", out.stdout);
}

#[test]
fn body_format_has_its_own_flag_and_the_old_spelling_warns() {
    let dir = tempdir();
    let body = fixture("capture/openai-sse.txt");
    let body = body.to_str().unwrap();
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "a",
            "--body",
            body,
            "--body-format",
            "openai-sse",
            "--format",
            "json",
        ],
    );
    out.assert_code(0);
    assert_eq!(out.json()["format"], "openai-sse");
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "b",
            "--body",
            body,
            "--format",
            "openai-sse",
        ],
    );
    out.assert_code(0);
    assert!(
        out.stderr.contains("use `--body-format openai-sse`"),
        "{}",
        out.stderr
    );
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "c",
            "--body",
            body,
            "--body-format",
            "openai-sse",
            "--format",
            "anthropic",
        ],
    );
    out.assert_code(64);
    assert!(!dir.path().join(".agent-ledger/transcripts/c.json").exists());
}

#[test]
fn a_fifo_nobody_writes_as_body_is_refused_at_once() {
    let dir = tempdir();
    let fifo = dir.path().join("body.diff");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let (root, body) = (dir.path().to_path_buf(), fifo.clone());
    std::thread::spawn(move || {
        let out = run(
            &root,
            &["capture", "--run", "r", "--body", body.to_str().unwrap()],
        );
        let _ = tx.send(out);
    });
    let out = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("capture waited for a writer on the FIFO");
    out.assert_code(65);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

#[test]
fn a_device_as_body_is_refused_not_read() {
    let dir = tempdir();
    let out = run(
        dir.path(),
        &["capture", "--run", "r", "--body", "/dev/zero"],
    );
    out.assert_code(65);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    assert!(!dir.path().join(".agent-ledger").exists());
}

#[test]
fn ledger_on_a_command_that_keeps_no_records_is_a_usage_error() {
    let dir = tempdir();
    let out = run(
        dir.path(),
        &[
            "--ledger", "x", "keygen", "--secret", "k.secret", "--public", "k.public",
        ],
    );
    out.assert_code(64);
    assert!(
        out.stderr.contains("`--ledger` has no effect"),
        "{}",
        out.stderr
    );
    assert!(!dir.path().join("k.secret").exists());
    let out = run(
        dir.path(),
        &[
            "trace", "delete", "x", "--trace", "t.jsonl", "--ledger", "x",
        ],
    );
    out.assert_code(64);
    assert!(!dir.path().join("t.jsonl").exists());
}

#[test]
fn flake_commands_read_the_configuration_given_with_config() {
    let repo = DemoRepo::new();
    let elsewhere = tempdir();
    let config = elsewhere.path().join("ledger.toml");
    std::fs::write(
        &config,
        "schema = 1\n[flakes]\nfile = \"quarantine.toml\"\nmax_days = 30\n",
    )
    .unwrap();
    write(
        &repo.path().join("quarantine.toml"),
        "schema = 1\n[[flake]]\ntest = \"t::x\"\nrevision = \"abc\"\nreason = \"r\"\nexpires = \"2030-01-01\"\nobserved_at = \"2026-01-01T00:00:00Z\"\nreports = []\n",
    );
    let out = run(
        repo.path(),
        &[
            "flake",
            "list",
            "--config",
            config.to_str().unwrap(),
            "--now",
            "2026-06-01",
        ],
    );
    out.assert_code(0);
    assert!(out.stdout.contains("active   t::x"), "{}", out.stdout);
    // Without --config, the working tree's configuration names flakes.toml.
    let out = run(repo.path(), &["flake", "list", "--now", "2026-06-01"]);
    out.assert_code(0);
    assert!(out.stdout.contains("no flake freezes"), "{}", out.stdout);
}

#[test]
fn a_broken_configuration_fails_capture_unless_the_ledger_is_given() {
    let dir = tempdir();
    write(
        &dir.path().join("agent-ledger.toml"),
        "schema = 1\nledgr = \"x\"\n",
    );
    let body = fixture("capture/complete-multifile.diff");
    let body = body.to_str().unwrap();
    let out = run(dir.path(), &["capture", "--run", "r", "--body", body]);
    out.assert_code(65);
    assert!(
        out.stderr.contains("agent-ledger.toml") && out.stderr.contains("ledgr"),
        "{}",
        out.stderr
    );
    // `--ledger` says where records go: the configuration is not needed.
    let out = run(
        dir.path(),
        &[
            "capture", "--run", "r", "--body", body, "--ledger", "records",
        ],
    );
    out.assert_code(0);
    assert!(dir.path().join("records/transcripts/r.json").exists());
}
