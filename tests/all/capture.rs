//! `capture`: every incomplete reason, every provider format, no-clobber.

use crate::support::*;
use agent_ledger::diff;
use proptest::prelude::*;

/// (fixture, --format, exit code, reason code) for every shipped body.
const CASES: &[(&str, &str, i32, Option<&str>)] = &[
    ("complete-multifile.diff", "raw", 0, None),
    ("binary-complete.diff", "raw", 0, None),
    ("new-empty-file.diff", "raw", 0, None),
    ("mode-change.diff", "raw", 0, None),
    ("empty.diff", "raw", 2, Some("empty_body")),
    ("whitespace-only.diff", "raw", 2, Some("empty_body")),
    ("prose.txt", "raw", 2, Some("not_a_diff")),
    ("json-error-payload.json", "raw", 2, Some("json_payload")),
    ("markdown-fenced.md", "raw", 2, Some("markdown_fenced")),
    ("chat-preamble.txt", "raw", 2, Some("chat_preamble")),
    ("trailing-text.diff", "raw", 2, Some("trailing_text")),
    ("truncated-hunk.diff", "raw", 2, Some("hunk_truncated")),
    (
        "unterminated-line.diff",
        "raw",
        2,
        Some("unterminated_line"),
    ),
    (
        "hunk-count-mismatch.diff",
        "raw",
        2,
        Some("hunk_count_mismatch"),
    ),
    (
        "malformed-hunk-header.diff",
        "raw",
        2,
        Some("malformed_hunk_header"),
    ),
    (
        "malformed-file-header.diff",
        "raw",
        2,
        Some("malformed_file_header"),
    ),
    (
        "empty-file-section.diff",
        "raw",
        2,
        Some("empty_file_section"),
    ),
    (
        "binary-without-data.diff",
        "raw",
        2,
        Some("binary_without_data"),
    ),
    ("binary-truncated.diff", "raw", 2, Some("binary_truncated")),
    // A small literal declaring 300 MiB: refused before anything is
    // inflated, written or hashed.
    ("binary-too-large.diff", "raw", 2, Some("binary_too_large")),
    ("openai-chat.json", "openai-chat", 0, None),
    (
        "openai-chat-length.json",
        "openai-chat",
        2,
        Some("provider_truncated"),
    ),
    ("openai-sse.txt", "openai-sse", 0, None),
    (
        "openai-sse-no-done.txt",
        "openai-sse",
        2,
        Some("provider_truncated"),
    ),
    (
        "openai-sse-error.txt",
        "openai-sse",
        2,
        Some("provider_error"),
    ),
    ("openai-responses.json", "openai-responses", 0, None),
    (
        "openai-responses-incomplete.json",
        "openai-responses",
        2,
        Some("provider_truncated"),
    ),
    ("anthropic.json", "anthropic", 0, None),
    (
        "anthropic-max-tokens.json",
        "anthropic",
        2,
        Some("provider_truncated"),
    ),
    (
        "anthropic-error.json",
        "anthropic",
        2,
        Some("provider_error"),
    ),
    ("anthropic-sse.txt", "anthropic-sse", 0, None),
    (
        "anthropic-sse-no-stop.txt",
        "anthropic-sse",
        2,
        Some("provider_truncated"),
    ),
    (
        "anthropic-sse-error.txt",
        "anthropic-sse",
        2,
        Some("provider_error"),
    ),
];

