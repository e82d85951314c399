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

/// Completions and man pages come from the parser's own definition: every
/// subcommand and flag is in them, and `man` never overwrites a page.
#[test]
fn completions_and_man_pages_name_every_subcommand_and_never_overwrite() {
    let dir = tempdir();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(dir.path(), &["completions", shell]);
        out.assert_code(0);
        assert!(
            out.stdout.contains("capture") && out.stdout.contains("--git"),
            "{shell}: {}",
            out.stdout
        );
    }
    run(dir.path(), &["completions", "tcsh"]).assert_code(64);
    let pages = dir.path().join("man");
    run(dir.path(), &["man", "--out", pages.to_str().unwrap()]).assert_code(0);
    let check = std::fs::read_to_string(pages.join("agent-ledger-check.1")).unwrap();
    assert!(
        check.contains("test\\-cmd") || check.contains("test-cmd"),
        "{check}"
    );
    assert!(pages.join("agent-ledger.1").exists());
    assert!(pages.join("agent-ledger-flake-observe.1").exists());
    write(&pages.join("agent-ledger.1"), "mine\n");
    let again = run(dir.path(), &["man", "--out", pages.to_str().unwrap()]);
    again.assert_code(73);
    assert!(again.stderr.contains("agent-ledger.1"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(pages.join("agent-ledger.1")).unwrap(),
        "mine\n"
    );
}

/// A caller that asks for JSON gets one JSON document on stdout when the
/// command fails too: the exit status, its name and the message.
#[test]
fn errors_are_a_json_document_under_format_json() {
    let dir = tempdir();
    let missing = dir.path().join("nope.diff");
    let out = run(
        dir.path(),
        &[
            "--ledger",
            dir.path().join("l").to_str().unwrap(),
            "capture",
            "--run",
            "r",
            "--body",
            missing.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 66, "{}", out.stderr);
    let doc = out.json();
    assert_eq!(doc["schema"], 1);
    assert_eq!(doc["error"]["exit_code"], 66);
    assert_eq!(doc["error"]["kind"], "no_input");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope.diff"),
        "{doc}"
    );
    assert!(out.stderr.contains("nope.diff"), "{}", out.stderr);
    // A usage error clap finds, `--format=json` spelled as one argument.
    let out = run(dir.path(), &["report", "--format=json", "--no-such-flag"]);
    assert_eq!(out.code, 64, "{}", out.stderr);
    let doc = out.json();
    assert_eq!(doc["error"]["kind"], "usage");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--no-such-flag"),
        "{doc}"
    );
    // Without `--format json`, stdout stays empty.
    let out = run(dir.path(), &["report", "--no-such-flag"]);
    assert_eq!(out.code, 64);
    assert_eq!(out.stdout, "");
}

/// The test command's limits are one flag group shared by `check`,
/// `replay`, `verify` and `batch`; given where no test command runs, a
/// limit is a usage error naming it, not a limit silently unused.
#[test]
fn a_test_limit_without_a_test_command_is_a_usage_error() {
    let dir = tempdir();
    for args in [
        &[
            "check",
            "--run",
            "r",
            "--base",
            "HEAD",
            "--test-memory",
            "64",
        ][..],
        &[
            "replay",
            "--run",
            "r",
            "--base",
            "HEAD",
            "--allow-unsandboxed",
        ],
        &["verify", "--test-timeout", "5"],
    ] {
        let out = run(dir.path(), args);
        out.assert_code(64);
        let flag = args
            .iter()
            .find(|a| a.starts_with("--test-") || a.starts_with("--allow"))
            .unwrap();
        assert!(
            out.stderr.contains(flag)
                && (out.stderr.contains("--test-cmd") || out.stderr.contains("--rerun-tests")),
            "{args:?}: {}",
            out.stderr
        );
    }
    // `batch` takes the same flags, with the same defaults, for every
    // trial's test command.
    let out = run(dir.path(), &["batch", "--help"]);
    out.assert_code(0);
    for flag in [
        "--test-timeout",
        "--test-output-cap",
        "--test-memory",
        "--test-max-procs",
        "[default: 1800]",
    ] {
        assert!(out.stdout.contains(flag), "{flag}");
    }
}
