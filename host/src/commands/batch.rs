//! `agent-ledger batch`: many trials from a JSONL manifest, in parallel,
//! with the records `capture` + `check` would write for each. Exits with
//! the worst trial's code, so a CI job fails on any trial not `review`.

use crate::batch::{self, Options, Partition, TrialOutcome};
use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputArgs, inert};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct BatchArgs {
    /// The manifest: one JSON object per line (`run`, `body`, `format`,
    /// `extract`, `repo`, `base`, `config`, `junit`, `test_cmd`,
    /// `captured_at`); paths relative to the manifest.
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,
    /// Trials at once [default: the number of cores].
    #[arg(short = 'j', long = "jobs", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub jobs: Option<u64>,
    /// Run one shard: `hash:K/N` (by a stable hash of the run id) or
    /// `count:K/N` (by position), K from 1, as cargo-nextest does. A CI
    /// matrix or a Kubernetes Indexed Job runs one shard per machine;
    /// `agent-ledger merge` combines their ledgers.
    #[arg(long, value_name = "KIND:K/N")]
    pub partition: Option<Partition>,
    #[command(flatten)]
    pub cache: crate::resolve::CacheDirArg,
    /// The limits of every trial's test command.
    #[command(flatten)]
    pub limits: crate::resolve::TestLimits,
    /// As `check --no-test-baseline`.
    #[arg(long)]
    pub no_test_baseline: bool,
    /// Internal: the replay half of a batch with live captures, run by the
    /// batch itself in a process that leaves the network first.
    #[arg(long, hide = true)]
    pub replay_phase: bool,
    /// A directory besides the manifest's own that the files its lines name
    /// (`body`, `prompt`, `junit`, `config`, `eval_patch`, `test_ro`) may
    /// lie in (repeatable). Nothing else outside the manifest's directory
    /// is read.
    #[arg(long = "manifest-root", value_name = "DIR")]
    pub manifest_roots: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl BatchArgs {
    pub fn execute(
        self,
        ledger: Option<&Path>,
        network_isolation: Option<crate::cli::NetworkIsolation>,
    ) -> Result<ExitCode> {
        let jobs = self.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |j| j as usize,
        );
        let options = Options {
            ledger: ledger.map(Path::to_path_buf),
            partition: self.partition,
            jobs,
            cache_dir: self.cache.dir(),
            allow_unsandboxed: self.limits.allow_unsandboxed,
            test_timeout: self.limits.timeout(),
            test_output_cap: self.limits.output_cap(),
            test_memory: self.limits.memory(),
            test_max_procs: self.limits.max_procs(),
            test_baseline: !self.no_test_baseline,
            roots: self
                .manifest_roots
                .iter()
                .map(|r| {
                    std::fs::canonicalize(r).map_err(|e| {
                        Error::Missing(format!("--manifest-root `{}`: {e}", r.display()))
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        };
        // A bar on a terminal (done/total, the verdicts so far, the trials
        // running now, an ETA); otherwise one plain line per trial as it
        // ends.
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} done {elapsed_precise} ETA {eta} {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        let live = std::sync::Mutex::new(Live::default());
        let progress = |o: &TrialOutcome, total: usize| match &bar {
            Some(bar) => {
                let mut live = live.lock().unwrap_or_else(|p| p.into_inner());
                live.finished(o);
                bar.set_length(total as u64);
                bar.inc(1);
                bar.set_message(live.message());
                if let Some(e) = &o.error {
                    bar.println(format!("error: {}", inert(e)));
                }
            }
            None => eprintln!("{}", line(o)),
        };
        let started = |run: &str| {
            if let Some(bar) = &bar {
                let mut live = live.lock().unwrap_or_else(|p| p.into_inner());
                live.running.insert(run.to_string());
                bar.set_message(live.message());
            }
        };
        if !self.replay_phase && batch::has_live_captures(&self.manifest, &options)? {
            // This half never replays, so never leaves the network.
            crate::cli::start_threads()?;
            // Live captures first, from this process, the only one with a
            // network; then the replays in a fresh process that leaves it
            // before reading anything (a multithreaded process cannot).
            let failed = batch::live_captures(&self.manifest, &options, &|o, _| {
                eprintln!("capture {}", line(o))
            })?;
            for o in &failed {
                eprintln!("error: {}", inert(o.error.as_deref().unwrap_or("")));
            }
            let exe = std::env::current_exe().map_err(|e| {
                crate::exit::Error::Internal(format!(
                    "cannot find this program to run the replays: {e}"
                ))
            })?;
            let mut replays = std::process::Command::new(exe);
            replays
                .args(std::env::args_os().skip(1))
                .arg("--replay-phase");
            // The shared cache key this process took out of its
            // environment: the replays must seal with it too.
            if let Some((name, key)) = crate::wasm::env_key_for_child() {
                replays.env(name, key);
            }
            // The run key's descriptor was closed once read: the replays
            // cannot read it (a trace they judge needs its key file).
            replays.env_remove(crate::trace::KEY_FD_ENV);
            let status = replays.status().map_err(|e| {
                crate::exit::Error::Internal(format!("cannot run the replays: {e}"))
            })?;
            // The replay half's status, as itself; a signal or a number this
            // tool never exits with is an internal failure.
            return Ok(status
                .code()
                .and_then(ExitCode::from_code)
                .unwrap_or(ExitCode::Sysexit(crate::exit::Sysexit::Software)));
        }
        // No live capture (or this is the replay half): leave the network
        // now, while this process has one thread (the bar starts ticking,
        // on a thread of its own, after).
        crate::cli::leave_network(network_isolation)?;
        crate::cli::start_threads()?;
        if let Some(bar) = &bar {
            bar.enable_steady_tick(std::time::Duration::from_millis(500));
        }
        let outcomes = batch::run(&self.manifest, &options, &progress, &started)?;
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        let status = batch::exit_status(&outcomes);
        let value = BatchOutput {
            exit_code: status.code(),
            trials: &outcomes,
        };
        output::emit(self.output.format, &value, || summary(&outcomes, status))?;
        Ok(status)
    }
}

/// `batch --format json`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct BatchOutput<'a> {
    /// The batch's exit status: the worst trial's.
    pub exit_code: i32,
    /// Every trial of the manifest (this shard's), in manifest order.
    pub trials: &'a [TrialOutcome],
}

/// What the progress bar shows beside the counts: the verdicts so far and
/// the trials running now.
#[derive(Default)]
struct Live {
    running: std::collections::BTreeSet<String>,
    verdicts: std::collections::BTreeMap<&'static str, usize>,
}

impl Live {
    fn finished(&mut self, o: &TrialOutcome) {
        if let Some(run) = &o.run {
            self.running.remove(run);
        }
        let what = match (&o.verdict, &o.error) {
            (Some(v), _) => v.as_str(),
            (None, _) => "error",
        };
        *self.verdicts.entry(what).or_default() += 1;
    }

    fn message(&self) -> String {
        let counts: Vec<String> = self
            .verdicts
            .iter()
            .map(|(v, n)| format!("{n} {v}"))
            .collect();
        let mut running: Vec<String> = self
            .running
            .iter()
            .take(4)
            .map(|r| inert(r).into_owned())
            .collect();
        if self.running.len() > 4 {
            running.push(format!("+{}", self.running.len() - 4));
        }
        format!(
            "| {} | running {}: {}",
            if counts.is_empty() {
                "no verdict yet".to_string()
            } else {
                counts.join(", ")
            },
            self.running.len(),
            running.join(" ")
        )
    }
}

fn line(o: &TrialOutcome) -> String {
    let run = o.run.as_deref().map(inert).unwrap_or_else(|| "-".into());
    match (&o.verdict, &o.error) {
        (_, Some(e)) => format!(
            "line {}: {run}: error (exit {}): {}",
            o.line,
            o.exit_code,
            inert(e)
        ),
        (Some(v), None) => format!(
            "line {}: {run}: {} (exit {})",
            o.line,
            v.as_str(),
            o.exit_code
        ),
        (None, None) => format!("line {}: {run}: not judged", o.line),
    }
}

fn summary(outcomes: &[TrialOutcome], status: ExitCode) -> String {
    let mut counts = std::collections::BTreeMap::new();
    for o in outcomes {
        let key = match (&o.verdict, &o.error) {
            (_, Some(_)) => "error",
            (Some(v), None) => v.as_str(),
            (None, None) => "not judged",
        };
        *counts.entry(key).or_insert(0usize) += 1;
    }
    let mut text = format!(
        "batch: {} trial(s), exit {}\n",
        outcomes.len(),
        status.code()
    );
    for (k, n) in counts {
        text.push_str(&format!("  {k}: {n}\n"));
    }
    for o in outcomes
        .iter()
        .filter(|o| o.error.is_some() || o.exit_code != 0)
    {
        text.push_str(&format!("  {}\n", line(o)));
    }
    text
}
