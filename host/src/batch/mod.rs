//! `batch`: many trials from one manifest, as `capture` + `check` would run
//! them one by one, with the same records, but sharing what can be shared:
//! one checkout per (repository, base), one engine and one compiled copy of
//! each plugin per process, trials in parallel.
//!
//! The manifest is JSONL, one trial per line (blank lines and lines
//! starting with `#` are skipped); see [`ManifestLine`] for the fields. A bad line
//! is an error naming its line and does not stop the other trials.

use crate::capture::{CaptureInput, capture};
use crate::check::{TrialSpec, check_on};
use crate::exit::{Error, ExitCode, Result};
use crate::ledger::{Ledger, RunId};
use crate::provider::BodyFormat;
use crate::record::Verdict;
use crate::replay::BaseTree;
use crate::resolve::{ConfigAt, Needs};
use serde::Serialize;

mod manifest;
mod partition;
use manifest::confine;
pub use manifest::{MANIFEST_SCHEMA, ManifestLine, read_manifest};
pub use partition::Partition;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How the batch runs.
pub struct Options {
    /// The ledger every trial writes to; `None`: each repository's own.
    pub ledger: Option<PathBuf>,
    pub partition: Option<Partition>,
    /// Trials at once.
    pub jobs: usize,
    pub cache_dir: Option<PathBuf>,
    pub allow_unsandboxed: bool,
    pub test_timeout: std::time::Duration,
    pub test_output_cap: u64,
    /// Bytes (`--test-memory`).
    pub test_memory: u64,
    pub test_max_procs: u64,
    /// Run each test command on its base too (`--no-test-baseline` off).
    pub test_baseline: bool,
    /// Directories besides the manifest's own that the files a line names
    /// may lie in (`--manifest-root`), canonical.
    pub roots: Vec<PathBuf>,
}

/// The trials of the manifest this shard runs, and the lines that could
/// not be read.
fn select(manifest: &Path, options: &Options) -> Result<(Vec<Trial>, Vec<TrialOutcome>)> {
    let mut trials = Vec::new();
    let mut bad = Vec::new();
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let dir = std::fs::canonicalize(dir).map_err(|e| Error::read(dir, e))?;
    let mut roots = vec![dir];
    roots.extend(options.roots.iter().cloned());
    for (index, (line, parsed)) in read_manifest(manifest)?.into_iter().enumerate() {
        let parsed = parsed.and_then(|l| {
            confine(&l, &roots).map_err(|e| format!("{}:{line}: {e}", manifest.display()))?;
            Ok(l)
        });
        match parsed {
            Ok(spec) => {
                if options
                    .partition
                    .is_none_or(|p| p.selects(index, &spec.run))
                {
                    trials.push(Trial { line, spec });
                }
            }
            // Every shard reports a bad line, so every shard's job fails.
            Err(e) => bad.push(TrialOutcome {
                line,
                run: None,
                verdict: None,
                exit_code: 65,
                error: Some(e),
            }),
        }
    }
    Ok((trials, bad))
}

/// Whether this shard of the manifest has live captures to make (then
/// they run first, and the replays in a process of their own that has
/// left the network).
pub fn has_live_captures(manifest: &Path, options: &Options) -> Result<bool> {
    let (trials, _) = select(manifest, options)?;
    Ok(trials.iter().any(|t| t.spec.prompt.is_some()))
}

