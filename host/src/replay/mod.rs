//! Replay: apply the frozen patch to the base revision in a temporary tree,
//! keep it in bounds, compare the fixture lock, run every property in the
//! sandbox, and produce the property record.
//!
//! The user's checkout never sees the trial: trees live in a temp dir (removed
//! on drop, also on error) with their own git index and object directory.
//! Configuration and plugins come from the base revision (or from explicit
//! files outside the tree), never from the patched tree.
//!
//! [`run`] is the one entry point: `check` calls it with plugins as
//! configured (`Source::Live`), `verify --replay` with the plugins a stored
//! record names (`Source::Archive`).
//!
//! - `bounds`: paths that leave the tree, protected paths, symlinks;
//! - `property`: one property on the trial (limits, seed, inputs);
//! - `self_test`: a property on its known-bad patch;
//! - `artifacts`: where plugin and known-bad bytes come from;
//! - `test_cmd`: the project's own test command, in its sandbox.
//!
//! The test command runs after every property that does not read its
//! report and before those that do (`tests_pass`): it cannot touch what the
//! others read, and its report still feeds `tests_pass`. A stored record
//! whose report came from a test command is re-run in the same two phases.

mod artifacts;
pub mod baselines;
mod evaluator;
mod pack_cache;
pub use evaluator::EVALUATOR_FILES;
use evaluator::evaluator_files;
mod bounds;
mod idmap;
pub(crate) use idmap::detach_mounts_under;
mod property;
mod self_test;
pub(crate) mod test_cmd;
mod test_report;
pub(crate) mod test_tree;
mod trees;
mod unseen;

use test_report::{complaint, runner_integrity};
pub use trees::{BaseTree, Baseline, TrialTrees};

pub use test_cmd::{
    DEFAULT_MAX_PROCS as DEFAULT_TEST_MAX_PROCS, DEFAULT_MEMORY_MIB as DEFAULT_TEST_MEMORY_MIB,
    DEFAULT_OUTPUT_CAP_MIB as DEFAULT_TEST_OUTPUT_CAP_MIB,
    DEFAULT_TIMEOUT_SECS as DEFAULT_TEST_TIMEOUT_SECS, TestCommand, run_tests,
};

use crate::config::{self, Config, PropertyConfig};
use crate::digest::sha256_hex;
use crate::exit::{Error, Result};
use crate::git::{Applied, Checkout, Repo};
use crate::ledger::{Loaded, RunId};
use crate::lock;
use crate::record::{
    Drift, Finding, FixtureLock, Outcome, PropertyRecord, PropertyResult, SCHEMA, StoredFile,
    TestRun, TranscriptReceipt,
};
use crate::wasm::{Change, ChangeKind, Mounts, RunDetails, Sandbox, TrialInput};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

/// The name of the host-side property that makes the tree.
pub const PATCH_APPLIES: &str = "patch_applies";

/// Where plugins and known-bad patches come from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// As configured: built in, the base revision, or an absolute path.
    Live,
    /// From a ledger's content-addressed objects, by the digests a stored
    /// property record names (re-running an archived replay).
    Archive {
        objects: &'a Path,
        record: &'a PropertyRecord,
    },
}

/// Everything one replay reads.
pub struct Replay<'a> {
    pub source: Source<'a>,
    pub run: &'a RunId,
    pub repo: &'a Repo,
    /// Full object id of the base revision.
    pub base: &'a str,
    pub config: &'a config::LoadedConfig,
    /// The ledger directory: always protected when it lies in the repository.
    pub ledger_root: &'a Path,
    pub transcript: &'a Loaded<TranscriptReceipt>,
    pub patch: &'a [u8],
    pub lock: &'a Loaded<FixtureLock>,
    pub sandbox: &'a Sandbox,
    /// The instant flake-freeze expiry is judged against.
    pub now: time::OffsetDateTime,
    /// The test report, when the trial has one, and how it was produced.
    pub junit: Option<(StoredFile, Vec<u8>)>,
    pub test_run: Option<TestRun>,
    /// The report the test command wrote on the base revision.
    pub base_junit: Option<(StoredFile, Vec<u8>)>,
    /// The test command, whose own files in the tree are protected.
    pub test_command: Option<&'a str>,
    /// The replaying process's network (`netns::status`), or, re-running an
    /// archived replay, the one on record: where the auditor's process runs
    /// is not part of the judgement.
    pub network: Option<crate::record::ReplayNetwork>,
    /// The evaluator's inputs (its test patch as stored, its paths, the
    /// required tests); `agent_overwritten` is filled by the replay.
    pub evaluation: Option<&'a crate::record::Evaluation>,
}

