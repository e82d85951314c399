//! `classify`: every row of the classification table, and the chain checks.

use crate::support::*;
use agent_ledger::digest::sha256_hex;
use agent_ledger::record::{Drift, Finding, Outcome, PropertyRecord, PropertyResult, SCHEMA};
use std::path::Path;

fn sha(path: &Path) -> String {
    sha256_hex(&std::fs::read(path).unwrap())
}

/// A run with a complete transcript and a lock, ready for a property record.
fn locked_run(d: &Path, run_id: &str) {
    fixture_tree(d);
    capture_complete(d, run_id);
    run(d, &["lock", "--run", run_id, "--root", "tests/fixtures"]).assert_code(0);
}

fn property(name: &str, outcome: Outcome) -> PropertyResult {
    PropertyResult {
        name: name.into(),
        plugin: format!("builtin:{name}"),
        plugin_sha256: "0".repeat(64),
        outcome,
        findings: if outcome == Outcome::Miss {
            vec![Finding {
                path: "tests/test_retry.py".into(),
                line: Some(3),
                message: "deleted".into(),
                frozen: false,
            }]
        } else {
            vec![]
        },
        error: (outcome == Outcome::Error).then(|| "trap: unreachable".to_string()),
        fuel_used: 10,
        stdout: String::new(),
        stderr: String::new(),
        inputs: Default::default(),
        completion_ids: Vec::new(),
        stubbed_imports: Vec::new(),
    }
}

/// Writes `properties/ID.json` linked to the run's records.
fn write_properties(d: &Path, run_id: &str, fixtures: Drift, props: Vec<PropertyResult>) {
    let ledger = d.join(".agent-ledger");
    let record = PropertyRecord {
        schema: SCHEMA,
        record: "properties".into(),
        run_id: run_id.into(),
        transcript_sha256: sha(&ledger.join(format!("transcripts/{run_id}.json"))),
        lock_sha256: sha(&ledger.join(format!("fixtures/{run_id}.lock.json"))),
        base_revision: "0".repeat(40),
        config_sha256: "0".repeat(64),
        now: "2026-11-30T00:00:00Z".into(),
        junit: None,
        base_junit: None,
        test_run: None,
        evaluation: None,
        tests: None,
        fixtures,
        properties: props,
        network: None,
    };
    write(
        &ledger.join(format!("properties/{run_id}.json")),
        agent_ledger::ledger::to_bytes(&record),
    );
}

fn classify(d: &Path, run_id: &str) -> Output {
    run(d, &["classify", "--run", run_id, "--format", "json"])
}

#[test]
fn no_transcript_is_incomplete() {
    let dir = tempdir();
    let out = classify(dir.path(), "r");
    out.assert_code(2);
    assert_eq!(out.json()["verdict"], "incomplete");
    assert_eq!(out.json()["reasons"][0]["code"], "transcript_missing");
}

#[test]
fn incomplete_transcript_is_incomplete_whatever_follows() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    let body = fixture("capture/truncated-hunk.diff");
    run(
        d,
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(2);
    run(d, &["lock", "--run", "r", "--root", "tests/fixtures"]).assert_code(0);
    write_properties(
        d,
        "r",
        Drift::default(),
        vec![property("p", Outcome::Holds)],
    );
    let out = classify(d, "r");
    out.assert_code(2);
    assert_eq!(out.json()["reasons"][0]["code"], "hunk_truncated");
}

#[test]
fn no_lock_is_fixture_mismatch() {
    let dir = tempdir();
    capture_complete(dir.path(), "r");
    let out = classify(dir.path(), "r");
    out.assert_code(3);
    assert_eq!(out.json()["verdict"], "fixture_mismatch");
    assert_eq!(out.json()["reasons"][0]["code"], "lock_missing");
}

#[test]
fn fixture_drift_is_fixture_mismatch() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "r");
    let drift = Drift {
        changed: vec!["tests/fixtures/a.json".into()],
        ..Drift::default()
    };
    write_properties(d, "r", drift, vec![property("p", Outcome::Holds)]);
    let out = classify(d, "r");
    out.assert_code(3);
    assert_eq!(out.json()["reasons"][0]["code"], "fixture_drift");
}