/// Makes this shard's live captures, `options.jobs` at a time (one slow
/// endpoint holds up one slot, not the batch), skipping runs already
/// captured. Returns the lines whose capture could not be made (refused
/// before sending: no budget, no key, a bad `[capture]` table), in
/// manifest order.
pub fn live_captures(
    manifest: &Path,
    options: &Options,
    progress: &(dyn Fn(&TrialOutcome, usize) + Sync),
) -> Result<Vec<TrialOutcome>> {
    let (trials, _) = select(manifest, options)?;
    // Each run once (a second line for a run is refused later, by `run`):
    // two captures of one run at once would race for its files.
    let mut runs = std::collections::HashSet::new();
    let live: Vec<&Trial> = trials
        .iter()
        .filter(|t| t.spec.prompt.is_some() && runs.insert(t.spec.run.as_str()))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .stack_size(crate::cli::THREAD_STACK)
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the capture threads: {e}")))?;
    let one = |t: &&Trial| -> Option<TrialOutcome> {
        let result = live_capture(t, options);
        let o = TrialOutcome {
            line: t.line,
            run: Some(t.spec.run.clone()),
            verdict: None,
            exit_code: match &result {
                Ok(true) => 0,
                Ok(false) => 2,
                Err(e) => e.exit_code().code(),
            },
            error: result
                .as_ref()
                .err()
                .map(|e| format!("{}:{}: live capture: {e}", manifest.display(), t.line)),
        };
        progress(&o, live.len());
        o.error.is_some().then_some(o)
    };
    use rayon::prelude::*;
    let mut failed: Vec<TrialOutcome> = pool.install(|| live.par_iter().filter_map(one).collect());
    failed.sort_by_key(|o| o.line);
    Ok(failed)
}

/// One live capture; true when the answer is complete.
fn live_capture(t: &Trial, options: &Options) -> Result<bool> {
    use crate::capture::live;
    let l = &t.spec;
    let run = RunId::parse(&l.run)?;
    let resolved = crate::resolve::resolve(
        Some(&l.repo),
        l.config.as_deref(),
        options.ledger.as_deref(),
        Needs {
            repo: false,
            config_at: ConfigAt::WorkingTree,
        },
    )?;
    if let Some(t) = crate::chain::read_transcript(&resolved.ledger, &run)? {
        return Ok(t.loaded.record.complete);
    }
    let settings = live::settings(
        &live::Flags {
            total_timeout: l.total_timeout,
            ..live::Flags::default()
        },
        &resolved.config.config.capture,
        &resolved.config.source,
    )?;
    let prompt_path = l
        .prompt
        .as_deref()
        .ok_or_else(|| Error::Internal("no prompt".into()))?;
    let prompt = crate::input::read_file(prompt_path, crate::input::BODY_CAP)?;
    let prompt = String::from_utf8(prompt)
        .map_err(|_| Error::data(prompt_path, "the prompt is not UTF-8"))?;
    let key = live::ApiKey::from_env(&settings.api_key_env)?;
    let receipt = live::capture(
        &resolved.ledger,
        live::Call {
            run: &run,
            provider: settings.provider,
            endpoint: &settings.endpoint,
            model: &settings.model,
            stream: settings.stream,
            key: &key,
            max_tokens: settings.max_tokens,
            connect_timeout: std::time::Duration::from_secs(settings.connect_timeout),
            idle_timeout: std::time::Duration::from_secs(settings.idle_timeout),
            total_timeout: std::time::Duration::from_secs(settings.total_timeout),
            prompt: &prompt,
            extract: l.extract,
            trace: None,
            trace_auth: None,
            captured_at: crate::clock::format_time(crate::clock::now()),
            repository: resolved.repo.as_ref().and_then(|r| r.display_name()),
        },
    )?;
    Ok(receipt.complete)
}

/// What became of one trial.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TrialOutcome {
    /// The manifest line (1-based).
    pub line: usize,
    /// The run id, when the line had one.
    pub run: Option<String>,
    /// The verdict, when the trial was judged.
    pub verdict: Option<Verdict>,
    /// The exit code `check` would have given this trial.
    pub exit_code: i32,
    /// Why the line could not be judged.
    pub error: Option<String>,
}

/// A manifest line read and checked, with its paths made absolute.
struct Trial {
    line: usize,
    spec: ManifestLine,
}