#[test]
fn every_shipped_body_gets_its_verdict_and_reason() {
    let dir = tempdir();
    for (i, (name, format, code, reason)) in CASES.iter().enumerate() {
        let run_id = format!("run-{i:03}");
        let body = fixture(&format!("capture/{name}"));
        let out = run(
            dir.path(),
            &[
                "capture",
                "--run",
                &run_id,
                "--body",
                body.to_str().unwrap(),
                "--format",
                format,
                "--format",
                "json",
            ],
        );
        assert_eq!(out.code, *code, "{name}: {}{}", out.stdout, out.stderr);
        let receipt = out.json();
        let on_disk: serde_json::Value = serde_json::from_slice(
            &std::fs::read(
                dir.path()
                    .join(format!(".agent-ledger/transcripts/{run_id}.json")),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            receipt, on_disk,
            "{name}: printed receipt differs from the stored one"
        );
        assert_eq!(on_disk["complete"], *code == 0, "{name}");
        assert_eq!(
            on_disk["verdict"],
            if *code == 0 { "captured" } else { "incomplete" },
            "{name}"
        );
        assert_eq!(on_disk["format"], *format, "{name}");
        let codes: Vec<&str> = on_disk["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["code"].as_str().unwrap())
            .collect();
        match reason {
            None => assert!(codes.is_empty(), "{name}: {codes:?}"),
            Some(r) => assert!(codes.contains(r), "{name}: expected {r} in {codes:?}"),
        }
        for r in on_disk["reasons"].as_array().unwrap() {
            assert!(
                !r["message"].as_str().unwrap().is_empty(),
                "{name}: reason without a sentence"
            );
        }
        // The stored patch is what the receipt's digest says.
        let patch = std::fs::read(
            dir.path()
                .join(format!(".agent-ledger/transcripts/{run_id}.patch")),
        )
        .unwrap();
        assert_eq!(on_disk["body"]["bytes"], patch.len() as u64);
        assert_eq!(
            on_disk["body"]["sha256"],
            agent_ledger::digest::sha256_hex(&patch)
        );
    }
}

#[test]
fn provider_formats_store_the_response_and_extract_the_same_patch() {
    let dir = tempdir();
    let raw = std::fs::read(fixture("capture/complete-multifile.diff")).unwrap();
    for (run_id, name, format) in [
        ("a", "openai-chat.json", "openai-chat"),
        ("b", "openai-sse.txt", "openai-sse"),
        ("c", "openai-responses.json", "openai-responses"),
        ("d", "anthropic.json", "anthropic"),
        ("e", "anthropic-sse.txt", "anthropic-sse"),
    ] {
        let body = fixture(&format!("capture/{name}"));
        run(
            dir.path(),
            &[
                "capture",
                "--run",
                run_id,
                "--body",
                body.to_str().unwrap(),
                "--format",
                format,
            ],
        )
        .assert_code(0);
        let patch = std::fs::read(
            dir.path()
                .join(format!(".agent-ledger/transcripts/{run_id}.patch")),
        )
        .unwrap();
        assert_eq!(patch, raw, "{name}");
        let response = std::fs::read(
            dir.path()
                .join(format!(".agent-ledger/transcripts/{run_id}.response")),
        )
        .unwrap();
        assert_eq!(response, std::fs::read(&body).unwrap(), "{name}");
    }
}

#[test]
fn declared_length_must_match_received_bytes() {
    let dir = tempdir();
    let body = fixture("capture/complete-multifile.diff");
    let len = std::fs::metadata(&body).unwrap().len();
    let b = body.to_str().unwrap();
    let ok = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "ok",
            "--body",
            b,
            "--declared-bytes",
            &len.to_string(),
            "--request-id",
            "req_123",
            "--format",
            "json",
        ],
    );
    ok.assert_code(0);
    assert_eq!(ok.json()["declared_bytes"], len);
    assert_eq!(ok.json()["request_id"], "req_123");
    let short = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "short",
            "--body",
            b,
            "--declared-bytes",
            &(len + 10).to_string(),
            "--format",
            "json",
        ],
    );
    short.assert_code(2);
    assert_eq!(short.json()["reasons"][0]["code"], "length_mismatch");
}

#[test]
fn body_from_stdin() {
    let dir = tempdir();
    let bytes = std::fs::read(fixture("capture/complete-multifile.diff")).unwrap();
    run_with_stdin(
        dir.path(),
        &["capture", "--run", "s", "--body", "-"],
        Some(&bytes),
    )
    .assert_code(0);
    run_with_stdin(
        dir.path(),
        &["capture", "--run", "t", "--body", "-"],
        Some(b""),
    )
    .assert_code(2);
}

