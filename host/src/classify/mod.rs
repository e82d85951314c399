//! Classification: read the records in receipt order and stop at the first
//! hard failure. The rules, in order:
//!
//! 1. no transcript receipt, or an incomplete one => `incomplete` (exit 2)
//! 2. no fixture lock, an empty one, or drift on the patched tree =>
//!    `fixture_mismatch` (exit 3)
//! 3. no property record, a replay that talked to a model
//!    (`endpoint_coupled`: a completion id other than the captured one in a
//!    property's or the test command's output), no property, or any
//!    property not `holds` => `reject` (exit 4)
//! 4. otherwise => `review` (exit 0)
//!
//! A record from another run, a broken digest link or a record that does not
//! follow from its own bytes is not classified at all: it is a data error.

use crate::capture::check_receipt;
use crate::exit::Result;
use crate::ledger::{Loaded, RunId, check_link, check_run};
use crate::lock::check_consistent;
use crate::record::ReasonCode;
use crate::record::{
    FixtureLock, Outcome, PropertyRecord, Reason, SCHEMA, TokenLedger, TranscriptReceipt, Verdict,
    VerdictRecord,
};

/// The records of one run, each possibly missing.
pub struct Records {
    pub transcript: Option<Loaded<TranscriptReceipt>>,
    pub lock: Option<Loaded<FixtureLock>>,
    pub properties: Option<Loaded<PropertyRecord>>,
}

/// Checks the chain and classifies. Errors are chain faults (exit 65).
pub fn classify(run: &RunId, records: &Records) -> Result<VerdictRecord> {
    check_chain(run, records)?;
    Ok(verdict_of(run, records))
}

/// Whether a run's stored verdict is the one its records give (what
/// `verify` checks): a verdict file edited, or written beside records that
/// say otherwise, is not a verdict a report or a merge counts.
pub fn stored_verdict_follows(
    run: &RunId,
    records: &crate::chain::RunRecords,
) -> std::result::Result<(), String> {
    let Some(stored) = &records.verdict else {
        return Ok(());
    };
    let mut derived = verdict_of(
        run,
        &Records {
            transcript: records.transcript.as_ref().map(|t| t.loaded.clone()),
            lock: records.lock.clone(),
            properties: records.properties.clone(),
        },
    );
    // Verdicts written before the token ledger have none.
    if stored.record.tokens.is_none() {
        derived.tokens = None;
    }
    if derived == stored.record {
        Ok(())
    } else {
        Err(format!(
            "its verdict file says `{}`, but its records give `{}`",
            stored.record.verdict.as_str(),
            derived.verdict.as_str()
        ))
    }
}

/// The verdict the rules give, for records whose chain is already checked.
pub fn verdict_of(run: &RunId, records: &Records) -> VerdictRecord {
    let (verdict, reasons) = rules(records);
    VerdictRecord {
        schema: SCHEMA,
        record: "verdict".into(),
        run_id: run.to_string(),
        verdict,
        exit_code: verdict.exit_code().code(),
        reasons,
        transcript_sha256: records.transcript.as_ref().map(|l| l.sha256.clone()),
        lock_sha256: records.lock.as_ref().map(|l| l.sha256.clone()),
        properties_sha256: records.properties.as_ref().map(|l| l.sha256.clone()),
        tokens: Some(token_ledger(records)),
    }
}

/// Tokens at capture, from the receipt; after capture, zero where the
/// records show it.
fn token_ledger(records: &Records) -> TokenLedger {
    let captured = records.transcript.as_ref();
    let after_capture = records.properties.as_ref().and_then(|p| {
        let isolated = p.record.network.as_ref().is_some_and(|n| n.is_isolated());
        let coupled = !endpoint_calls(&p.record, captured.map(|t| &t.record)).is_empty();
        (isolated && !coupled).then_some(0)
    });
    TokenLedger {
        capture: captured.and_then(|t| t.record.usage),
        after_capture,
    }
}

/// Every completion id in the replay's outputs other than the captured
/// one, with where it was seen: each is a model call the replay made.
fn endpoint_calls(p: &PropertyRecord, t: Option<&TranscriptReceipt>) -> Vec<Reason> {
    let captured = t.and_then(|t| t.completion_id.as_deref());
    let mut seen: Vec<(String, &[String])> = p
        .properties
        .iter()
        .map(|r| {
            (
                format!("property `{}`", r.name),
                r.completion_ids.as_slice(),
            )
        })
        .collect();
    if let Some(run) = &p.test_run {
        seen.push(("the test command".into(), run.completion_ids.as_slice()));
    }
    let mut reasons = Vec::new();
    for (who, ids) in seen {
        for id in crate::completion_ids::foreign(ids, captured) {
            reasons.push(Reason::new(
                ReasonCode::EndpointCoupled,
                format!(
                    "{who} printed completion id `{id}`, not the captured completion{}: the replay talked to a model",
                    captured.map_or(String::new(), |c| format!(" `{c}`"))
                ),
            ));
        }
    }
    reasons
}

