//! The gate as a library call: lock (when the run has no lock yet, from the
//! base tree), replay and classify one trial, writing each record in chain
//! order. `agent-ledger check` prints what this returns; `agent-ledger
//! replay` calls [`replay`] alone.

use crate::chain::{self, Locked, Transcript};
use crate::classify::{Records, classify};
use crate::config;
use crate::exit::{Error, ExitCode, Result};
use crate::git::Repo;
use crate::ledger::{Ledger, Loaded, RunId};
use crate::record::{FixtureLock, Outcome, PropertyRecord, VerdictRecord};
use crate::replay::{self, Replay, TestCommand, TrialTrees};
use crate::sandbox::Lazy;
use time::OffsetDateTime;

/// One trial, resolved: everything `check` needs besides the records.
pub struct TrialSpec {
    pub run: RunId,
    pub repo: Repo,
    /// Full object id of the base revision.
    pub base: String,
    pub config: config::Loaded,
    pub ledger: Ledger,
    /// A supplied JUnit report (`--junit`), already parsed once.
    pub junit: Option<Vec<u8>>,
    /// The project's test command (`--test-cmd`).
    pub test: Option<TestCommand>,
    /// The instant flake expiry is judged against; default the transcript's
    /// `captured_at`, so a replay reproduces byte for byte.
    pub now: Option<OffsetDateTime>,
}

/// What `check` decided and wrote.
pub struct Checked {
    pub verdict: VerdictRecord,
    pub properties: Option<Loaded<PropertyRecord>>,
    /// Why a step was skipped (no fixture roots, ...), for people.
    pub notes: Vec<String>,
}

/// Runs the whole gate for one trial and writes its records.
pub fn check(spec: &TrialSpec, sandbox: &Lazy) -> Result<Checked> {
    check_on(spec, sandbox, None)
}

/// [`check`] on a checkout of the base other trials share (`batch`), or,
/// with `None`, on one of its own.
pub fn check_on(
    spec: &TrialSpec,
    sandbox: &Lazy,
    base: Option<&std::sync::Arc<replay::BaseTree>>,
) -> Result<Checked> {
    let mut records = Records {
        transcript: None,
        lock: None,
        properties: None,
    };
    let mut notes = Vec::new();
    // The report is kept even for a trial that goes no further, so a
    // flake observation can see which trial it came from.
    if let Some(bytes) = &spec.junit {
        chain::store_junit(&spec.ledger, &spec.run, bytes)?;
    }
    if let Some(transcript) = chain::read_transcript(&spec.ledger, &spec.run)? {
        if transcript.loaded.record.complete {
            // One checkout of the base serves the lock and the replay.
            let trees = match base {
                Some(b) => TrialTrees::on(b.clone())?,
                None => TrialTrees::new(&spec.repo, &spec.base)?,
            };
            let lock = match chain::read_lock(&spec.ledger, &spec.run, &transcript.loaded)? {
                Some(l) => Some(l),
                None => match chain::write_lock(
                    &spec.ledger,
                    &spec.run,
                    &trees.base().tree,
                    &spec.config.config.fixtures.roots,
                    Some(&spec.base),
                    &transcript.loaded,
                )? {
                    Locked::Written(l) => Some(*l),
                    Locked::NoRoots => {
                        notes.push(format!(
                            "no fixture roots are configured ({}): nothing was locked",
                            spec.config.source
                        ));
                        None
                    }
                    Locked::EmptyRoots(empty) => {
                        notes.push(format!(
                            "fixture root(s) {} hold no files at the base revision: nothing was locked",
                            empty.join(", ")
                        ));
                        None
                    }
                },
            };
            if let Some(lock) = &lock {
                records.properties = Some(replay(spec, sandbox.get()?, &transcript, lock, &trees)?);
            }
            records.lock = lock;
        }
        records.transcript = Some(transcript.loaded);
    }
    let verdict = classify(&spec.run, &records)?;
    chain::store_verdict(&spec.ledger, &spec.run, &verdict)?;
    Ok(Checked {
        verdict,
        properties: records.properties,
        notes,
    })
}

