//! Re-running an archived trial: its replay from the stored configuration,
//! instant and reports, and (`verify --rerun-tests`) its test command run
//! again in the sandbox, with the outcomes compared.

use super::Verifier;
use crate::capture::read_stored;
use crate::config;
use crate::exit::{Error, Result};
use crate::git::Repo;
use crate::ledger::{Fetched, Loaded, RunId, read_object};
use crate::record::{FixtureLock, PropertyRecord, TranscriptReceipt};
use crate::replay::{self, Replay, Source, TrialTrees};
use crate::wasm::Sandbox;

/// What re-running an archived replay works on.
pub(super) struct Archived<'r> {
    pub(super) repo: &'r Repo,
    pub(super) sandbox: &'r Sandbox,
    pub(super) run: &'r RunId,
    pub(super) transcript: &'r Loaded<TranscriptReceipt>,
    pub(super) lock: &'r Loaded<FixtureLock>,
    pub(super) props: &'r Loaded<PropertyRecord>,
    pub(super) patch: &'r [u8],
    pub(super) trees: &'r TrialTrees,
}

/// A replay's reports and test run (the report, the run, the base's report).
type Reports = (
    Option<(crate::record::StoredFile, Vec<u8>)>,
    Option<crate::record::TestRun>,
    Option<(crate::record::StoredFile, Vec<u8>)>,
);

