//! The record chain of one run: reading each record together with the
//! records it builds on (digest links and run ids checked before anything is
//! trusted), and writing each new record after the ones it names.
//!
//! `ledger` knows where records live and how one record is written or read;
//! this module knows which record links to which.

use crate::capture::check_receipt;
use crate::exit::{Error, Result};
use crate::ledger::{self, Ledger, Loaded, RunId};
use crate::lock;
use crate::record::{FixtureLock, PropertyRecord, StoredFile, TranscriptReceipt, VerdictRecord};
use std::collections::BTreeMap;
use std::path::Path;

/// A transcript receipt and the patch it stores, re-judged from its bytes.
pub struct Transcript {
    pub loaded: Loaded<TranscriptReceipt>,
    pub patch: Vec<u8>,
}

/// Reads and checks the transcript; `None` when there is none.
pub fn read_transcript(ledger: &Ledger, run: &RunId) -> Result<Option<Transcript>> {
    let Some(t) = ledger::read_optional::<TranscriptReceipt>(&ledger.transcript(run))? else {
        return Ok(None);
    };
    ledger::check_run(&t, run)?;
    let patch = check_receipt(&t.path, &t.record)?;
    Ok(Some(Transcript { loaded: t, patch }))
}

/// [`read_transcript`] for a command that cannot go on without one.
pub fn require_transcript(ledger: &Ledger, run: &RunId) -> Result<Transcript> {
    read_transcript(ledger, run)?.ok_or_else(|| {
        Error::Missing(format!(
            "no transcript receipt `{}` for run `{run}`: capture the run first",
            ledger.transcript(run).display()
        ))
    })
}

/// Reads and checks the lock against the transcript it names.
pub fn read_lock(
    ledger: &Ledger,
    run: &RunId,
    transcript: &Loaded<TranscriptReceipt>,
) -> Result<Option<Loaded<FixtureLock>>> {
    let Some(l) = ledger::read_optional::<FixtureLock>(&ledger.lock(run))? else {
        return Ok(None);
    };
    ledger::check_run(&l, run)?;
    lock::check_consistent(&l.record, &l.path)?;
    ledger::check_link(
        &l.path,
        "transcript_sha256",
        &l.record.transcript_sha256,
        &transcript.sha256,
        &transcript.path,
    )?;
    Ok(Some(l))
}

/// What locking a tree's fixture roots gave.
pub enum Locked {
    /// The lock, written to the ledger.
    Written(Box<Loaded<FixtureLock>>),
    /// No fixture root is configured: nothing was locked.
    NoRoots,
    /// These roots hold no files: nothing was locked.
    EmptyRoots(Vec<String>),
}

/// What a lock holds besides the fixture roots' files.
#[derive(Debug, Clone, Default)]
pub struct LockExtras {
    /// The evaluator's test patch as it leaves the base.
    pub evaluation: Option<crate::record::LockedEvaluation>,
    /// `[fixtures] none`: why the repository has no fixture directory.
    pub none: Option<String>,
}

/// Hashes `roots` under `tree` and writes the run's lock, which builds on
/// `transcript`. `base_revision` names the revision `tree` was checked out
/// from, when it was.
pub fn write_lock(
    ledger: &Ledger,
    run: &RunId,
    tree: &Path,
    roots: &[String],
    base_revision: Option<&str>,
    transcript: &Loaded<TranscriptReceipt>,
    extras: LockExtras,
) -> Result<Locked> {
    let roots = roots
        .iter()
        .map(|r| lock::normalize_root(r))
        .collect::<Result<Vec<_>>>()?;
    let has_extras = extras.evaluation.is_some() || extras.none.is_some();
    if roots.is_empty() && !has_extras {
        return Ok(Locked::NoRoots);
    }
    let path = ledger.lock(run);
    if path.symlink_metadata().is_ok() {
        return Err(Error::Exists {
            path,
            hint: ledger::RETRY_HINT.into(),
        });
    }
    let scanned = lock::scan(tree, &roots)?;
    if !scanned.empty_roots.is_empty() {
        return Ok(Locked::EmptyRoots(scanned.empty_roots));
    }
    let mut record = lock::build(
        run,
        &transcript.sha256,
        base_revision,
        roots,
        scanned.entries,
    );
    record.evaluation = extras.evaluation;
    record.none = extras.none;
    let sha256 = ledger::write_record(&path, &record)?;
    Ok(Locked::Written(Box::new(Loaded {
        record,
        sha256,
        path,
    })))
}

/// Writes (or matches) the property record, after archiving what an auditor
/// needs to re-run the replay offline: the configuration's bytes and every
/// plugin and known-bad patch the replay read.
pub fn store_properties(
    ledger: &Ledger,
    run: &RunId,
    record: &PropertyRecord,
    config_bytes: &[u8],
    used: &BTreeMap<String, Vec<u8>>,
) -> Result<Loaded<PropertyRecord>> {
    ledger::store_object(ledger, config_bytes)?;
    for bytes in used.values() {
        ledger::store_object(ledger, bytes)?;
    }
    let path = ledger.properties(run);
    let sha256 = ledger::write_or_match(&path, record, "property record")?;
    Ok(Loaded {
        record: record.clone(),
        sha256,
        path,
    })
}

/// Stores the trial's test report beside its property record (never over a
/// different one).
pub fn store_junit(ledger: &Ledger, run: &RunId, bytes: &[u8]) -> Result<StoredFile> {
    store_report(ledger.junit(run), bytes, "test report")
}

/// Writes what the trial's test command wrote beside the property record.
pub fn store_test_log(ledger: &Ledger, run: &RunId, bytes: &[u8]) -> Result<StoredFile> {
    store_report(ledger.test_log(run), bytes, "test command's output")
}