/// Runs the replay with plugins as configured and writes (or matches) the
/// property record, archiving what an auditor needs to re-run it.
pub fn replay(
    spec: &TrialSpec,
    sandbox: &crate::sandbox::Sandbox,
    transcript: &Transcript,
    lock: &Loaded<FixtureLock>,
    trees: &TrialTrees,
) -> Result<Loaded<PropertyRecord>> {
    let now = match spec.now {
        Some(n) => n,
        None => crate::clock::parse_time(&transcript.loaded.record.captured_at).map_err(|e| {
            Error::data(&transcript.loaded.path, format!("field `captured_at`: {e}"))
        })?,
    };
    // The test command runs inside the replay, after the properties that do
    // not read its report; its report is stored before `tests_pass` reads it.
    let tests = spec.test.as_ref().map(|test| {
        move || -> Result<replay::Tested> {
            // The base first: a trial's own run then never shares the
            // machine with it.
            let baseline = if test.baseline {
                Some(baseline(spec, test, &lock.record.roots, trees)?)
            } else {
                None
            };
            let (mut run, report) = replay::run_tests(
                &spec.repo,
                &spec.base,
                Some((&transcript.patch, transcript.loaded.record.strip)),
                test,
                spec.ledger.root(),
                &lock.record.roots,
            )?;
            let junit = match report {
                Some(bytes) => Some((chain::store_junit(&spec.ledger, &spec.run, &bytes)?, bytes)),
                None => None,
            };
            let mut base_junit = None;
            if let Some((base_run, base_report)) = baseline {
                run.baseline = Some(crate::record::BaselineRun {
                    exit_code: base_run.exit_code,
                    stopped: base_run.stopped,
                });
                if let Some(bytes) = base_report {
                    base_junit = Some((
                        chain::store_base_junit(&spec.ledger, &spec.run, &bytes)?,
                        bytes,
                    ));
                }
            }
            Ok(replay::Tested {
                run,
                junit,
                base_junit,
            })
        }
    });
    let junit = match &spec.junit {
        Some(bytes) => Some((
            chain::store_junit(&spec.ledger, &spec.run, bytes)?,
            bytes.clone(),
        )),
        None => None,
    };
    let replayed = replay::run_with_tests(
        &Replay {
            source: replay::Source::Live,
            run: &spec.run,
            repo: &spec.repo,
            base: &spec.base,
            config: &spec.config,
            ledger_root: spec.ledger.root(),
            transcript: &transcript.loaded,
            patch: &transcript.patch,
            lock,
            sandbox,
            now,
            junit,
            test_run: None,
            base_junit: None,
            test_command: spec.test.as_ref().map(|t| t.command.as_str()),
            network: Some(crate::netns::status()),
        },
        trees,
        tests
            .as_ref()
            .map(|t| t as &dyn Fn() -> Result<replay::Tested>),
    )?;
    chain::store_properties(
        &spec.ledger,
        &spec.run,
        &replayed.record,
        &spec.config.bytes,
        &replayed.used,
    )
}

/// The test command's run on the base revision, unpatched: once per base
/// tree and command, however many trials share the tree (a `batch`).
/// Trials that need the same run wait for the first to finish it.
fn baseline(
    spec: &TrialSpec,
    test: &TestCommand,
    fixtures: &[String],
    trees: &TrialTrees,
) -> Result<replay::Baseline> {
    let key = test.baseline_key(fixtures);
    let mut done = trees
        .shared()
        .baselines
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(found) = done.get(&key) {
        return Ok(found.clone());
    }
    let ran = replay::run_tests(
        &spec.repo,
        &spec.base,
        None,
        test,
        spec.ledger.root(),
        fixtures,
    )?;
    done.insert(key, ran.clone());
    Ok(ran)
}

/// The exit code a property record implies on its own (what `replay`
/// exits with; `check` exits with the verdict's).
pub fn property_exit(record: &PropertyRecord) -> ExitCode {
    if !record.fixtures.is_empty() {
        ExitCode::FixtureMismatch
    } else if record
        .properties
        .iter()
        .all(|p| p.outcome == Outcome::Holds)
    {
        ExitCode::Ok
    } else {
        ExitCode::Reject
    }
}