/// What the test command produced: how it ran (on the base too), and its
/// reports as stored.
pub struct TestResults {
    pub run: TestRun,
    pub junit: Option<(StoredFile, Vec<u8>)>,
    pub base_junit: Option<(StoredFile, Vec<u8>)>,
}

impl<'a> Replay<'a> {
    /// The same replay with other reports and test run.
    fn with_report(
        &self,
        junit: Option<(StoredFile, Vec<u8>)>,
        test_run: Option<TestRun>,
        base_junit: Option<(StoredFile, Vec<u8>)>,
    ) -> Replay<'a> {
        Replay {
            source: self.source,
            run: self.run,
            repo: self.repo,
            base: self.base,
            config: self.config,
            ledger_root: self.ledger_root,
            transcript: self.transcript,
            patch: self.patch,
            lock: self.lock,
            sandbox: self.sandbox,
            now: self.now,
            junit,
            test_run,
            base_junit,
            test_command: self.test_command,
            network: self.network.clone(),
            evaluation: self.evaluation,
        }
    }
}

/// What a replay produced: the property record (not yet written) and every
/// plugin and known-bad patch it read, by sha256, for the ledger's archive.
pub struct Replayed {
    pub record: PropertyRecord,
    pub used: BTreeMap<String, Vec<u8>>,
    /// How each property's run on the trial went on this machine (wall
    /// time, peak memory), by property name: not part of the record.
    pub runs: BTreeMap<String, RunDetails>,
}

/// A trial's temporary directory (stale ones of killed runs are swept).
pub(crate) fn tempdir() -> Result<crate::scratch::ScratchDir> {
    crate::scratch::make("agent-ledger-trial-")
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::write(path, e))
}

/// Which optional inputs a trial has.
#[derive(Debug, Clone, Copy, Default)]
pub struct Present {
    pub trace: bool,
    pub junit: bool,
}

/// The properties that run: the configured ones, or the built-ins whose
/// needed inputs the trial has (`span_bijection` needs a trace, `tests_pass`
/// a test report; each built-in declares this in its own Cargo.toml).
pub fn properties(config: &Config, present: Present) -> Vec<PropertyConfig> {
    if !config.properties.is_empty() {
        return config.properties.clone();
    }
    crate::plugins::BUILTINS
        .iter()
        .filter(|b| {
            b.needs.iter().all(|need| match need {
                crate::plugins::Need::Trace => present.trace,
                crate::plugins::Need::Junit => present.junit,
            })
        })
        .map(|b| PropertyConfig {
            name: b.name.to_string(),
            plugin: format!("builtin:{}", b.name),
            known_bad: None,
            config: BTreeMap::new(),
            fuel: None,
            memory_mb: None,
            timeout_ms: None,
        })
        .collect()
}

/// Whether a property reads the test report: a built-in that declares it
/// needs one (`tests_pass`). It runs after the test command.
fn needs_report(p: &PropertyConfig) -> bool {
    p.plugin.strip_prefix("builtin:").is_some_and(|name| {
        crate::plugins::BUILTINS
            .iter()
            .any(|b| b.name == name && b.needs.contains(&crate::plugins::Need::Junit))
    })
}

/// The host-side property that fails a trial whose test command was
/// stopped or wrote no report.
pub const TEST_COMMAND: &str = "test_command";

/// The host-side property that fails a trial whose test results are not
/// the runner's own account (`TestRun::subverted`).
pub const RUNNER_INTEGRITY: &str = "runner_integrity";

/// One replay in progress: the spec and what it has read so far.
struct Session<'r, 'a> {
    spec: &'r Replay<'a>,
    used: &'r Mutex<BTreeMap<String, Vec<u8>>>,
    runs: &'r Mutex<BTreeMap<String, RunDetails>>,
}