/// The order verdicts are ranked in for the batch's exit status: the worst
/// over the trials wins; a line that could not be judged is worse than any
/// verdict.
fn rank(o: &TrialOutcome) -> u8 {
    match (o.error.is_some(), o.verdict) {
        (true, _) => 5,
        (false, Some(Verdict::Reject)) => 4,
        (false, Some(Verdict::FixtureMismatch)) => 3,
        (false, Some(Verdict::Incomplete)) => 2,
        (false, Some(Verdict::Review)) => 0,
        (false, None) => 5,
    }
}

/// The batch's exit status: the worst trial's (`review` < `incomplete` <
/// `fixture_mismatch` < `reject` < a line that could not be judged, 65).
pub fn exit_status(outcomes: &[TrialOutcome]) -> ExitCode {
    match outcomes.iter().map(rank).max().unwrap_or(0) {
        0 => ExitCode::Ok,
        2 => ExitCode::Incomplete,
        3 => ExitCode::FixtureMismatch,
        4 => ExitCode::Reject,
        _ => ExitCode::Sysexit(crate::exit::Sysexit::Data),
    }
}

/// Runs the manifest's trials (those `options.partition` selects);
/// `progress` is told of each trial as it ends; `started` of each run id
/// as a worker begins it.
pub fn run(
    manifest: &Path,
    options: &Options,
    progress: &(dyn Fn(&TrialOutcome, usize) + Sync),
    started: &(dyn Fn(&str) + Sync),
) -> Result<Vec<TrialOutcome>> {
    let (trials, mut outcomes) = select(manifest, options)?;
    let total = trials.len() + outcomes.len();
    for o in &outcomes {
        progress(o, total);
    }
    // Each run id once: a second line for a run would race the first.
    let mut seen = HashMap::new();
    let mut unique = Vec::new();
    for t in trials {
        if let Some(first) = seen.insert(t.spec.run.clone(), t.line) {
            let o = TrialOutcome {
                line: t.line,
                run: Some(t.spec.run.clone()),
                verdict: None,
                exit_code: 65,
                error: Some(format!(
                    "{}:{}: run id `{}` is also on line {first}",
                    manifest.display(),
                    t.line,
                    t.spec.run
                )),
            };
            progress(&o, total);
            outcomes.push(o);
        } else {
            unique.push(t);
        }
    }
    let sandbox = crate::wasm::Lazy::new(options.cache_dir.clone());
    let bases = Bases::default();
    let done: Mutex<Vec<TrialOutcome>> = Mutex::new(Vec::new());
    // `jobs` plain threads, each taking the next trial when it is free.
    // Not a rayon pool: a worker waiting on a trial's own parallel work
    // (the lock walk, the delta, compiling) would take up another whole
    // trial on the same stack, and a long manifest piles them up until the
    // stack overflows. Here a trial's parallel work runs on the global
    // pool while its worker waits.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        while let Some(t) = unique.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
            started(t.spec.run.as_str());
            let o = match one(t, options, &sandbox, &bases) {
                Ok((verdict, _)) => TrialOutcome {
                    line: t.line,
                    run: Some(t.spec.run.clone()),
                    verdict: Some(verdict),
                    exit_code: verdict.exit_code().code(),
                    error: None,
                },
                Err(e) => TrialOutcome {
                    line: t.line,
                    run: Some(t.spec.run.clone()),
                    verdict: None,
                    exit_code: e.exit_code().code(),
                    error: Some(format!("{}:{}: {e}", manifest.display(), t.line)),
                },
            };
            progress(&o, total);
            done.lock().unwrap_or_else(|p| p.into_inner()).push(o);
        }
    };
    std::thread::scope(|s| {
        let mut started_any = None;
        for _ in 0..options.jobs.max(1).min(unique.len()) {
            match std::thread::Builder::new()
                .stack_size(crate::cli::THREAD_STACK)
                .spawn_scoped(s, work)
            {
                Ok(_) => started_any = Some(Ok(())),
                // The threads started take every trial between them.
                Err(e) => {
                    started_any.get_or_insert(Err(e));
                }
            }
        }
        started_any.unwrap_or(Ok(()))
    })
    .map_err(|e| Error::Internal(format!("cannot start {} worker threads: {e}", options.jobs)))?;
    outcomes.extend(done.into_inner().unwrap_or_else(|p| p.into_inner()));
    outcomes.sort_by_key(|o| o.line);
    Ok(outcomes)
}