#[test]
fn no_property_record_is_reject() {
    let dir = tempdir();
    locked_run(dir.path(), "r");
    let out = classify(dir.path(), "r");
    out.assert_code(4);
    assert_eq!(out.json()["reasons"][0]["code"], "properties_missing");
}

#[test]
fn any_miss_error_or_vacuous_property_is_reject() {
    for (outcome, code) in [
        (Outcome::Miss, "property_miss"),
        (Outcome::Error, "property_error"),
        (Outcome::Vacuous, "property_vacuous"),
    ] {
        let dir = tempdir();
        let d = dir.path();
        locked_run(d, "r");
        write_properties(
            d,
            "r",
            Drift::default(),
            vec![property("ok", Outcome::Holds), property("bad", outcome)],
        );
        let out = classify(d, "r");
        out.assert_code(4);
        let v = out.json();
        assert_eq!(v["verdict"], "reject");
        assert_eq!(v["reasons"][0]["code"], code);
        assert!(
            v["reasons"][0]["message"]
                .as_str()
                .unwrap()
                .contains("`bad`")
        );
    }
}

#[test]
fn an_empty_property_list_is_reject() {
    let dir = tempdir();
    locked_run(dir.path(), "r");
    write_properties(dir.path(), "r", Drift::default(), vec![]);
    classify(dir.path(), "r").assert_code(4);
}

#[test]
fn all_properties_holding_is_review_and_the_verdict_names_its_records() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "r");
    write_properties(
        d,
        "r",
        Drift::default(),
        vec![property("a", Outcome::Holds), property("b", Outcome::Holds)],
    );
    let out = run(d, &["classify", "--run", "r"]);
    out.assert_code(0);
    assert!(
        out.stdout.starts_with("verdict: review (exit 0)"),
        "{}",
        out.stdout
    );
    let ledger = d.join(".agent-ledger");
    let verdict: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ledger.join("verdicts/r.json")).unwrap()).unwrap();
    assert_eq!(verdict["verdict"], "review");
    assert_eq!(verdict["exit_code"], 0);
    assert_eq!(
        verdict["transcript_sha256"],
        sha(&ledger.join("transcripts/r.json"))
    );
    assert_eq!(
        verdict["lock_sha256"],
        sha(&ledger.join("fixtures/r.lock.json"))
    );
    assert_eq!(
        verdict["properties_sha256"],
        sha(&ledger.join("properties/r.json"))
    );
    // Classifying the same records again is idempotent.
    run(d, &["classify", "--run", "r"]).assert_code(0);
}

#[test]
fn a_recorded_verdict_is_never_replaced_by_a_different_one() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "r");
    classify(d, "r").assert_code(4);
    let before = std::fs::read(d.join(".agent-ledger/verdicts/r.json")).unwrap();
    write_properties(
        d,
        "r",
        Drift::default(),
        vec![property("a", Outcome::Holds)],
    );
    let out = classify(d, "r");
    out.assert_code(73);
    assert!(out.stderr.contains("records `reject`"), "{}", out.stderr);
    assert_eq!(
        std::fs::read(d.join(".agent-ledger/verdicts/r.json")).unwrap(),
        before
    );
}

#[test]
fn explicit_record_paths_are_read() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "r");
    write_properties(
        d,
        "r",
        Drift::default(),
        vec![property("a", Outcome::Holds)],
    );
    let l = d.join(".agent-ledger");
    let elsewhere = d.join("archive");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for (from, to) in [
        ("transcripts/r.json", "t.json"),
        ("transcripts/r.patch", "r.patch"),
        ("fixtures/r.lock.json", "l.json"),
        ("properties/r.json", "p.json"),
    ] {
        std::fs::copy(l.join(from), elsewhere.join(to)).unwrap();
    }
    let out = run(
        d,
        &[
            "--ledger",
            "other-ledger",
            "classify",
            "--run",
            "r",
            "--transcript",
            "archive/t.json",
            "--lock",
            "archive/l.json",
            "--properties",
            "archive/p.json",
        ],
    );
    out.assert_code(0);
    assert!(d.join("other-ledger/verdicts/r.json").exists());
    // An explicit path that does not exist is missing input, not a verdict.
    run(
        d,
        &["classify", "--run", "r", "--lock", "archive/none.json"],
    )
    .assert_code(66);
}

