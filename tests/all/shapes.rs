//! Diff shapes git accepts (issue: capture is stricter than git): each
//! captures as complete and replays to `review`; the shapes git cannot apply
//! whole stay incomplete, with every reason listed.

use crate::support::*;
use std::path::Path;

/// Captures `fixtures/capture/shapes/NAME` as `run`, with extra flags;
/// returns the receipt printed as JSON and the exit code.
fn capture(dir: &Path, run_id: &str, name: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let body = fixture(&format!("capture/shapes/{name}"));
    let mut args = vec![
        "capture",
        "--run",
        run_id,
        "--body",
        body.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = run(dir, &args);
    (out.code, out.json())
}

fn codes(receipt: &serde_json::Value, field: &str) -> Vec<String> {
    receipt[field]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| r["code"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// (fixture, capture flags, strip level, envelope, notes).
type Shape = (
    &'static str,
    &'static [&'static str],
    u64,
    Option<&'static str>,
    &'static [&'static str],
);

const ACCEPTED: &[Shape] = &[
    ("reversed.diff", &[], 1, None, &[]),
    ("custom-prefix.diff", &[], 1, None, &[]),
    ("no-prefix.diff", &[], 0, None, &[]),
    ("format-patch.mbox", &[], 1, Some("mbox"), &[]),
    ("leading-blank.diff", &[], 1, None, &[]),
    ("leading-blank-crlf.diff", &[], 1, None, &[]),
    (
        "surplus-blank-context.diff",
        &[],
        1,
        None,
        &["surplus_blank_context", "surplus_blank_context"],
    ),
    // Two blank lines before a header lose nothing either (seen in real
    // agent output): noted once.
    (
        "surplus-two-blank.diff",
        &[],
        1,
        None,
        &["surplus_blank_context"],
    ),
    (
        "patch-tags.txt",
        &["--extract", "patch-tags"],
        1,
        Some("patch-tags"),
        &[],
    ),
    ("fence.md", &["--extract", "fence"], 1, Some("fence"), &[]),
];

#[test]
fn every_shape_git_accepts_captures_complete_and_replays_to_review() {
    for (name, flags, strip, envelope, notes) in ACCEPTED {
        let repo = DemoRepo::new();
        let (code, receipt) = capture(repo.path(), "r", name, flags);
        assert_eq!(code, 0, "{name}: {receipt:#}");
        assert_eq!(receipt["strip"], *strip, "{name}");
        assert_eq!(receipt["envelope"].as_str(), *envelope, "{name}");
        assert_eq!(codes(&receipt, "notes"), *notes, "{name}: {receipt:#}");
        // An unwrapped patch keeps the answer it came from beside it.
        assert_eq!(
            receipt["response"].is_object(),
            envelope.is_some(),
            "{name}: {receipt:#}"
        );
        let out = repo.check("r", &[]);
        assert_eq!(out.code, 0, "{name}: {}{}", out.stdout, out.stderr);
        let props = repo.properties("r");
        assert_eq!(outcome(&props, "patch_applies")["outcome"], "holds");
        assert_eq!(
            outcome(&props, "patch_applies")["inputs"]["strip"],
            strip.to_string(),
            "{name}"
        );
        // The ledger re-judges the receipt from its bytes.
        run(repo.path(), &["verify"]).assert_code(0);
    }
}

#[test]
fn a_diff_of_a_crlf_file_captures_and_replays() {
    let repo = DemoRepo::with(|root| write(&root.join("win.txt"), "one\r\ntwo\r\nthree\r\n"));
    let (code, receipt) = capture(repo.path(), "r", "crlf-content.diff", &[]);
    assert_eq!(code, 0, "{receipt:#}");
    repo.check("r", &[]).assert_code(0);
}

/// (fixture, capture flags, reason codes in order).
const REFUSED: &[(&str, &[&str], &[&str])] = &[
    ("surplus-change.diff", &[], &["hunk_count_mismatch"]),
    (
        "patch-tags-unclosed.txt",
        &["--extract", "patch-tags"],
        &["unterminated_envelope"],
    ),
    (
        "fence-unclosed.md",
        &["--extract", "fence"],
        &["unterminated_envelope"],
    ),
    (
        "fence.md",
        &["--extract", "patch-tags"],
        &["missing_envelope"],
    ),
    // Without --extract a wrapped answer stays incomplete.
    ("patch-tags.txt", &[], &["chat_preamble", "trailing_text"]),
    ("fence.md", &[], &["chat_preamble"]),
    // A preamble no longer hides what follows it.
    (
        "preamble-and-binary.txt",
        &[],
        &["chat_preamble", "binary_without_data"],
    ),
];

#[test]
fn shapes_git_cannot_apply_whole_stay_incomplete_with_every_reason() {
    for (i, (name, flags, expected)) in REFUSED.iter().enumerate() {
        let dir = tempdir();
        let run_id = format!("r{i}");
        let (code, receipt) = capture(dir.path(), &run_id, name, flags);
        assert_eq!(code, 2, "{name} {flags:?}: {receipt:#}");
        assert_eq!(
            codes(&receipt, "reasons"),
            *expected,
            "{name} {flags:?}: {receipt:#}"
        );
        assert_eq!(receipt["verdict"], "incomplete");
        // The body is kept whole, cut or not.
        assert!(
            receipt["body"]["bytes"].as_u64().unwrap() > 0 || receipt["response"].is_object(),
            "{name}"
        );
    }
}

#[test]
fn an_unclosed_envelope_keeps_the_partial_patch_and_the_answer() {
    let dir = tempdir();
    let (code, receipt) = capture(
        dir.path(),
        "r",
        "patch-tags-unclosed.txt",
        &["--extract", "patch-tags"],
    );
    assert_eq!(code, 2);
    let t = dir.path().join(".agent-ledger/transcripts");
    let good = std::fs::read(fixture("patches/good.diff")).unwrap();
    assert_eq!(std::fs::read(t.join("r.patch")).unwrap(), good);
    assert_eq!(
        std::fs::read(t.join("r.response")).unwrap(),
        std::fs::read(fixture("capture/shapes/patch-tags-unclosed.txt")).unwrap()
    );
    assert_eq!(receipt["extract"], "patch-tags");
}

#[test]
fn a_blank_line_preamble_is_never_called_text() {
    let dir = tempdir();
    let good = std::fs::read_to_string(fixture("patches/good.diff")).unwrap();
    let body = dir.path().join("body.txt");
    write(&body, format!("\n\nSure, here it is:\n\n{good}"));
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "r",
            "--body",
            body.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    out.assert_code(2);
    let reason = &out.json()["reasons"][0];
    assert_eq!(reason["code"], "chat_preamble");
    assert_eq!(
        reason["message"],
        "1 line(s) of text (and 1 blank line(s)) precede the first file header"
    );
}

/// A `--no-prefix` diff names `.git/config` whole: judged at the level it
/// is applied with, it is refused before git sees it.
#[test]
fn the_strip_level_decides_which_path_is_judged() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let body = scratch.path().join("p0.diff");
    write(
        &body,
        "diff --git .git/config .git/config\n--- .git/config\n+++ .git/config\n@@ -1 +1,2 @@\n [core]\n+\tfsmonitor = evil\n",
    );
    run(
        repo.path(),
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
    let before = repo.digest();
    repo.check("r", &[]).assert_code(4);
    let miss = outcome(&repo.properties("r"), "patch_applies").clone();
    assert_eq!(miss["outcome"], "miss");
    assert!(
        miss["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == ".git/config"),
        "{miss:#}"
    );
    assert_eq!(repo.digest(), before);
}

#[test]
fn mixed_strip_levels_are_refused() {
    let dir = tempdir();
    let body = dir.path().join("mixed.diff");
    write(
        &body,
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\
         diff --git y y\n--- y\n+++ y\n@@ -1 +1 @@\n-a\n+b\n",
    );
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "r",
            "--body",
            body.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    out.assert_code(2);
    assert_eq!(out.json()["reasons"][0]["code"], "malformed_file_header");
}

#[test]
fn a_receipt_whose_strip_level_was_edited_fails_verify() {
    let repo = DemoRepo::new();
    let (code, _) = capture(repo.path(), "r", "no-prefix.diff", &[]);
    assert_eq!(code, 0);
    let path = repo.path().join(".agent-ledger/transcripts/r.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"strip\": 0"), "{text}");
    std::fs::write(&path, text.replace("\"strip\": 0", "\"strip\": 1")).unwrap();
    let out = run(repo.path(), &["verify"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("strip") || out.stdout.contains("strip"),
        "{}{}",
        out.stdout,
        out.stderr
    );
}