/// One checkout per (repository, base), made by the first trial that needs
/// it and shared by the rest.
#[derive(Default)]
struct Bases {
    trees: Mutex<HashMap<(PathBuf, String), Arc<SharedBase>>>,
}

/// A base tree made once, by whoever asks first.
type SharedBase = std::sync::OnceLock<Arc<BaseTree>>;

impl Bases {
    fn get(&self, repo: &crate::git::Repo, base: &str) -> Result<Arc<BaseTree>> {
        let cell = self
            .trees
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((repo.root.clone(), base.to_string()))
            .or_default()
            .clone();
        if let Some(tree) = cell.get() {
            return Ok(tree.clone());
        }
        let made = BaseTree::new(repo, base)?;
        Ok(cell.get_or_init(|| made).clone())
    }
}

/// Captures (unless this run's body is already captured) and checks one
/// trial.
fn one(
    t: &Trial,
    options: &Options,
    sandbox: &crate::wasm::Lazy,
    bases: &Bases,
) -> Result<(Verdict, Ledger)> {
    let l = &t.spec;
    let run = RunId::parse(&l.run)?;
    let resolved = crate::resolve::resolve(
        Some(&l.repo),
        l.config.as_deref(),
        options.ledger.as_deref(),
        Needs {
            repo: true,
            config_at: ConfigAt::Revision(&l.base),
        },
    )?;
    let (Some(repo), Some(base)) = (resolved.repo, resolved.revision) else {
        return Err(Error::Internal(
            "a trial needs a repository and a base".into(),
        ));
    };
    let ledger = resolved.ledger;
    if l.prompt.is_some() {
        // Captured live before the replays began (`live_captures`).
        if crate::chain::read_transcript(&ledger, &run)?.is_none() {
            return Err(Error::Missing(format!(
                "run `{run}` has no receipt: its live capture was refused (see above)"
            )));
        }
        if let Some(v) = finished(&ledger, &run, l)? {
            return Ok((v, ledger));
        }
        return check_trial(
            l,
            run,
            repo,
            base,
            resolved.config,
            ledger,
            options,
            sandbox,
            bases,
        );
    }
    let body_path = l
        .body
        .as_deref()
        .ok_or_else(|| Error::Internal("no body".into()))?;
    let body = crate::input::read_file(body_path, crate::input::BODY_CAP)?;
    let format = match &l.format {
        Some(f) => <BodyFormat as clap::ValueEnum>::from_str(f, false)
            .map_err(|_| Error::Usage(format!("unknown body format `{f}`")))?,
        None => BodyFormat::Raw,
    };
    let extract = l.extract;
    let captured = already_captured(&ledger, &run, &body)?;
    if captured && let Some(v) = finished(&ledger, &run, l)? {
        return Ok((v, ledger));
    }
    if !captured {
        capture(
            &ledger,
            CaptureInput {
                run: &run,
                format,
                extract,
                body: &body,
                declared_bytes: l.declared_bytes,
                request_id: None,
                trace: None,
                trace_auth: None,
                access: crate::ledger::Access::of(body_path),
                git: None,
                repository: crate::git::Repo::open(&l.repo)
                    .ok()
                    .and_then(|r| r.display_name()),
                captured_at: match &l.captured_at {
                    Some(t) => crate::clock::format_time(
                        crate::clock::parse_time(t)
                            .map_err(|e| Error::Usage(format!("field `captured_at`: {e}")))?,
                    ),
                    None => crate::clock::format_time(crate::clock::now()),
                },
            },
        )?;
    }
    check_trial(
        l,
        run,
        repo,
        base,
        resolved.config,
        ledger,
        options,
        sandbox,
        bases,
    )
}

