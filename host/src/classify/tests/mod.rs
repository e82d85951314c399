//! Unit tests for the rules in `classify`.

use super::*;
use crate::capture::{CaptureInput, capture};
use crate::digest::sha256_hex;
use crate::ledger::{Ledger, read_required, write_record};
use crate::lock::dir_hash;
use crate::provider::BodyFormat;
use crate::record::ReasonCode;
use crate::record::{Drift, Finding, LockEntry, PropertyResult};
use std::collections::BTreeMap;
use std::path::PathBuf;

const PATCH: &str = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-old\n+new\n";

fn run() -> RunId {
    RunId::parse("run-001").unwrap()
}

fn loaded<T>(record: T, name: &str) -> Loaded<T> {
    Loaded {
        record,
        sha256: sha256_hex(name.as_bytes()),
        path: PathBuf::from(name),
    }
}

fn transcript(reasons: Vec<Reason>) -> Loaded<TranscriptReceipt> {
    let complete = reasons.is_empty();
    let body = crate::record::StoredFile {
        file: "run-001.patch".into(),
        sha256: sha256_hex(PATCH.as_bytes()),
        bytes: PATCH.len() as u64,
    };
    loaded(
        TranscriptReceipt {
            schema: SCHEMA,
            record: "transcript".into(),
            run_id: "run-001".into(),
            format: crate::provider::BodyFormat::Raw,
            body,
            response: None,
            declared_bytes: None,
            request_id: None,
            complete,
            verdict: if complete {
                crate::record::CaptureVerdict::Captured
            } else {
                crate::record::CaptureVerdict::Incomplete
            },
            reasons,
            trace: None,
            trace_auth: None,
            captured_at: "2026-01-01T00:00:00Z".into(),
            strip: 1,
            extract: None,
            envelope: None,
            notes: Vec::new(),
            model: None,
            completion_id: None,
            usage: None,
            http: None,
            git: None,
            repository: None,
        },
        "transcripts/run-001.json",
    )
}

fn entry(path: &str, content: &str) -> LockEntry {
    LockEntry {
        path: path.into(),
        kind: crate::record::EntryKind::File,
        size: content.len() as u64,
        sha256: sha256_hex(content.as_bytes()),
        target: None,
        executable: false,
    }
}

fn lock_record(transcript_sha256: &str, files: Vec<LockEntry>) -> FixtureLock {
    FixtureLock {
        schema: SCHEMA,
        record: "fixture_lock".into(),
        run_id: "run-001".into(),
        transcript_sha256: transcript_sha256.into(),
        base_revision: None,
        roots: vec!["tests/fixtures".into()],
        count: files.len() as u64,
        dir_hash: dir_hash(&files),
        files,
        evaluation: None,
        none: None,
    }
}

fn lock(count: usize) -> Loaded<FixtureLock> {
    let files = (0..count)
        .map(|i| entry(&format!("tests/fixtures/f{i}"), "x"))
        .collect();
    loaded(lock_record("t", files), "fixtures/run-001.lock.json")
}

fn prop(name: &str, outcome: Outcome) -> PropertyResult {
    PropertyResult {
        name: name.into(),
        plugin: format!("builtin:{name}"),
        plugin_sha256: String::new(),
        outcome,
        findings: Vec::new(),
        error: None,
        fuel_used: 0,
        stdout: String::new(),
        stderr: String::new(),
        inputs: BTreeMap::new(),
        completion_ids: Vec::new(),
        stubbed_imports: Vec::new(),
    }
}

fn finding(path: &str, line: Option<u32>, message: &str, frozen: bool) -> Finding {
    Finding {
        path: path.into(),
        line,
        message: message.into(),
        frozen,
    }
}

fn property_record(
    transcript_sha256: &str,
    lock_sha256: &str,
    fixtures: Drift,
    properties: Vec<PropertyResult>,
) -> PropertyRecord {
    PropertyRecord {
        schema: SCHEMA,
        record: "properties".into(),
        run_id: "run-001".into(),
        transcript_sha256: transcript_sha256.into(),
        lock_sha256: lock_sha256.into(),
        base_revision: "0".repeat(40),
        config_sha256: sha256_hex(b""),
        now: "2026-01-01T00:00:00Z".into(),
        junit: None,
        base_junit: None,
        test_run: None,
        evaluation: None,
        tests: None,
        fixtures,
        properties,
        network: Some(crate::record::ReplayNetwork::Isolated),
    }
}

fn props(fixtures: Drift, properties: Vec<PropertyResult>) -> Loaded<PropertyRecord> {
    loaded(
        property_record("t", "l", fixtures, properties),
        "properties/run-001.json",
    )
}

fn holding() -> Loaded<PropertyRecord> {
    props(
        Drift::default(),
        vec![
            prop("patch_applies", Outcome::Holds),
            prop("tests_not_deleted", Outcome::Holds),
        ],
    )
}

fn codes(v: &VerdictRecord) -> Vec<&'static str> {
    v.reasons.iter().map(|r| r.code.as_str()).collect()
}

#[test]
fn no_transcript_is_incomplete_transcript_missing() {
    // Later records cannot stand in for a missing receipt.
    let v = verdict_of(
        &run(),
        &Records {
            transcript: None,
            lock: Some(lock(1)),
            properties: Some(holding()),
        },
    );
    assert_eq!(v.verdict, Verdict::Incomplete);
    assert_eq!(v.exit_code, 2);
    assert_eq!(codes(&v), ["transcript_missing"]);
    assert_eq!(v.transcript_sha256, None);
    assert_eq!(v.run_id, "run-001");
    assert_eq!(v.record, "verdict");
}

