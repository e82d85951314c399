//! Frozen findings in the reasons, and the receipt chain: an intact one
//! classifies, a broken link or a record of another run is an error.

use super::*;
use crate::record::ReasonCode;

#[test]
fn frozen_finding_does_not_appear_in_the_reason() {
    let mut tests_pass = prop("tests_pass", Outcome::Miss);
    tests_pass.findings = vec![
        finding(
            "",
            None,
            "tests.q.TestRetry::test_window failed (frozen)",
            true,
        ),
        finding("", None, "tests.q.TestRetry::test_backoff failed", false),
    ];
    let v = verdict_of(
        &run(),
        &Records {
            transcript: Some(transcript(vec![])),
            lock: Some(lock(1)),
            properties: Some(props(Drift::default(), vec![tests_pass])),
        },
    );
    assert_eq!(v.verdict, Verdict::Reject);
    assert_eq!(
        v.reasons,
        [Reason::new(
            ReasonCode::PropertyMiss,
            "property `tests_pass` missed: tests.q.TestRetry::test_backoff failed"
        )]
    );
}

/// A complete run written to a ledger in a tempdir: the transcript comes
/// from `capture`, so `check_receipt` can re-judge its stored files.
struct Chain {
    _dir: tempfile::TempDir,
    ledger: Ledger,
    transcript: Loaded<TranscriptReceipt>,
}

fn chain() -> Chain {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::new(dir.path().join(".agent-ledger"));
    let receipt = capture(
        &ledger,
        CaptureInput {
            run: &run(),
            format: BodyFormat::Raw,
            body: PATCH.as_bytes(),
            declared_bytes: Some(PATCH.len() as u64),
            request_id: None,
            trace: None,
            trace_auth: None,
            captured_at: "2026-01-01T00:00:00Z".into(),
            extract: None,
            access: crate::ledger::Access::Shared,
            git: None,
            repository: None,
        },
    )
    .unwrap();
    assert!(receipt.complete, "{:?}", receipt.reasons);
    let transcript = read_required(&ledger.transcript(&run())).unwrap();
    Chain {
        _dir: dir,
        ledger,
        transcript,
    }
}

fn write_lock(c: &Chain, record: &FixtureLock) -> Loaded<FixtureLock> {
    let path = c.ledger.lock(&run());
    write_record(&path, record).unwrap();
    read_required(&path).unwrap()
}

fn write_props(c: &Chain, record: &PropertyRecord) -> Loaded<PropertyRecord> {
    let path = c.ledger.properties(&run());
    write_record(&path, record).unwrap();
    read_required(&path).unwrap()
}

fn good_lock(c: &Chain) -> FixtureLock {
    lock_record(
        &c.transcript.sha256,
        vec![entry("tests/fixtures/a.json", "{}\n")],
    )
}

fn data_error(e: crate::exit::Error) -> String {
    assert_eq!(e.exit_code(), crate::exit::Sysexit::Data, "{e}");
    e.to_string()
}

#[test]
fn intact_chain_classifies_as_review() {
    // The baseline the chain-fault tests below break one link of.
    let c = chain();
    let l = write_lock(&c, &good_lock(&c));
    let p = write_props(
        &c,
        &property_record(
            &c.transcript.sha256,
            &l.sha256,
            Drift::default(),
            vec![prop("patch_applies", Outcome::Holds)],
        ),
    );
    let v = classify(
        &run(),
        &Records {
            transcript: Some(c.transcript.clone()),
            lock: Some(l),
            properties: Some(p),
        },
    )
    .unwrap();
    assert_eq!(v.verdict, Verdict::Review);
}

#[test]
fn check_run_refuses_a_record_from_another_run() {
    let c = chain();
    let mut record = good_lock(&c);
    record.run_id = "run-002".into();
    let l = write_lock(&c, &record);
    let err = classify(
        &run(),
        &Records {
            transcript: Some(c.transcript.clone()),
            lock: Some(l),
            properties: None,
        },
    )
    .unwrap_err();
    let msg = data_error(err);
    assert!(msg.contains("run-001.lock.json"), "{msg}");
    assert!(
        msg.contains("field `run_id` is `run-002` but this is run `run-001`"),
        "{msg}"
    );
}

#[test]
fn broken_transcript_sha256_link_in_the_lock_is_an_error_not_a_verdict() {
    let c = chain();
    let mut record = good_lock(&c);
    record.transcript_sha256 = sha256_hex(b"another transcript");
    let l = write_lock(&c, &record);
    let err = classify(
        &run(),
        &Records {
            transcript: Some(c.transcript.clone()),
            lock: Some(l),
            properties: None,
        },
    )
    .unwrap_err();
    let msg = data_error(err);
    assert!(msg.contains("run-001.lock.json"), "{msg}");
    assert!(msg.contains("field `transcript_sha256`"), "{msg}");
    assert!(msg.contains("the chain is broken"), "{msg}");
}

#[test]
fn broken_lock_sha256_link_in_the_property_record_is_an_error_not_a_verdict() {
    let c = chain();
    let l = write_lock(&c, &good_lock(&c));
    let p = write_props(
        &c,
        &property_record(
            &c.transcript.sha256,
            &sha256_hex(b"another lock"),
            Drift::default(),
            vec![prop("patch_applies", Outcome::Holds)],
        ),
    );
    let err = classify(
        &run(),
        &Records {
            transcript: Some(c.transcript.clone()),
            lock: Some(l),
            properties: Some(p),
        },
    )
    .unwrap_err();
    let msg = data_error(err);
    assert!(msg.contains("properties/run-001.json"), "{msg}");
    assert!(msg.contains("field `lock_sha256`"), "{msg}");
    assert!(msg.contains("the chain is broken"), "{msg}");
}

#[test]
fn broken_transcript_sha256_link_in_the_property_record_is_an_error() {
    let c = chain();
    let l = write_lock(&c, &good_lock(&c));
    let p = write_props(
        &c,
        &property_record(
            &sha256_hex(b"another transcript"),
            &l.sha256,
            Drift::default(),
            vec![prop("patch_applies", Outcome::Holds)],
        ),
    );
    let err = classify(
        &run(),
        &Records {
            transcript: Some(c.transcript.clone()),
            lock: Some(l),
            properties: Some(p),
        },
    )
    .unwrap_err();
    let msg = data_error(err);
    assert!(msg.contains("properties/run-001.json"), "{msg}");
    assert!(msg.contains("field `transcript_sha256`"), "{msg}");
}

#[test]
fn a_stored_patch_changed_on_disk_is_an_error() {
    // classify re-reads the transcript's stored body: an edited patch is a
    // chain fault, even with no other record present.
    let c = chain();
    let patch = c.ledger.transcripts_dir().join("run-001.patch");
    std::fs::write(&patch, PATCH.replace("+new", "+evil")).unwrap();
    let err = classify(
        &run(),
        &Records {
            transcript: Some(c.transcript.clone()),
            lock: None,
            properties: None,
        },
    )
    .unwrap_err();
    let msg = data_error(err);
    assert!(msg.contains("run-001.patch"), "{msg}");
    assert!(msg.contains("records sha256"), "{msg}");
}