#[test]
fn a_run_id_is_never_captured_twice() {
    let dir = tempdir();
    capture_complete(dir.path(), "run-001");
    let receipt = dir.path().join(".agent-ledger/transcripts/run-001.json");
    let before = std::fs::read(&receipt).unwrap();
    let bad = fixture("capture/empty.diff");
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "run-001",
            "--body",
            bad.to_str().unwrap(),
        ],
    );
    out.assert_code(73);
    assert!(
        out.stderr.contains("a retry is a new run id"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(&receipt).unwrap(),
        before,
        "the receipt was rewritten"
    );
    // Records are ordinary readable files, not the 0600 of a temp file.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&receipt).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}

#[test]
fn missing_body_file_names_it() {
    let dir = tempdir();
    let out = run(
        dir.path(),
        &["capture", "--run", "x", "--body", "nope.diff"],
    );
    out.assert_code(66);
    assert!(out.stderr.contains("`nope.diff`"), "{}", out.stderr);
}

#[test]
fn bad_format_value_is_a_usage_error() {
    let dir = tempdir();
    let body = fixture("capture/complete-multifile.diff");
    let out = run(
        dir.path(),
        &[
            "capture",
            "--run",
            "x",
            "--body",
            body.to_str().unwrap(),
            "--format",
            "gemini",
        ],
    );
    out.assert_code(64);
    assert!(out.stderr.contains("`gemini`"), "{}", out.stderr);
}

/// A synthetic multi-file diff and the byte range of every hunk in it.
fn build_diff(files: &[Vec<Vec<(u8, String)>>]) -> (String, Vec<(usize, usize)>) {
    let mut text = String::new();
    let mut hunks = Vec::new();
    for (i, file) in files.iter().enumerate() {
        text.push_str(&format!(
            "diff --git a/src/f{i}.txt b/src/f{i}.txt\nindex 1111111..2222222 100644\n--- a/src/f{i}.txt\n+++ b/src/f{i}.txt\n"
        ));
        let mut line_no = 1;
        for hunk in file {
            let old = hunk.iter().filter(|(k, _)| *k != b'+').count();
            let new = hunk.iter().filter(|(k, _)| *k != b'-').count();
            let start = text.len();
            text.push_str(&format!("@@ -{line_no},{old} +{line_no},{new} @@\n"));
            for (kind, content) in hunk {
                text.push(*kind as char);
                text.push_str(content);
                text.push('\n');
            }
            hunks.push((start, text.len()));
            line_no += old + 10;
        }
    }
    (text, hunks)
}

fn hunk_strategy() -> impl Strategy<Value = Vec<(u8, String)>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![b' ', b'-', b'+']),
            "[a-z][a-z (){};=]{0,24}",
        ),
        1..8,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    // A valid multi-file diff cut at any byte strictly inside any hunk is
    // always incomplete, with no declared length to help.
    #[test]
    fn a_diff_cut_inside_a_hunk_is_always_incomplete(
        files in prop::collection::vec(prop::collection::vec(hunk_strategy(), 1..4), 2..5),
        pick in any::<prop::sample::Index>(),
        offset in any::<prop::sample::Index>(),
    ) {
        let (text, hunks) = build_diff(&files);
        prop_assert!(diff::validate(text.as_bytes()).is_ok(), "the uncut diff must be valid:\n{}", text);
        let (start, end) = hunks[pick.index(hunks.len())];
        let cut = start + 1 + offset.index(end - start - 1);
        let judged = agent_ledger::capture::judge(
            agent_ledger::provider::BodyFormat::Raw, &text.as_bytes()[..cut], None, None);
        prop_assert!(!judged.reasons.is_empty(), "cut at {} passed:\n{}", cut, &text[..cut]);
    }
}