/// Runs the replay on `trees` and returns the property record.
pub fn run(spec: &Replay<'_>, trees: &TrialTrees) -> Result<Replayed> {
    run_with_tests(spec, trees, None)
}

/// [`run`], running the test command with `tests` once the properties that
/// do not read its report have run (`spec.junit` and `spec.test_run` are
/// then what `tests` returns).
pub fn run_with_tests(
    spec: &Replay<'_>,
    trees: &TrialTrees,
    tests: Option<&dyn Fn() -> Result<TestResults>>,
) -> Result<Replayed> {
    let used = Mutex::new(BTreeMap::new());
    let runs = Mutex::new(BTreeMap::new());
    let session = Session {
        spec,
        used: &used,
        runs: &runs,
    };
    let record = session.replay(trees, tests)?;
    Ok(Replayed {
        record,
        used: used.into_inner().unwrap_or_else(|p| p.into_inner()),
        runs: runs.into_inner().unwrap_or_else(|p| p.into_inner()),
    })
}

impl Session<'_, '_> {
    fn replay(
        &self,
        trees: &TrialTrees,
        tests: Option<&dyn Fn() -> Result<TestResults>>,
    ) -> Result<PropertyRecord> {
        let spec = self.spec;
        let tmp = &trees.tmp;
        let base_tree = trees.base();
        let inputs = tmp.path().join("inputs");
        std::fs::create_dir_all(&inputs).map_err(|e| Error::write(&inputs, e))?;
        let patch_file = inputs.join("patch.diff");
        write_file(&patch_file, spec.patch)?;
        write_file(
            &inputs.join("transcript.json"),
            &crate::ledger::to_bytes(&unseen::transcript_view(&spec.transcript.record, None)),
        )?;
        write_file(&inputs.join("lock.json"), &read_bytes(&spec.lock.path)?)?;
        let mut present = Present::default();
        if let Some(trace) = &spec.transcript.record.trace {
            write_file(
                &inputs.join("trace.jsonl"),
                &crate::capture::read_stored(&spec.transcript.path, trace)?,
            )?;
            present.trace = true;
        }
        // A report from a test command appears only after the first phase.
        let two_phases = tests.is_some() || spec.test_run.is_some();
        if let Some((_, bytes)) = &spec.junit
            && !two_phases
        {
            write_file(&inputs.join("junit.xml"), bytes)?;
            present.junit = true;
        }
        let frozen = self.frozen_tests(&inputs)?;

        let mut record = PropertyRecord {
            schema: SCHEMA,
            record: "properties".into(),
            run_id: spec.run.to_string(),
            transcript_sha256: spec.transcript.sha256.clone(),
            lock_sha256: spec.lock.sha256.clone(),
            base_revision: spec.base.to_string(),
            config_sha256: spec.config.sha256.clone(),
            now: crate::clock::format_time(spec.now),
            junit: spec.junit.as_ref().map(|(stored, _)| stored.clone()),
            base_junit: spec.base_junit.as_ref().map(|(stored, _)| stored.clone()),
            test_run: spec.test_run.clone(),
            evaluation: spec.evaluation.cloned(),
            tests: None,
            fixtures: Drift::default(),
            properties: Vec::new(),
            network: spec.network.clone(),
        };
        let mut applies = property::host_result(PATCH_APPLIES);
        applies.inputs = BTreeMap::from([
            ("base_revision".into(), spec.base.to_string()),
            ("patch".into(), sha256_hex(spec.patch)),
            ("strip".into(), spec.transcript.record.strip.to_string()),
        ]);

        let runners = match spec.test_command {
            Some(c) => bounds::runner_files(c, &base_tree.tree, &spec.config.config.tests.globs)?,
            None => bounds::Runners::default(),
        };
        let protected = bounds::protected(spec.config, spec.repo, spec.ledger_root, &runners)?;
        let strip = spec.transcript.record.strip;
        let mut findings = bounds::before_apply(spec.patch, strip, &protected);
        let patched = base_tree.link_copy(&tmp.path().join("patched"))?;
        let mut changes = Vec::new();
        if findings.is_empty() {
            match patched.apply(&patch_file, strip)? {
                Applied::Clean => {
                    changes = changes_of(&patched, spec.base)?;
                    write_modes(&inputs, &patched, spec.base)?;
                    findings.extend(bounds::after_apply(
                        &patched, base_tree, &changes, &protected, &runners,
                    )?);
                }
                Applied::Refused(msg) => findings.push(Finding {
                    path: String::new(),
                    line: None,
                    message: format!("git apply refused the patch: {msg}"),
                    frozen: false,
                }),
            }
        }
        if !findings.is_empty() {
            applies.outcome = Outcome::Miss;
            findings.sort();
            applies.findings = findings;
            record.properties.push(applies);
            return Ok(record);
        }
        record.properties.push(applies);
        let test_globs = spec
            .lock
            .record
            .evaluation
            .as_ref()
            .map(|e| e.test_globs.clone())
            .unwrap_or_default();
        if let Some(evaluation) = &mut record.evaluation
            && !evaluation.paths.is_empty()
        {
            record
                .properties
                .push(evaluator_files(evaluation, &changes, &test_globs)?);
        }

        // Drift: the fixtures are compared before any property is trusted.
        let scanned = lock::scan(&patched.tree, &spec.lock.record.roots)?;
        record.fixtures = lock::compare(&spec.lock.record.files, &scanned.entries);
        if !record.fixtures.is_empty() {
            return Ok(record);
        }

        // The in-tree known-bad patches are shown to no plugin, in no run.
        let unseen = unseen::known_bad_paths(&spec.config.config.properties);
        let base_view;
        let base_mount = if unseen.is_empty() {
            &base_tree.tree
        } else {
            base_view = base_tree.link_copy(&tmp.path().join("base-view"))?;
            unseen::hide(&base_view.tree, &unseen)?;
            &base_view.tree
        };
        unseen::hide(&patched.tree, &unseen)?;
        if let Some(view) = unseen::lock_view(&spec.lock.record, &unseen) {
            write_file(&inputs.join("lock.json"), &crate::ledger::to_bytes(&view))?;
        }
        let mounts = Mounts {
            patched: &patched.tree,
            base: base_mount,
            inputs: &inputs,
        };
        let test_globs =
            crate::runners::effective_globs(spec.repo, spec.base, &spec.config.config.tests.globs)?
                .join("\n");
        let stage = property::Stage {
            base_tree,
            mounts: &mounts,
            unseen: &unseen,
            test_globs: &test_globs,
        };
        let trial = TrialInput {
            run_id: spec.run.to_string(),
            base_revision: spec.base.to_string(),
            patch: spec.patch.to_vec(),
            changes,
            config: Vec::new(),
        };
        let run_all = |session: &Session<'_, '_>, props: &[PropertyConfig], phase: &str| {
            props
                .par_iter()
                .enumerate()
                .map(|(i, p)| {
                    session.run_property(
                        p,
                        &trial,
                        &frozen,
                        &stage,
                        &tmp.path().join(format!("known-bad-{phase}{i}")),
                    )
                })
                .collect::<Result<Vec<PropertyResult>>>()
        };
        if !two_phases {
            let props = properties(&spec.config.config, present);
            record.properties.extend(run_all(self, &props, "")?);
            record.tests = self.transitions(spec.junit.as_ref(), None)?;
            return Ok(record);
        }

        // First the properties that do not read the report, seeing none.
        let first_spec = spec.with_report(None, None, None);
        let first_session = Session {
            spec: &first_spec,
            used: self.used,
            runs: self.runs,
        };
        let first: Vec<PropertyConfig> = properties(&spec.config.config, present)
            .into_iter()
            .filter(|p| !needs_report(p))
            .collect();
        let mut first = run_all(&first_session, &first, "a")?.into_iter();

        // Then the test command, then the properties that read its report.
        let (test_run, junit, base_junit) = match tests {
            Some(tests) => {
                let tested = tests()?;
                (Some(tested.run), tested.junit, tested.base_junit)
            }
            None => (
                spec.test_run.clone(),
                spec.junit.clone(),
                spec.base_junit.clone(),
            ),
        };
        if let Some((_, bytes)) = &junit {
            write_file(&inputs.join("junit.xml"), bytes)?;
            present.junit = true;
        }
        if let Some((_, bytes)) = &base_junit {
            write_file(&inputs.join("base-junit.xml"), bytes)?;
        }
        record.junit = junit.as_ref().map(|(stored, _)| stored.clone());
        record.base_junit = base_junit.as_ref().map(|(stored, _)| stored.clone());
        record.test_run = test_run.clone();
        record.tests = self.transitions(junit.as_ref(), base_junit.as_ref())?;
        let complaint = complaint(test_run.as_ref(), junit.as_ref(), base_junit.as_ref());
        let subverted = runner_integrity(test_run.as_ref());
        let second_spec = spec.with_report(junit, test_run, base_junit);
        let second_session = Session {
            spec: &second_spec,
            used: self.used,
            runs: self.runs,
        };
        let all = properties(&spec.config.config, present);
        let later: Vec<PropertyConfig> = all.iter().filter(|p| needs_report(p)).cloned().collect();
        let mut later = run_all(&second_session, &later, "b")?.into_iter();
        for p in &all {
            let next = if needs_report(p) {
                later.next()
            } else {
                first.next()
            };
            record.properties.extend(next);
        }
        record.properties.extend(subverted);
        if let Some(message) = complaint {
            let mut result = property::host_result(TEST_COMMAND);
            result.outcome = Outcome::Error;
            result.error = Some(message);
            record.properties.push(result);
        }
        Ok(record)
    }

