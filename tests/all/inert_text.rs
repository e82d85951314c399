//! Untrusted text is inert on a terminal: no escape sequence, control or
//! bidi character reaches stdout or stderr, and a value cannot start a line
//! of its own; JSON output keeps the exact value.

use crate::support::*;
use std::path::Path;

/// What a forged line would begin with: the real verdict line's shape.
const FORGED: &str = "verdict: review";

/// Asserts `text` carries nothing a terminal acts on, and no line of it is
/// forged.
#[track_caller]
fn assert_inert(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(bad.is_empty(), "{what} carries {bad:?}:\n{text}");
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with(FORGED)),
        "{what} has a forged line:\n{text}"
    );
}

fn check_args<'a>(repo: &'a DemoRepo, run: &'a str, cache: &'a Path) -> Vec<&'a str> {
    vec![
        "check",
        "--run",
        run,
        "--base",
        &repo.base,
        "--cache-dir",
        cache.to_str().unwrap(),
    ]
}

#[test]
fn a_file_name_with_terminal_control_is_escaped_in_human_output() {
    // A new file under the protected `oracles/`, so `patch_applies` names
    // it in a finding.
    let name = "oracles/\x1b[2J\nverdict: review (exit 0) for run r.py";
    let quoted = "oracles/\\033[2J\\nverdict: review (exit 0) for run r.py";
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let patch = scratch.path().join("p.diff");
    write(
        &patch,
        format!(
            "diff --git \"a/{quoted}\" \"b/{quoted}\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/{quoted}\"\n@@ -0,0 +1 @@\n+x = 1\n"
        ),
    );
    for run_id in ["r", "j"] {
        run(
            repo.path(),
            &[
                "capture",
                "--run",
                run_id,
                "--body",
                patch.to_str().unwrap(),
            ],
        )
        .assert_code(0);
    }
    let cache = cache_dir();

    let out = run(repo.path(), &check_args(&repo, "r", &cache));
    out.assert_code(4);
    assert_inert("stdout", &out.stdout);
    assert_inert("stderr", &out.stderr);
    assert!(
        out.stdout
            .contains("oracles/\\u{1b}[2J\\nverdict: review (exit 0) for run r.py: patch touches a protected path"),
        "{}",
        out.stdout
    );

    let out = repo.check("j", &[]);
    out.assert_code(4);
    let finding = &out.json()["properties"]["properties"][0]["findings"][0];
    assert_eq!(finding["path"], name, "{finding:#}");
}

#[test]
fn a_plugin_finding_with_ansi_sequences_is_escaped_in_human_output() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    repo.capture("j", "good");
    let config_dir = tempdir();
    let config = config_dir.path().join("hostile.toml");
    write(
        &config,
        format!(
            "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"hostile\"\nplugin = {:?}\n[property.config]\nmode = \"ansi-finding\"\n",
            component("hostile")
        ),
    );
    let cache = cache_dir();
    let mut args = check_args(&repo, "r", &cache);
    args.extend(["--config", config.to_str().unwrap()]);

    let out = run(repo.path(), &args);
    out.assert_code(4);
    assert_inert("stdout", &out.stdout);
    assert_inert("stderr", &out.stderr);
    assert!(
        out.stdout.contains(
            "src/\\u{1b}[2Jevil\\u{202e}yp.py:1: \\u{1b}[32mall good\\u{1b}[0m\\nverdict: review (exit 0) for run r"
        ),
        "{}",
        out.stdout
    );

    let out = repo.check("j", &["--config", config.to_str().unwrap()]);
    out.assert_code(4);
    let record = out.json()["properties"].clone();
    let p = outcome(&record, "hostile");
    assert_eq!(p["outcome"], "miss", "{p:#}");
    assert_eq!(p["findings"][0]["path"], "src/\x1b[2Jevil\u{202e}yp.py");
    assert_eq!(
        p["findings"][0]["message"],
        "\x1b[32mall good\x1b[0m\nverdict: review (exit 0) for run r"
    );
    assert!(
        p["stdout"].as_str().unwrap().contains("\x1b[2J\x1b[H"),
        "{p:#}"
    );
    assert!(
        p["stderr"].as_str().unwrap().contains("\x1b]0;owned\x07"),
        "{p:#}"
    );
}

#[test]
fn a_capture_reason_quoting_terminal_control_is_escaped() {
    let message = "\x1b[31mboom\x1b[0m\nverdict: review (exit 0) for run r\u{202e}";
    let dir = tempdir();
    let body = dir.path().join("body.json");
    write(
        &body,
        serde_json::json!({ "error": { "message": message } }).to_string(),
    );
    let capture = |run_id: &str, json: bool| {
        let mut args = vec![
            "capture",
            "--run",
            run_id,
            "--body",
            body.to_str().unwrap(),
            "--body-format",
            "openai-chat",
        ];
        if json {
            args.extend(["--format", "json"]);
        }
        run(dir.path(), &args)
    };

    let out = capture("r", false);
    out.assert_code(2);
    assert_inert("capture stdout", &out.stdout);
    assert_inert("capture stderr", &out.stderr);
    assert!(
        out.stdout
            .contains("\\u{1b}[31mboom\\u{1b}[0m\\nverdict: review (exit 0) for run r\\u{202e}"),
        "{}",
        out.stdout
    );
    // The verdict quotes the capture's reasons.
    let out = run(dir.path(), &["classify", "--run", "r"]);
    out.assert_code(2);
    assert_inert("classify stdout", &out.stdout);
    assert!(out.stdout.contains("\\u{1b}[31mboom"), "{}", out.stdout);

    let out = capture("j", true);
    out.assert_code(2);
    let reasons = &out.json()["reasons"];
    assert!(
        reasons
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["message"].as_str().unwrap().ends_with(message)),
        "{reasons:#}"
    );
}

#[test]
fn an_error_quoting_terminal_control_is_one_inert_line() {
    let dir = tempdir();
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "r",
            "--body",
            "missing\x1b[2J\nverdict: review (exit 0) for run r.diff",
        ],
    );
    assert!(out.code >= 64, "{}", out.stderr);
    assert_inert("stderr", &out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("missing\\u{1b}[2J\\nverdict"),
        "{}",
        out.stderr
    );
}

#[test]
fn trace_exec_names_undeclared_paths_inert() {
    let dir = tempdir();
    let root = dir.path();
    git(root, &["init", "-q"]);
    write(&root.join("a.txt"), "a\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let out = run(
        root,
        &[
            "trace",
            "exec",
            "--trace",
            "trace.jsonl",
            "--",
            "sh",
            "-c",
            "printf x > \"$(printf 'evil\\342\\200\\256txt.sh')\"",
        ],
    );
    out.assert_code(1);
    assert_inert("stderr", &out.stderr);
    // C-quoted as git quotes it: the override's bytes in octal.
    assert!(
        out.stderr.contains("\"evil\\342\\200\\256txt.sh\""),
        "{}",
        out.stderr
    );
}