/// Writes the evaluator's test patch beside the property record.
pub fn store_eval_patch(ledger: &Ledger, run: &RunId, bytes: &[u8]) -> Result<StoredFile> {
    store_report(ledger.eval_patch(run), bytes, "evaluator's test patch")
}

/// Writes the report the test command wrote on the base revision.
pub fn store_base_junit(ledger: &Ledger, run: &RunId, bytes: &[u8]) -> Result<StoredFile> {
    store_report(ledger.base_junit(run), bytes, "base test report")
}

fn store_report(path: std::path::PathBuf, bytes: &[u8], what: &str) -> Result<StoredFile> {
    let sha256 = ledger::write_bytes_or_match(&path, bytes, what)?;
    Ok(StoredFile {
        file: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256,
        bytes: bytes.len() as u64,
    })
}

/// Writes the verdict record. Classifying again from the same records is
/// idempotent; a different verdict for a recorded run is never written over.
pub fn store_verdict(ledger: &Ledger, run: &RunId, verdict: &VerdictRecord) -> Result<()> {
    let path = ledger.verdict(run);
    if let Some(existing) = ledger::read_optional::<VerdictRecord>(&path)?
        && &existing.record != verdict
    {
        return Err(Error::Exists {
            path,
            hint: format!(
                "it records `{}` from other records; a retry is a new run id",
                existing.record.verdict.as_str()
            ),
        });
    }
    ledger::write_or_match(&path, verdict, "verdict").map(|_| ())
}

/// Every record of one run on file, each read with its links checked.
pub struct RunRecords {
    pub transcript: Option<Transcript>,
    pub lock: Option<Loaded<FixtureLock>>,
    pub properties: Option<Loaded<PropertyRecord>>,
    pub verdict: Option<Loaded<VerdictRecord>>,
}

/// Reads every record of `run` that is on file: each must belong to the run
/// and name, by digest, exactly the records on file before it (a lock or a
/// property record whose transcript or lock is missing is broken too), and
/// the verdict must name the records it was derived from. A record that is
/// absent is `None`; anything unreadable or unlinked is a data error.
/// Whether the verdict follows from its records by the rules is `verify`'s
/// question, not this one.
pub fn read_run(ledger: &Ledger, run: &RunId) -> Result<RunRecords> {
    let transcript = read_transcript(ledger, run)?;
    let lock = match &transcript {
        Some(t) => read_lock(ledger, run, &t.loaded)?,
        None => {
            refuse_orphan(&ledger.lock(run), &ledger.transcript(run))?;
            None
        }
    };
    let properties = read_properties(ledger, run, transcript.as_ref(), lock.as_ref())?;
    let verdict = ledger::read_optional::<VerdictRecord>(&ledger.verdict(run))?;
    if let Some(v) = &verdict {
        ledger::check_run(v, run)?;
        let links = [
            (
                "transcript_sha256",
                &v.record.transcript_sha256,
                transcript
                    .as_ref()
                    .map(|t| (&t.loaded.sha256, &t.loaded.path)),
                ledger.transcript(run),
            ),
            (
                "lock_sha256",
                &v.record.lock_sha256,
                lock.as_ref().map(|l| (&l.sha256, &l.path)),
                ledger.lock(run),
            ),
            (
                "properties_sha256",
                &v.record.properties_sha256,
                properties.as_ref().map(|p| (&p.sha256, &p.path)),
                ledger.properties(run),
            ),
        ];
        for (field, named, on_file, path) in links {
            match (named, on_file) {
                (Some(named), Some((sha, what))) => {
                    ledger::check_link(&v.path, field, named, sha, what)?
                }
                (None, None) => {}
                (Some(named), None) => {
                    return Err(Error::data(
                        &v.path,
                        format!(
                            "field `{field}` names sha256 {named} but `{}` is missing: the chain is broken",
                            path.display()
                        ),
                    ));
                }
                (None, Some((_, what))) => {
                    return Err(Error::data(
                        &v.path,
                        format!(
                            "field `{field}` is null but `{}` is on file: the verdict was not derived from the records on file",
                            what.display()
                        ),
                    ));
                }
            }
        }
    }
    Ok(RunRecords {
        transcript,
        lock,
        properties,
        verdict,
    })
}

/// Reads the property record, which must name the transcript and lock on file.
fn read_properties(
    ledger: &Ledger,
    run: &RunId,
    transcript: Option<&Transcript>,
    lock: Option<&Loaded<FixtureLock>>,
) -> Result<Option<Loaded<PropertyRecord>>> {
    let Some(p) = ledger::read_optional::<PropertyRecord>(&ledger.properties(run))? else {
        return Ok(None);
    };
    ledger::check_run(&p, run)?;
    let Some(t) = transcript else {
        return Err(orphan(&p.path, &ledger.transcript(run)));
    };
    ledger::check_link(
        &p.path,
        "transcript_sha256",
        &p.record.transcript_sha256,
        &t.loaded.sha256,
        &t.loaded.path,
    )?;
    let Some(l) = lock else {
        return Err(orphan(&p.path, &ledger.lock(run)));
    };
    ledger::check_link(
        &p.path,
        "lock_sha256",
        &p.record.lock_sha256,
        &l.sha256,
        &l.path,
    )?;
    Ok(Some(p))
}

/// A record on file at `path` whose predecessor at `missing` is not.
fn refuse_orphan(path: &Path, missing: &Path) -> Result<()> {
    match path.symlink_metadata() {
        Ok(_) => Err(orphan(path, missing)),
        Err(_) => Ok(()),
    }
}

fn orphan(path: &Path, missing: &Path) -> Error {
    Error::data(
        path,
        format!(
            "it builds on `{}`, which is missing: the chain is broken",
            missing.display()
        ),
    )
}