fn check_chain(run: &RunId, r: &Records) -> Result<()> {
    if let Some(t) = &r.transcript {
        check_run(t, run)?;
        check_receipt(&t.path, &t.record)?;
    }
    if let Some(l) = &r.lock {
        check_run(l, run)?;
        check_consistent(&l.record, &l.path)?;
        if let Some(t) = &r.transcript {
            check_link(
                &l.path,
                "transcript_sha256",
                &l.record.transcript_sha256,
                &t.sha256,
                &t.path,
            )?;
        }
    }
    if let Some(p) = &r.properties {
        check_run(p, run)?;
        if let Some(t) = &r.transcript {
            check_link(
                &p.path,
                "transcript_sha256",
                &p.record.transcript_sha256,
                &t.sha256,
                &t.path,
            )?;
        }
        if let Some(l) = &r.lock {
            check_link(
                &p.path,
                "lock_sha256",
                &p.record.lock_sha256,
                &l.sha256,
                &l.path,
            )?;
        }
    }
    Ok(())
}

fn rules(r: &Records) -> (Verdict, Vec<Reason>) {
    let Some(t) = &r.transcript else {
        return (
            Verdict::Incomplete,
            vec![Reason::new(
                ReasonCode::TranscriptMissing,
                "no transcript receipt: nothing was captured",
            )],
        );
    };
    if !t.record.complete {
        return (Verdict::Incomplete, t.record.reasons.clone());
    }
    let Some(lock) = &r.lock else {
        return (
            Verdict::FixtureMismatch,
            vec![Reason::new(
                ReasonCode::LockMissing,
                "no fixture lock: the fixtures the checks read were never locked",
            )],
        );
    };
    if lock.record.count == 0 && lock.record.evaluation.is_none() && lock.record.none.is_none() {
        return (
            Verdict::FixtureMismatch,
            vec![Reason::new(
                ReasonCode::LockEmpty,
                "the fixture lock holds no files",
            )],
        );
    }
    let Some(p) = &r.properties else {
        return (
            Verdict::Reject,
            vec![Reason::new(
                ReasonCode::PropertiesMissing,
                "no property record: the properties never ran",
            )],
        );
    };
    let drift = &p.record.fixtures;
    if !drift.is_empty() {
        let mut reasons = Vec::new();
        for (kind, paths) in [
            ("added", &drift.added),
            ("removed", &drift.removed),
            ("changed", &drift.changed),
        ] {
            for path in paths {
                reasons.push(Reason::new(
                    ReasonCode::FixtureDrift,
                    format!("fixture `{path}` {kind} by the patch"),
                ));
            }
        }
        return (Verdict::FixtureMismatch, reasons);
    }
    // A replay that talked to a model judged nothing reproducible: that is
    // the reason, before anything its properties found.
    let coupled = endpoint_calls(&p.record, Some(&t.record));
    if !coupled.is_empty() {
        return (Verdict::Reject, coupled);
    }
    if p.record.properties.is_empty() {
        return (
            Verdict::Reject,
            vec![Reason::new(
                ReasonCode::NoProperties,
                "the property record lists no property",
            )],
        );
    }
    let mut reasons = Vec::new();
    for prop in &p.record.properties {
        let why = || {
            let mut parts: Vec<String> = prop.error.iter().cloned().collect();
            parts.extend(
                prop.findings
                    .iter()
                    .filter(|f| !f.frozen)
                    .map(|f| match f.line {
                        Some(line) if !f.path.is_empty() => {
                            format!("{}:{line}: {}", f.path, f.message)
                        }
                        _ if !f.path.is_empty() => format!("{}: {}", f.path, f.message),
                        _ => f.message.clone(),
                    }),
            );
            parts.join("; ")
        };
        match prop.outcome {
            Outcome::Holds => {}
            Outcome::Miss if prop.name == crate::replay::RUNNER_INTEGRITY => {
                reasons.push(Reason::new(
                    ReasonCode::RunnerSubverted,
                    format!("the test results are not the runner's account: {}", why()),
                ))
            }
            Outcome::Miss => reasons.push(Reason::new(
                ReasonCode::PropertyMiss,
                format!("property `{}` missed: {}", prop.name, why()),
            )),
            Outcome::Error => reasons.push(Reason::new(
                ReasonCode::PropertyError,
                format!("property `{}` failed to run: {}", prop.name, why()),
            )),
            Outcome::Vacuous => reasons.push(Reason::new(
                ReasonCode::PropertyVacuous,
                format!("property `{}` is vacuous: {}", prop.name, why()),
            )),
        }
    }
    if reasons.is_empty() {
        let n = p.record.properties.len();
        (
            Verdict::Review,
            vec![Reason::new(
                ReasonCode::AllHold,
                format!("transcript complete, fixtures locked and unchanged, {n} properties hold"),
            )],
        )
    } else {
        (Verdict::Reject, reasons)
    }
}

#[cfg(test)]
mod tests;