/// The `check` half of a trial.
#[allow(clippy::too_many_arguments)]
fn check_trial(
    l: &ManifestLine,
    run: RunId,
    repo: crate::git::Repo,
    base: String,
    config: crate::config::LoadedConfig,
    ledger: Ledger,
    options: &Options,
    sandbox: &crate::wasm::Lazy,
    bases: &Bases,
) -> Result<(Verdict, Ledger)> {
    let junit = match &l.junit {
        Some(path) => {
            let bytes = crate::input::read_file(path, crate::input::REPORT_CAP)?;
            crate::junit::parse(path, &bytes)?;
            Some(bytes)
        }
        None => None,
    };
    let hidden = options.cache_dir.clone().into_iter().collect();
    let tests_config = &config.config.tests;
    let env = crate::resolve::test_env(&l.test_env, &tests_config.env)?;
    let mut read_only = tests_config.read_only.clone();
    read_only.extend(l.test_ro.iter().cloned());
    let eval_patch = l.eval_patch()?;
    let evaluation = crate::resolve::evaluation(
        eval_patch,
        crate::record::RequiredTests {
            fail_to_pass: l.fail_to_pass.clone(),
            pass_to_pass: l.pass_to_pass.clone(),
            require_pass: l.require_pass.clone(),
        },
    );
    let spec = TrialSpec {
        run,
        repo,
        base: base.clone(),
        config,
        ledger,
        junit,
        test: l
            .test_cmd
            .clone()
            .map(|command| crate::replay::TestCommand {
                command,
                allow_unsandboxed: options.allow_unsandboxed,
                timeout: options.test_timeout,
                output_cap: options.test_output_cap,
                memory: options.test_memory,
                max_procs: options.test_max_procs,
                baseline: options.test_baseline,
                hidden,
                read_only,
                env,
                log_parser: l.log_parser,
                cache_dir: options.cache_dir.clone(),
                // One line per trial, not every trial's suite.
                echo: false,
            }),
        now: None,
        evaluation,
    };
    let tree = bases.get(&spec.repo, &base)?;
    let checked = check_on(&spec, sandbox, Some(&tree))?;
    Ok((checked.verdict.verdict, spec.ledger))
}

/// The verdict of a run this line already judged (a batch run again into
/// the same ledger resumes: finished trials are kept, not re-run). Its
/// records must hold together and its property record must answer this
/// line (`ManifestLine::disagreement`); one judged otherwise is refused
/// (73), never overwritten. `None` when the run has no verdict yet.
fn finished(ledger: &Ledger, run: &RunId, l: &ManifestLine) -> Result<Option<Verdict>> {
    let records = crate::chain::read_run(ledger, run)?;
    let Some(verdict) = records.verdict else {
        return Ok(None);
    };
    if let Some(props) = &records.properties
        && let Some(why) = l.disagreement(
            &props.record,
            records.transcript.as_ref().map(|t| &t.loaded.record),
        )?
    {
        return Err(Error::Exists {
            path: props.path.clone(),
            hint: format!(
                "run `{run}` was judged before, otherwise than this line says ({why}); a new judgement is a new run id"
            ),
        });
    }
    Ok(Some(verdict.record.verdict))
}

/// True when the run's receipt exists and stores this very body (a batch
/// run again after a stop); a receipt of another body is refused (73).
fn already_captured(ledger: &Ledger, run: &RunId, body: &[u8]) -> Result<bool> {
    let Some(t) = crate::chain::read_transcript(ledger, run)? else {
        return Ok(false);
    };
    let sha = crate::digest::sha256_hex(body);
    let stored = t
        .loaded
        .record
        .response
        .as_ref()
        .unwrap_or(&t.loaded.record.body);
    if stored.sha256 == sha {
        Ok(true)
    } else {
        Err(Error::Exists {
            path: t.loaded.path.clone(),
            hint: "the run id was captured with another body; a retry is a new run id".into(),
        })
    }
}