impl Verifier<'_> {
    /// The replay of an archived run again, from its stored configuration
    /// and instant, with `reports` (or, with `tests`, the test command run
    /// again): the property record it gives.
    pub(super) fn archived_replay(
        &self,
        a: Archived<'_>,
        (junit, test_run, base_junit): Reports,
        tests: Option<&dyn Fn() -> Result<crate::replay::TestResults>>,
    ) -> Result<replay::Replayed> {
        let record = &a.props.record;
        let objects = self.ledger.objects();
        let config = self.archived_config(record)?;
        let now = crate::clock::parse_time(&record.now)
            .map_err(|e| Error::data(&a.props.path, format!("field `now`: {e}")))?;
        replay::run_with_tests(
            &Replay {
                source: Source::Archive {
                    objects: &objects,
                    record,
                },
                run: a.run,
                repo: a.repo,
                base: &record.base_revision,
                config: &config,
                ledger_root: self.ledger.root(),
                transcript: a.transcript,
                patch: a.patch,
                lock: a.lock,
                sandbox: a.sandbox,
                now,
                junit,
                test_run,
                base_junit,
                test_command: record.test_run.as_ref().map(|r| r.command.as_str()),
                network: record.network.clone(),
                evaluation: record.evaluation.as_ref(),
            },
            a.trees,
            tests,
        )
    }

    /// The configuration a property record names, from the object store.
    fn archived_config(&self, record: &PropertyRecord) -> Result<config::LoadedConfig> {
        let objects = self.ledger.objects();
        let bytes = match read_object(&objects, &record.config_sha256)? {
            Fetched::Found(bytes) => bytes,
            Fetched::Unavailable(why) => return Err(Error::Missing(why)),
        };
        if bytes.is_empty() {
            return Ok(config::LoadedConfig::absent(
                "the archived configuration (none)".into(),
            ));
        }
        let source = objects.join(&record.config_sha256).display().to_string();
        config::LoadedConfig::from_bytes(bytes, source)
    }

    /// Runs the recorded test command again, in the sandbox, on the
    /// archived patch (and on the base, when the record has a baseline),
    /// re-judges the property record with the new reports, and requires
    /// every property's outcome and every required test's transition to
    /// be as recorded. Nothing is written to the ledger.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rerun_matches(
        &self,
        repo: &Repo,
        sandbox: &Sandbox,
        run: &RunId,
        transcript: &Loaded<TranscriptReceipt>,
        lock: &Loaded<FixtureLock>,
        props: &Loaded<PropertyRecord>,
        patch: &[u8],
        template: &crate::replay::TestCommand,
    ) -> Result<()> {
        let record = &props.record;
        let Some(recorded) = &record.test_run else {
            return Ok(());
        };
        let log_parser = recorded.log_parser;
        let test = crate::replay::TestCommand {
            command: recorded.command.clone(),
            baseline: recorded.baseline.is_some(),
            log_parser,
            cache_dir: None,
            echo: false,
            ..template.clone()
        };
        let eval_patch = match record.evaluation.as_ref().and_then(|e| e.patch.as_ref()) {
            Some(stored) => Some(crate::evaluation::TestPatch::new(
                read_stored(&props.path, stored)?,
                props.path.display().to_string(),
            )?),
            None => None,
        };
        let eval = match (&eval_patch, &lock.record.evaluation) {
            (Some(p), Some(l)) => Some((p, l)),
            (None, None) => None,
            _ => {
                return Err(Error::data(
                    &props.path,
                    "the record and its lock disagree on the evaluator's test patch",
                ));
            }
        };
        let stored_as = |name: &str, bytes: &[u8]| crate::record::StoredFile {
            file: name.to_string(),
            sha256: crate::digest::sha256_hex(bytes),
            bytes: bytes.len() as u64,
        };
        let roots = &lock.record.roots;
        let trees = TrialTrees::new(repo, &record.base_revision)?;
        let tests = || -> Result<crate::replay::TestResults> {
            let baseline = if test.baseline {
                let (run, report, _) = replay::run_tests(
                    trees.shared(),
                    None,
                    eval,
                    &test,
                    self.ledger.root(),
                    roots,
                )?;
                Some((run, report))
            } else {
                None
            };
            let (mut ran, report, _) = replay::run_tests(
                trees.shared(),
                Some((patch, transcript.record.strip)),
                eval,
                &test,
                self.ledger.root(),
                roots,
            )?;
            let mut base_junit = None;
            if let Some((base_run, base_report)) = baseline {
                ran.baseline = Some(crate::record::BaselineRun {
                    exit_code: base_run.exit_code,
                    stopped: base_run.stopped,
                    stdout_tail: base_run.stdout_tail,
                    stderr_tail: base_run.stderr_tail,
                });
                base_junit = base_report.map(|b| (stored_as("base-junit.xml", &b), b));
            }
            Ok(crate::replay::TestResults {
                run: ran,
                junit: report.map(|b| (stored_as("junit.xml", &b), b)),
                base_junit,
            })
        };
        let again = self.archived_replay(
            Archived {
                repo,
                sandbox,
                run,
                transcript,
                lock,
                props,
                patch,
                trees: &trees,
            },
            (None, None, None),
            Some(&tests),
        )?;
        let outcomes = |r: &PropertyRecord| -> Vec<(String, String)> {
            r.properties
                .iter()
                .map(|p| {
                    let outcome = serde_json::to_value(p.outcome)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    (p.name.clone(), outcome)
                })
                .collect()
        };
        let (was, now) = (outcomes(record), outcomes(&again.record));
        if was != now {
            let differ: Vec<String> = was
                .iter()
                .zip(&now)
                .filter(|(a, b)| a != b)
                .map(|((id, a), (_, b))| format!("`{id}` is {b} (the record says {a})"))
                .collect();
            return Err(Error::data(
                &props.path,
                format!(
                    "the test command run again gives other outcomes: {}",
                    if differ.is_empty() {
                        "other properties".to_string()
                    } else {
                        differ.join("; ")
                    }
                ),
            ));
        }
        let required = |r: &PropertyRecord| {
            r.tests
                .as_ref()
                .map(|t| serde_json::to_value(&t.required).unwrap_or_default())
        };
        if required(record) != required(&again.record) {
            return Err(Error::data(
                &props.path,
                "the test command run again gives the required tests other transitions",
            ));
        }
        Ok(())
    }
}