#[test]
fn a_record_from_another_run_is_refused() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "run-1");
    capture_complete(d, "run-2");
    run(d, &["lock", "--run", "run-2", "--root", "tests/fixtures"]).assert_code(0);
    write_properties(
        d,
        "run-2",
        Drift::default(),
        vec![property("a", Outcome::Holds)],
    );
    // run-2's property record put in place for run-1.
    let l = d.join(".agent-ledger");
    std::fs::copy(
        l.join("properties/run-2.json"),
        l.join("properties/run-1.json"),
    )
    .unwrap();
    let out = classify(d, "run-1");
    out.assert_code(65);
    assert!(out.stderr.contains("run_id"), "{}", out.stderr);
    assert!(!l.join("verdicts/run-1.json").exists());
}

#[test]
fn a_broken_digest_link_is_refused() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "r");
    write_properties(
        d,
        "r",
        Drift::default(),
        vec![property("a", Outcome::Holds)],
    );
    // Rewrite the lock (same run, new content): the property record's link breaks.
    let l = d.join(".agent-ledger");
    let mut lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(l.join("fixtures/r.lock.json")).unwrap()).unwrap();
    lock["base_revision"] = "deadbeef".into();
    write(
        &l.join("fixtures/r.lock.json"),
        serde_json::to_vec_pretty(&lock).unwrap(),
    );
    let out = classify(d, "r");
    out.assert_code(65);
    assert!(out.stderr.contains("lock_sha256"), "{}", out.stderr);
}

#[test]
fn a_tampered_patch_body_is_refused() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "r");
    let patch = d.join(".agent-ledger/transcripts/r.patch");
    let mut bytes = std::fs::read(&patch).unwrap();
    bytes[10] ^= 1;
    write(&patch, bytes);
    let out = classify(d, "r");
    out.assert_code(65);
    assert!(out.stderr.contains("r.patch"), "{}", out.stderr);
}

#[test]
fn a_receipt_edited_to_complete_is_refused() {
    let dir = tempdir();
    let d = dir.path();
    let body = fixture("capture/truncated-hunk.diff");
    run(
        d,
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(2);
    let path = d.join(".agent-ledger/transcripts/r.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["complete"] = true.into();
    v["verdict"] = "captured".into();
    v["reasons"] = serde_json::json!([]);
    write(&path, serde_json::to_vec_pretty(&v).unwrap());
    classify(d, "r").assert_code(65);
}

#[test]
fn a_newer_schema_major_version_is_refused() {
    let dir = tempdir();
    let d = dir.path();
    capture_complete(d, "r");
    let path = d.join(".agent-ledger/transcripts/r.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["schema"] = 2.into();
    write(&path, serde_json::to_vec_pretty(&v).unwrap());
    let out = classify(d, "r");
    out.assert_code(65);
    assert!(out.stderr.contains("schema"), "{}", out.stderr);
}

/// A record field with a closed vocabulary holds one of its words, or the
/// record is refused naming the file and the field (issue 24 item 4): a
/// value no release writes is not read as some other, harmless value.
#[test]
fn a_value_outside_a_fields_vocabulary_is_refused() {
    let dir = tempdir();
    let d = dir.path();
    locked_run(d, "r");
    write_properties(
        d,
        "r",
        Drift::default(),
        vec![property("x", Outcome::Holds)],
    );
    classify(d, "r").assert_code(0);
    let props = d.join(".agent-ledger/properties/r.json");
    let good = std::fs::read(&props).unwrap();
    for (field, value) in [("network", "isolated, mostly"), ("network", "not isolated")] {
        let mut v: serde_json::Value = serde_json::from_slice(&good).unwrap();
        v[field] = value.into();
        write(&props, serde_json::to_vec_pretty(&v).unwrap());
        let out = classify(d, "r");
        out.assert_code(65);
        assert!(
            out.stderr.contains("properties/r.json") && out.stderr.contains(field),
            "{field} = {value}: {}",
            out.stderr
        );
    }
    write(&props, good);
    let receipt = d.join(".agent-ledger/transcripts/r.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&receipt).unwrap()).unwrap();
    v["format"] = "raw-ish".into();
    write(&receipt, serde_json::to_vec_pretty(&v).unwrap());
    let out = classify(d, "r");
    out.assert_code(65);
    assert!(
        out.stderr.contains("transcripts/r.json") && out.stderr.contains("raw-ish"),
        "{}",
        out.stderr
    );
}
