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
use crate::wasm::Lazy;
use time::OffsetDateTime;

/// One trial, resolved: everything `check` needs besides the records.
pub struct TrialSpec {
    pub run: RunId,
    pub repo: Repo,
    /// Full object id of the base revision.
    pub base: String,
    pub config: config::LoadedConfig,
    pub ledger: Ledger,
    /// A supplied JUnit report (`--junit`), already parsed once.
    pub junit: Option<Vec<u8>>,
    /// The project's test command (`--test-cmd`).
    pub test: Option<TestCommand>,
    /// The instant flake expiry is judged against; default the transcript's
    /// `captured_at`, so a replay reproduces byte for byte.
    pub now: Option<OffsetDateTime>,
    /// The evaluator's inputs: a test patch and the tests that decide.
    pub evaluation: crate::evaluation::Inputs,
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
    // A mistyped run id would otherwise be a permanent `incomplete`.
    if !spec.ledger.transcript(&spec.run).exists() {
        return Err(Error::Missing(format!(
            "no transcript receipt `{}` for run `{}`: capture the run first (or check the run id and `--ledger`)",
            spec.ledger.transcript(&spec.run).display(),
            spec.run
        )));
    }
    let mut notes = unmatched_test_globs(spec)?;
    // The report is kept even for a trial that goes no further, so a
    // flake observation can see which trial it came from.
    if let Some(bytes) = &spec.junit {
        chain::store_junit(&spec.ledger, &spec.run, bytes)?;
    }
    if let Some(transcript) = chain::read_transcript(&spec.ledger, &spec.run)? {
        // A receipt the checked-out commit holds was written by whoever
        // made the commit (a branch can commit a harmless one where the
        // ledger is), not by a capture here.
        if spec.repo.head_holds(&transcript.loaded.path)? {
            return Err(Error::Refused(format!(
                "the transcript receipt `{}` is committed in the repository's HEAD: a receipt is written by `capture`, never taken from a commit (a branch could commit one for a patch it does not make); remove it from the branch",
                transcript.loaded.path.display()
            )));
        }
        on_recorded_base(spec, &transcript)?;
        // A branch's patch is judged on that branch: with a fixed run id, a
        // second branch's capture fails (the record exists) and this check
        // would judge the first branch's patch without a word.
        if let Some(g) = &transcript.loaded.record.git
            && let Some(head) = spec.repo.head()
            && head != g.head
        {
            return Err(Error::Refused(format!(
                "run `{}` is the patch of `{}` up to commit {}, but the checkout's HEAD is {}: it is another commit's patch; capture this one (`capture --git BASE..HEAD` without `--run` names the run after HEAD) or check out {}",
                spec.run,
                crate::output::inert(&g.range),
                g.head,
                head,
                g.head
            )));
        }
        if transcript.loaded.record.complete {
            // One checkout of the base serves the lock and the replay.
            let trees = match base {
                Some(b) => TrialTrees::on(b.clone())?,
                None => TrialTrees::new(&spec.repo, &spec.base)?,
            };
            let lock = match chain::read_lock(&spec.ledger, &spec.run, &transcript.loaded)? {
                Some(l) => {
                    trusted_for(spec, &l)?;
                    Some(l)
                }
                None => match chain::write_lock(
                    &spec.ledger,
                    &spec.run,
                    &trees.base().tree,
                    &spec.config.config.fixtures.roots,
                    Some(&spec.base),
                    &transcript.loaded,
                    chain::LockExtras {
                        evaluation: match &spec.evaluation.patch {
                            Some(p) => Some(crate::evaluation::lock(
                                trees.base(),
                                &spec.base,
                                p,
                                &crate::runners::effective_globs(
                                    &spec.repo,
                                    &spec.base,
                                    &spec.config.config.tests.globs,
                                )?,
                                trees.tmp.path(),
                            )?),
                            None => None,
                        },
                        none: spec.config.config.fixtures.none.clone(),
                    },
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

/// A note for each configured test glob that matches no file tracked at
/// the base: the properties that protect tests would hold on it without
/// looking at anything (a glob in a syntax nobody reads, a typo, a moved
/// directory). The built-in defaults name many languages and are not
/// judged so.
fn unmatched_test_globs(spec: &TrialSpec) -> Result<Vec<String>> {
    let globs = &spec.config.config.tests.globs;
    if *globs == config::Tests::default().globs {
        return Ok(Vec::new());
    }
    let tracked = spec.repo.tracked_at(&spec.base)?;
    let mut notes = Vec::new();
    let mut matched_any = false;
    for g in globs {
        let m = config::test_glob(g)
            .map_err(|e| Error::data(std::path::Path::new(&spec.config.source), e))?;
        if tracked.iter().any(|p| m.is_match(p)) {
            matched_any = true;
        } else {
            notes.push(format!(
                "warning: test glob `{g}` ({}) matches no file tracked at the base revision: nothing is protected through it",
                spec.config.source
            ));
        }
    }
    // A gate that protects no test would say `review` to a deleted test:
    // an error that names the fix, never a warning beside a verdict.
    if !matched_any && !globs.is_empty() {
        return Err(Error::Refused(format!(
            "no test glob of `[tests] globs` ({}) matches a file tracked at the base revision {}: tests_not_deleted and assertions_not_weakened would protect no test; list where the tests are (`agent-ledger init` on a checkout writes the globs its runners use)",
            spec.config.source, spec.base
        )));
    }
    Ok(notes)
}

/// Refuses a lock the trial did not take itself unless it describes the
/// trial's own inputs: taken from its base revision, with the roots the
/// base configuration names, and the evaluator's test patch it runs with.
/// A lock hashed from a working tree (`lock --run`) may already hold the
/// agent's fixture edit, so trusting it would compare the patch with
/// itself.
fn trusted_for(spec: &TrialSpec, lock: &Loaded<FixtureLock>) -> Result<()> {
    let refuse = |why: String| {
        Err(Error::Refused(format!(
            "the fixture lock `{}` {why}, so it does not describe this trial's base; remove it and let `check` take its own from the base revision",
            lock.path.display()
        )))
    };
    let l = &lock.record;
    if l.base_revision.as_deref() != Some(spec.base.as_str()) {
        return refuse(match &l.base_revision {
            Some(b) => format!(
                "was taken from revision {b}, not the trial's base {}",
                spec.base
            ),
            None => "was taken from a working tree, not from a revision".into(),
        });
    }
    let roots = spec
        .config
        .config
        .fixtures
        .roots
        .iter()
        .map(|r| crate::lock::normalize_root(r))
        .collect::<Result<Vec<_>>>()?;
    if l.roots != roots {
        return refuse(format!(
            "locks the roots {:?}, but the base configuration names {:?}",
            l.roots, roots
        ));
    }
    let want = spec.evaluation.patch.as_ref().map(|p| p.sha256.as_str());
    let have = l.evaluation.as_ref().map(|e| e.patch_sha256.as_str());
    if want != have {
        return refuse(format!(
            "holds evaluator's test patch {}, but the trial runs with {}",
            have.unwrap_or("none"),
            want.unwrap_or("none")
        ));
    }
    Ok(())
}

/// A patch taken from commits (`capture --git`) is judged on the merge
/// base it was taken from and on no other revision: on another base it
/// would be a different change (a later base may already hold part of it,
/// or lack what it builds on).
///
/// The receipt is checked against the repository too: the merge base of
/// its two commits and the diff from it must be exactly what it records
/// and stores, so an edited receipt or patch cannot pass for the branch.
fn on_recorded_base(spec: &TrialSpec, transcript: &Transcript) -> Result<()> {
    let Some(g) = &transcript.loaded.record.git else {
        return Ok(());
    };
    if g.merge_base != spec.base {
        return Err(Error::Refused(format!(
            "run `{}` is the patch of `{}` from its merge base {}, but the trial's base is {}: leave `--base` out (the recorded merge base is used) or capture the range again",
            spec.run,
            crate::output::inert(&g.range),
            g.merge_base,
            spec.base
        )));
    }
    let (merge_base, patch) = spec.repo.range_patch(&g.base, &g.head)?;
    if merge_base != g.merge_base || patch != transcript.patch {
        return Err(Error::data(
            &transcript.loaded.path,
            format!(
                "the receipt says its patch is the diff of {}..{} from merge base {}, but that diff {}: the receipt or its patch was changed after capture",
                g.base,
                g.head,
                g.merge_base,
                if merge_base != g.merge_base {
                    format!("starts at {merge_base}")
                } else {
                    "is not the stored patch".to_string()
                }
            ),
        ));
    }
    Ok(())
}

/// Runs the replay with plugins as configured and writes (or matches) the
/// property record, archiving what an auditor needs to re-run it.
pub fn replay(
    spec: &TrialSpec,
    sandbox: &crate::wasm::Sandbox,
    transcript: &Transcript,
    lock: &Loaded<FixtureLock>,
    trees: &TrialTrees,
) -> Result<Loaded<PropertyRecord>> {
    on_recorded_base(spec, transcript)?;
    let now = match spec.now {
        Some(n) => n,
        None => crate::clock::parse_time(&transcript.loaded.record.captured_at).map_err(|e| {
            Error::data(&transcript.loaded.path, format!("field `captured_at`: {e}"))
        })?,
    };
    // The test command runs inside the replay, after the properties that do
    // not read its report; its report is stored before `tests_pass` reads it.
    let eval = match (&spec.evaluation.patch, &lock.record.evaluation) {
        (Some(p), Some(l)) => Some((p, l)),
        (None, None) => None,
        _ => {
            return Err(Error::Refused(format!(
                "the fixture lock `{}` and the trial disagree on the evaluator's test patch",
                lock.path.display()
            )));
        }
    };
    let evaluation = if spec.evaluation.is_empty() {
        None
    } else {
        Some(crate::record::Evaluation {
            patch: match &spec.evaluation.patch {
                Some(p) => Some(chain::store_eval_patch(&spec.ledger, &spec.run, &p.bytes)?),
                None => None,
            },
            paths: lock
                .record
                .evaluation
                .as_ref()
                .map(|e| e.paths.clone())
                .unwrap_or_default(),
            agent_overwritten: Vec::new(),
            required: spec.evaluation.required.clone(),
        })
    };
    let tests = spec.test.as_ref().map(|test| {
        move || -> Result<replay::TestResults> {
            // The base first: a trial's own run then never shares the
            // machine with it.
            let baseline = if test.baseline {
                Some(baseline(spec, test, &lock.record.roots, eval, trees)?)
            } else {
                None
            };
            let (mut run, report, log) = replay::run_tests(
                trees.shared(),
                Some((&transcript.patch, transcript.loaded.record.strip)),
                eval,
                test,
                spec.ledger.root(),
                &lock.record.roots,
            )?;
            run.log = Some(chain::store_test_log(&spec.ledger, &spec.run, &log)?);
            let junit = match report {
                Some(bytes) => Some((chain::store_junit(&spec.ledger, &spec.run, &bytes)?, bytes)),
                None => None,
            };
            let mut base_junit = None;
            if let Some((base_run, base_report)) = baseline {
                run.baseline = Some(crate::record::BaselineRun {
                    exit_code: base_run.exit_code,
                    stopped: base_run.stopped,
                    stdout_tail: base_run.stdout_tail,
                    stderr_tail: base_run.stderr_tail,
                });
                if let Some(bytes) = base_report {
                    base_junit = Some((
                        chain::store_base_junit(&spec.ledger, &spec.run, &bytes)?,
                        bytes,
                    ));
                }
            }
            Ok(replay::TestResults {
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
            evaluation: evaluation.as_ref(),
        },
        trees,
        tests
            .as_ref()
            .map(|t| t as &dyn Fn() -> Result<replay::TestResults>),
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
    eval: Option<(
        &crate::evaluation::TestPatch,
        &crate::record::LockedEvaluation,
    )>,
    trees: &TrialTrees,
) -> Result<replay::Baseline> {
    let eval_sha = eval.map(|(p, _)| p.sha256.as_str());
    let key = test.baseline_key(fixtures, eval_sha);
    let mut done = trees
        .shared()
        .baselines
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(found) = done.get(&key) {
        return Ok(found.clone());
    }
    // Across processes and batches: an authentic cached run of the same
    // base, evaluator patch, command and environment.
    let disk_key = replay::baselines::key(&spec.base, test, fixtures, eval_sha);
    if let Some(dir) = &test.cache_dir
        && let Some(found) = replay::baselines::load(dir, &disk_key)
    {
        done.insert(key, found.clone());
        return Ok(found);
    }
    // The base's output is not kept: its tails are in the record.
    let (run, report, _) = replay::run_tests(
        trees.shared(),
        None,
        eval,
        test,
        spec.ledger.root(),
        fixtures,
    )?;
    let ran = (run, report);
    if let Some(dir) = &test.cache_dir {
        replay::baselines::store(dir, &disk_key, &ran);
    }
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
