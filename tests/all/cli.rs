//! Usage errors and exit-code hygiene.

use crate::support::*;

#[test]
fn unknown_flag_is_a_usage_error_not_a_verdict() {
    // clap exits 2 on usage errors, which would read as `incomplete`.
    let dir = tempdir();
    let out = run(dir.path(), &["capture", "--no-such-flag"]);
    out.assert_code(64);
    assert!(out.stderr.contains("--no-such-flag"), "{}", out.stderr);
}

#[test]
fn no_subcommand_is_a_usage_error() {
    let dir = tempdir();
    run(dir.path(), &[]).assert_code(64);
}

#[test]
fn help_exits_zero() {
    let dir = tempdir();
    let out = run(dir.path(), &["--help"]);
    out.assert_code(0);
    assert!(out.stdout.contains("capture"));
}

#[test]
fn invalid_run_id_is_refused() {
    let dir = tempdir();
    let body = fixture("capture/complete-multifile.diff");
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "../escape",
            "--body",
            body.to_str().unwrap(),
        ],
    );
    out.assert_code(64);
    assert!(
        out.stderr.contains("invalid run id `../escape`"),
        "{}",
        out.stderr
    );
    assert!(!dir.path().join(".agent-ledger").exists());
}
