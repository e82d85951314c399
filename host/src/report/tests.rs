//! Unit tests of `report` (kept apart so the module itself stays one job).

use super::*;
use crate::record::ReasonCode;
use std::collections::BTreeMap;

pub fn property(name: &str, outcome: Outcome, findings: Vec<Finding>) -> PropertyResult {
    PropertyResult {
        name: name.into(),
        plugin: format!("builtin:{name}"),
        plugin_sha256: "ab".repeat(32),
        outcome,
        findings,
        error: (outcome == Outcome::Error).then(|| "trapped: unreachable".to_string()),
        fuel_used: 1000,
        stdout: String::new(),
        stderr: String::new(),
        inputs: BTreeMap::new(),
        completion_ids: Vec::new(),
        stubbed_imports: Vec::new(),
    }
}

pub fn finding(path: &str, line: Option<u32>, message: &str) -> Finding {
    Finding {
        path: path.into(),
        line,
        message: message.into(),
        frozen: false,
    }
}

/// Untrusted text that tries to break out of every format.
pub const HOSTILE: &str =
    "<script>alert(1)</script> | a \"q\" 'x' & b\n::error::forged %0A ]]> \u{1b}[2J";

/// A review, a reject with findings (one hostile), an incomplete run,
/// one not classified and one broken.
pub fn trials() -> Vec<Trial> {
    vec![
        Trial {
            run_id: "good".into(),
            status: TrialStatus::Review,
            reasons: vec![Reason::new(
                crate::record::ReasonCode::AllHold,
                "every property holds",
            )],
            properties: vec![property("tests_not_deleted", Outcome::Holds, vec![])],
            patched: vec!["src/retry.py".into()],
            about: About {
                repository: Some(format!("https://example.test/{HOSTILE}")),
                base: Some("0123abcd".into()),
                model: Some(format!("model-{HOSTILE}")),
                range: None,
                patch_bytes: Some(2_500_000),
                patch: Some(format!("diff --git a/x b/x\n+{HOSTILE}\n")),
                test_ms: Some(1_500),
            },
            record: None,
            receipt: None,
        },
        Trial {
            run_id: "bad".into(),
            status: TrialStatus::Reject,
            reasons: vec![Reason::new(
                ReasonCode::PropertyMiss,
                "`tests_not_deleted` missed",
            )],
            properties: vec![
                property(
                    "tests_not_deleted",
                    Outcome::Miss,
                    vec![
                        finding("tests/test_retry.py", Some(3), "test file deleted"),
                        finding(&format!("src/{HOSTILE}.py"), Some(7), HOSTILE),
                    ],
                ),
                property("oracle", Outcome::Error, vec![]),
            ],
            patched: vec!["tests/test_retry.py".into()],
            about: About::default(),
            record: None,
            receipt: None,
        },
        Trial {
            run_id: "cut".into(),
            status: TrialStatus::Incomplete,
            reasons: vec![Reason::new(
                crate::record::ReasonCode::HunkTruncated,
                "the last hunk is cut",
            )],
            properties: vec![],
            patched: vec!["src/cut.py".into()],
            about: About::default(),
            record: None,
            receipt: None,
        },
        Trial {
            run_id: "pending".into(),
            status: TrialStatus::NotClassified,
            reasons: vec![],
            properties: vec![],
            patched: vec![],
            about: About::default(),
            record: None,
            receipt: None,
        },
        Trial::broken("tampered", "field `lock_sha256` names another lock".into()),
    ]
}

#[test]
fn the_summary_counts_statuses_and_outcomes_and_ranks_by_fuel() {
    let s = Summary::of(&trials());
    assert_eq!(
        s.counts,
        Counts {
            trials: 5,
            review: 1,
            incomplete: 1,
            fixture_mismatch: 0,
            reject: 1,
            not_classified: 1,
            broken: 1,
        }
    );
    let tnd = &s.properties[0];
    assert_eq!(
        (tnd.name.as_str(), tnd.holds, tnd.miss),
        ("tests_not_deleted", 1, 1)
    );
    assert_eq!(s.properties[1].error, 1);
    let slowest: Vec<_> = s
        .slowest
        .iter()
        .map(|t| (t.run_id.as_str(), t.fuel_used))
        .collect();
    assert_eq!(slowest, [("bad", 2000), ("good", 1000)]);
    assert_eq!(s.slowest[0].failing, ["tests_not_deleted", "oracle"]);
}

#[test]
fn a_report_replaces_the_file_atomically_and_never_lands_in_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.xml");
    write(&out, b"old").unwrap();
    write(&out, b"new").unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"new");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let ledger = Ledger::new(dir.path().join("ledger"));
    std::fs::create_dir_all(ledger.root().join("verdicts")).unwrap();
    check_outside(&out, &ledger).unwrap();
    for inside in [
        "ledger/summary.md",
        "ledger/verdicts/x.xml",
        "ledger/../ledger/y.md",
    ] {
        let err = check_outside(&dir.path().join(inside), &ledger).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::Sysexit::Usage, "{inside}");
    }
}