#[test]
fn incomplete_transcript_gives_its_own_reasons() {
    let reasons = vec![
        Reason::new(
            ReasonCode::ProviderTruncated,
            "`stop_reason` is `max_tokens`",
        ),
        Reason::new(ReasonCode::HunkCountMismatch, "hunk 1 is short"),
    ];
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(reasons.clone())),
            lock: Some(lock(1)),
            properties: Some(holding()),
        },
    );
    assert_eq!(v.verdict, Verdict::Incomplete);
    assert_eq!(v.exit_code, 2);
    assert_eq!(v.reasons, reasons);
}

#[test]
fn no_lock_is_fixture_mismatch_lock_missing() {
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(vec![])),
            lock: None,
            properties: Some(holding()),
        },
    );
    assert_eq!(v.verdict, Verdict::FixtureMismatch);
    assert_eq!(v.exit_code, 3);
    assert_eq!(codes(&v), ["lock_missing"]);
    assert_eq!(v.lock_sha256, None);
}

#[test]
fn empty_lock_is_fixture_mismatch_lock_empty() {
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(vec![])),
            lock: Some(lock(0)),
            properties: Some(holding()),
        },
    );
    assert_eq!(v.verdict, Verdict::FixtureMismatch);
    assert_eq!(v.exit_code, 3);
    assert_eq!(codes(&v), ["lock_empty"]);
}

#[test]
fn drift_is_fixture_drift_per_path_before_any_property() {
    let drift = Drift {
        added: vec!["tests/fixtures/new.json".into()],
        removed: vec!["tests/fixtures/gone.json".into()],
        changed: vec![
            "tests/fixtures/a.json".into(),
            "tests/fixtures/b.json".into(),
        ],
    };
    // A miss does not turn a fixture mismatch into a reject: drift is
    // judged first, because properties that read drifted fixtures are not
    // trusted.
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(vec![])),
            lock: Some(lock(3)),
            properties: Some(props(drift, vec![prop("oracle", Outcome::Miss)])),
        },
    );
    assert_eq!(v.verdict, Verdict::FixtureMismatch);
    assert_eq!(v.exit_code, 3);
    let messages: Vec<&str> = v.reasons.iter().map(|r| r.message.as_str()).collect();
    assert_eq!(codes(&v), ["fixture_drift"; 4]);
    assert_eq!(
        messages,
        [
            "fixture `tests/fixtures/new.json` added by the patch",
            "fixture `tests/fixtures/gone.json` removed by the patch",
            "fixture `tests/fixtures/a.json` changed by the patch",
            "fixture `tests/fixtures/b.json` changed by the patch",
        ]
    );
}

#[test]
fn no_property_record_is_reject_properties_missing() {
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(vec![])),
            lock: Some(lock(1)),
            properties: None,
        },
    );
    assert_eq!(v.verdict, Verdict::Reject);
    assert_eq!(v.exit_code, 4);
    assert_eq!(codes(&v), ["properties_missing"]);
    assert_eq!(v.properties_sha256, None);
}

#[test]
fn empty_property_list_is_reject_no_properties() {
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(vec![])),
            lock: Some(lock(1)),
            properties: Some(props(Drift::default(), vec![])),
        },
    );
    assert_eq!(v.verdict, Verdict::Reject);
    assert_eq!(v.exit_code, 4);
    assert_eq!(codes(&v), ["no_properties"]);
}

#[test]
fn miss_error_and_vacuous_each_reject_with_their_code() {
    let mut miss = prop("assertions_not_weakened", Outcome::Miss);
    miss.findings = vec![
        finding(
            "tests/test_a.py",
            Some(12),
            "assertion count fell from 3 to 1",
            false,
        ),
        finding("tests/test_b.py", None, "file lost its asserts", false),
        finding("", None, "2 assertions removed", false),
    ];
    let mut error = prop("oracle", Outcome::Error);
    error.error = Some("fuel exhausted".into());
    let mut vacuous = prop("tests_pass", Outcome::Vacuous);
    vacuous.error = Some("holds on the known-bad patch".into());
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(vec![])),
            lock: Some(lock(1)),
            properties: Some(props(
                Drift::default(),
                vec![prop("patch_applies", Outcome::Holds), miss, error, vacuous],
            )),
        },
    );
    assert_eq!(v.verdict, Verdict::Reject);
    assert_eq!(v.exit_code, 4);
    assert_eq!(
        v.reasons,
        [
            Reason::new(
                ReasonCode::PropertyMiss,
                "property `assertions_not_weakened` missed: tests/test_a.py:12: assertion count fell from 3 to 1; tests/test_b.py: file lost its asserts; 2 assertions removed"
            ),
            Reason::new(
                ReasonCode::PropertyError,
                "property `oracle` failed to run: fuel exhausted"
            ),
            Reason::new(
                ReasonCode::PropertyVacuous,
                "property `tests_pass` is vacuous: holds on the known-bad patch"
            ),
        ]
    );
}

#[test]
fn all_hold_is_review_and_names_every_record_digest() {
    let (t, l, p) = (transcript(vec![]), lock(2), holding());
    let (ts, ls, ps) = (t.sha256.clone(), l.sha256.clone(), p.sha256.clone());
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(t),
            lock: Some(l),
            properties: Some(p),
        },
    );
    assert_eq!(v.verdict, Verdict::Review);
    assert_eq!(v.exit_code, 0);
    assert_eq!(
        v.reasons,
        [Reason::new(
            ReasonCode::AllHold,
            "transcript complete, fixtures locked and unchanged, 2 properties hold"
        )]
    );
    assert_eq!(v.transcript_sha256.as_deref(), Some(ts.as_str()));
    assert_eq!(v.lock_sha256.as_deref(), Some(ls.as_str()));
    assert_eq!(v.properties_sha256.as_deref(), Some(ps.as_str()));
}

mod chain;