    /// Each test's transition, for the record (the same reading
    /// `tests_pass` makes); `None` without a report. A report that does not
    /// parse is left to `tests_pass`, which says so.
    fn transitions(
        &self,
        junit: Option<&(StoredFile, Vec<u8>)>,
        base: Option<&(StoredFile, Vec<u8>)>,
    ) -> Result<Option<crate::record::TestTransitions>> {
        let Some((_, report)) = junit else {
            return Ok(None);
        };
        let required = self
            .spec
            .evaluation
            .map(|e| e.required.clone())
            .unwrap_or_default();
        Ok(crate::junit::transitions(report, base.map(|(_, b)| b.as_slice()), &required).ok())
    }

    /// The freeze file at the base revision (the patch can never carry it),
    /// copied to the inputs; returns the tests frozen at `now`.
    fn frozen_tests(&self, inputs: &Path) -> Result<Vec<String>> {
        let spec = self.spec;
        let file = &spec.config.config.flakes.file;
        let Some(bytes) = spec.repo.read_at(spec.base, file)? else {
            return Ok(Vec::new());
        };
        write_file(&inputs.join("flakes.toml"), &bytes)?;
        let source = format!("{file} at {}", spec.base);
        Ok(crate::freeze::FreezeFile::parse(&bytes, Path::new(&source))?.active_tests(spec.now))
    }
}

fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::read(path, e))
}

/// The paths a patched checkout changed relative to `base`, as properties see
/// them.
/// Writes `modes.json` into a property's `/inputs`: the git modes of every
/// path `co` changed since `base`.
fn write_modes(inputs: &Path, co: &Checkout, base: &str) -> Result<()> {
    let paths = co
        .modes_since(base)?
        .into_iter()
        .map(|(path, base, patched)| crate::record::PathModes {
            path: String::from_utf8_lossy(&path).into_owned(),
            path_hex: std::str::from_utf8(&path)
                .is_err()
                .then(|| hex::encode(&path)),
            base,
            patched,
        })
        .collect();
    let modes = crate::record::TreeModes {
        schema: 1,
        record: "modes".into(),
        paths,
    };
    let bytes = serde_json::to_vec(&modes)
        .map_err(|e| Error::Internal(format!("cannot encode modes.json: {e}")))?;
    write_file(&inputs.join("modes.json"), &bytes)
}

fn changes_of(co: &Checkout, base: &str) -> Result<Vec<Change>> {
    Ok(co
        .changes_since(base)?
        .into_iter()
        .map(|c| Change {
            kind: match c.status {
                b'A' => ChangeKind::Added,
                b'D' => ChangeKind::Deleted,
                b'R' => ChangeKind::Renamed,
                b'C' => ChangeKind::Copied,
                b'T' => ChangeKind::TypeChanged,
                _ => ChangeKind::Modified,
            },
            path: c.path,
            old_path: c.old_path,
        })
        .collect())
}
