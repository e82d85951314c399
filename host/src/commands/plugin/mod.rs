//! `agent-ledger plugin test` and `plugin inspect`: try a property plugin
//! with no ledger.
//!
//! `test` runs one plugin on one patch through the replay `check` uses (a
//! temporary checkout of the base, `git apply` with the bounds, the
//! self-test on a known-bad patch, the same sandbox and limits) and prints
//! the outcome, findings, fuel, wall time, peak memory, the plugin's
//! imports and the end of its stderr. The trial's records are made up in a
//! scratch directory: nothing is written into the repository or any ledger.
//! `inspect` loads a plugin and asks it to describe itself, without running
//! `check`.

pub mod about;
pub mod new;
pub mod precompile;

use about::{PluginAbout, hints, indented};

use crate::config::PropertyConfig;
use crate::exit::{Error, ExitCode, Result, Sysexit};
use crate::ledger::{Loaded, RunId};
use crate::output::{self, OutputArgs, inert};
use crate::record::{
    Finding, FixtureLock, Outcome, PropertyResult, SCHEMA, StoredFile, TranscriptReceipt,
};
use crate::resolve::{ConfigArgs, ConfigAt, Needs, RepoArgs};
use crate::wasm::{Limits, RunDetails, Sandbox};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Run one plugin on one patch, with no ledger (exit 0 holds; 4 miss, error or vacuous).
    Test(TestArgs),
    /// Print what a plugin says about itself and what it imports, without running `check`.
    Inspect(InspectArgs),
    /// Write a standalone property project (Rust, Python or JavaScript) that builds with one command.
    New(new::NewArgs),
    /// Compile plugins (default: the built-ins) into the compile cache, so a CI image or restored cache starts warm.
    Precompile(precompile::PrecompileArgs),
}

/// The limits a plugin runs under; each defaults to the configuration's
/// `[limits]` (for `test`), else to the sandbox's default.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LimitArgs {
    /// Fuel budget [default: 4000000000].
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,
    /// Memory cap in MiB, all memories and tables together [default: 256].
    #[arg(long, value_name = "MIB")]
    pub memory_mb: Option<u64>,
    /// Wall-clock backstop in milliseconds [default: 30000].
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
}

/// Where compiled components are cached.
pub use crate::resolve::CacheArgs;

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The plugin: a WASI Preview 2 component.
    #[arg(value_name = "PLUGIN.wasm")]
    pub plugin: PathBuf,
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The base revision the patch applies to.
    #[arg(long, value_name = "REV")]
    pub base: String,
    /// The patch to judge: a unified diff (as `capture --body` takes a raw one).
    #[arg(long, value_name = "FILE")]
    pub patch: PathBuf,
    /// A patch the property must miss on: the self-test runs first, and a
    /// property that holds on it is `vacuous`.
    #[arg(long, value_name = "FILE")]
    pub known_bad: Option<PathBuf>,
    /// A configuration entry handed to the plugin, as a `[property.config]`
    /// key would be (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The plugin: a WASI Preview 2 component.
    #[arg(value_name = "PLUGIN.wasm")]
    pub plugin: PathBuf,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_set(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

impl PluginCommand {
    pub fn execute(self) -> Result<ExitCode> {
        match self {
            PluginCommand::Test(args) => args.execute(),
            PluginCommand::Inspect(args) => args.execute(),
            PluginCommand::New(args) => args.execute(),
            PluginCommand::Precompile(args) => args.execute(),
        }
    }

    /// Whether this subcommand replays a trial (and so leaves every network
    /// first, as `replay` does).
    pub fn replays(&self) -> bool {
        matches!(self, PluginCommand::Test(_))
    }
}

/// The limits under `flags`, else `config`, else the sandbox's defaults:
/// the rule `check` applies to a property's own keys and `[limits]`.
fn limits(flags: &LimitArgs, config: &crate::config::LimitsConfig) -> Limits {
    let d = Limits::default();
    Limits {
        fuel: flags.fuel.or(config.fuel).unwrap_or(d.fuel),
        memory_bytes: flags
            .memory_mb
            .or(config.memory_mb)
            .map_or(d.memory_bytes, |mb| (mb as usize) << 20),
        wall: flags
            .timeout_ms
            .or(config.timeout_ms)
            .map_or(d.wall, Duration::from_millis),
        ..d
    }
}

fn sandbox(cache: &CacheArgs) -> Result<Sandbox> {
    Sandbox::new(cache.dir())
        .map_err(|e| Error::Internal(format!("cannot start the WebAssembly engine: {e}")))
}

impl InspectArgs {
    fn execute(self) -> Result<ExitCode> {
        let bytes = crate::input::read_file(&self.plugin, crate::input::OBJECT_CAP)?;
        let sandbox = sandbox(&self.cache)?;
        let limits = limits(&self.limits, &Default::default());
        let about = PluginAbout::new(&self.plugin, sandbox.inspect(&bytes, &limits));
        output::emit(self.output.format, &about, || about.human(true))?;
        Ok(match about.refused {
            Some(_) => ExitCode::Sysexit(Sysexit::Data),
            None => ExitCode::Ok,
        })
    }
}

/// What `plugin test` prints.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PluginTestOutput {
    #[serde(flatten)]
    about: PluginAbout,
    /// Absent when the plugin was refused (it never ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<Run>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Run {
    outcome: Outcome,
    findings: Vec<Finding>,
    /// Why the outcome is `error` or `vacuous`.
    error: Option<String>,
    /// Whether the self-test on `--known-bad` ran first.
    self_test: bool,
    fuel_used: u64,
    fuel_limit: u64,
    /// Instantiation and `check` on the trial; absent when it did not run
    /// (a vacuous property, a failed self-test).
    #[serde(skip_serializing_if = "Option::is_none")]
    wall_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_memory_bytes: Option<u64>,
    memory_limit_bytes: u64,
    stdout: String,
    /// The head of stderr, as the property record keeps it.
    stderr: String,
    /// The end of stderr, where a traceback is, when the outcome is `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    stderr_tail: Option<String>,
}

impl PluginTestOutput {
    fn human(&self) -> String {
        let Some(run) = &self.run else {
            return self.about.human(true);
        };
        let mut text = self.about.human(false);
        text.push_str(&format!(
            "outcome: {}{}\n",
            run.outcome.as_str(),
            if run.self_test {
                " (after the self-test on the known-bad patch)"
            } else {
                ""
            }
        ));
        if let Some(e) = &run.error {
            text.push_str(&format!("  error: {}\n", inert(e)));
        }
        for f in &run.findings {
            let at = match (inert(&f.path), f.line) {
                (path, _) if path.is_empty() => String::new(),
                (path, Some(l)) => format!("{path}:{l}: "),
                (path, None) => format!("{path}: "),
            };
            text.push_str(&format!(
                "  finding: {}{at}{}\n",
                if f.frozen { "[frozen] " } else { "" },
                inert(&f.message)
            ));
        }
        text.push_str(&format!("fuel: {} of {}\n", run.fuel_used, run.fuel_limit));
        if let Some(ms) = run.wall_ms {
            text.push_str(&format!("wall time: {ms} ms\n"));
        }
        if let Some(bytes) = run.peak_memory_bytes {
            text.push_str(&format!(
                "peak memory: {} of {}\n",
                mib(bytes),
                mib(run.memory_limit_bytes)
            ));
        }
        if !run.stdout.is_empty() {
            text.push_str("stdout (its start):\n");
            text.push_str(&indented(&run.stdout));
        }
        if let Some(tail) = &run.stderr_tail {
            text.push_str("stderr (its end):\n");
            text.push_str(&indented(tail));
        } else if !run.stderr.is_empty() {
            text.push_str("stderr (its start):\n");
            text.push_str(&indented(&run.stderr));
        }
        text.push_str(&self.about.hints());
        text
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// The run id of every `plugin test` trial (it seeds the plugin's
/// randomness with the property's name and the patch).
const RUN_ID: &str = "plugin-test";

impl TestArgs {
    fn execute(self) -> Result<ExitCode> {
        let bytes = crate::input::read_file(&self.plugin, crate::input::OBJECT_CAP)?;
        let body = crate::input::read_file(&self.patch, crate::input::BODY_CAP)?;
        let judged = crate::capture::judge(crate::provider::BodyFormat::Raw, &body, None, None);
        if !judged.reasons.is_empty() {
            return Err(Error::data(
                &self.patch,
                format!(
                    "not a complete patch: {}",
                    judged
                        .reasons
                        .iter()
                        .map(|r| r.message.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            ));
        }
        let known_bad = self
            .known_bad
            .as_deref()
            .map(|p| crate::input::read_file(p, crate::input::OBJECT_CAP))
            .transpose()?;
        let resolved = crate::resolve::resolve(
            self.repo.repo.as_deref(),
            self.config.config.as_deref(),
            None,
            Needs {
                repo: true,
                config_at: ConfigAt::Revision(&self.base),
            },
        )?;
        let (Some(repo), Some(base)) = (resolved.repo.as_ref(), resolved.revision.as_ref()) else {
            return Err(Error::Internal(
                "a trial needs a repository and a base".into(),
            ));
        };
        let limits = limits(&self.limits, &resolved.config.config.limits);
        let sandbox = sandbox(&self.cache)?;
        let mut about = PluginAbout::new(&self.plugin, sandbox.inspect(&bytes, &limits));
        let Some(name) = about.name.clone() else {
            let tested = PluginTestOutput { about, run: None };
            output::emit(self.output.format, &tested, || tested.human())?;
            return Ok(ExitCode::Sysexit(Sysexit::Data));
        };

        // The trial's records, made up where no ledger is: a raw capture of
        // the patch, an empty lock (the fixture roots stay protected by the
        // bounds), and a configuration with this one property.
        let scratch = crate::scratch::make("agent-ledger-plugin-test-")?;
        let dir = scratch.path();
        let run = RunId::parse(RUN_ID)?;
        let now = crate::clock::now();
        let plugin_copy = dir.join("plugin.wasm");
        write(&plugin_copy, &bytes)?;
        let known_bad_copy = match &known_bad {
            Some(kb) => {
                let path = dir.join("known-bad.diff");
                write(&path, kb)?;
                Some(path.display().to_string())
            }
            None => None,
        };
        let receipt = TranscriptReceipt {
            schema: SCHEMA,
            record: "transcript".into(),
            run_id: RUN_ID.into(),
            format: crate::provider::BodyFormat::Raw,
            body: StoredFile {
                file: format!("{RUN_ID}.patch"),
                sha256: crate::digest::sha256_hex(&judged.patch),
                bytes: judged.patch.len() as u64,
            },
            response: None,
            declared_bytes: None,
            request_id: None,
            complete: true,
            verdict: crate::record::CaptureVerdict::Captured,
            reasons: Vec::new(),
            trace: None,
            trace_auth: None,
            captured_at: crate::clock::format_time(now),
            model: None,
            completion_id: None,
            usage: None,
            http: None,
            strip: judged.strip,
            extract: None,
            envelope: judged.envelope,
            notes: judged.notes.clone(),
            git: None,
            repository: None,
        };
        let transcript = made_up(dir, "transcript.json", receipt)?;
        let lock = made_up(
            dir,
            "lock.json",
            FixtureLock {
                schema: SCHEMA,
                record: "fixture_lock".into(),
                run_id: RUN_ID.into(),
                transcript_sha256: transcript.sha256.clone(),
                base_revision: Some(base.clone()),
                roots: Vec::new(),
                count: 0,
                dir_hash: crate::digest::sha256_hex(b""),
                files: Vec::new(),
                evaluation: None,
                none: None,
            },
        )?;
        let mut config = resolved.config.clone();
        config.config.properties = vec![PropertyConfig {
            name: name.clone(),
            plugin: plugin_copy.display().to_string(),
            known_bad: known_bad_copy.clone(),
            config: self.set.iter().cloned().collect(),
            fuel: Some(limits.fuel),
            memory_mb: Some((limits.memory_bytes >> 20) as u64),
            timeout_ms: Some(limits.wall.as_millis() as u64),
        }];
        let trees = crate::replay::TrialTrees::new(repo, base)?;
        let replayed = crate::replay::run(
            &crate::replay::Replay {
                source: crate::replay::Source::Live,
                run: &run,
                repo,
                base,
                config: &config,
                ledger_root: resolved.ledger.root(),
                transcript: &transcript,
                patch: &judged.patch,
                lock: &lock,
                sandbox: &sandbox,
                now,
                junit: None,
                test_run: None,
                base_junit: None,
                test_command: None,
                network: Some(crate::netns::status()),
                evaluation: None,
            },
            &trees,
        )?;
        let record = replayed.record;
        if let Some(applies) = record
            .properties
            .iter()
            .find(|p| p.name == crate::replay::PATCH_APPLIES && p.outcome != Outcome::Holds)
        {
            return Err(Error::data(
                &self.patch,
                format!(
                    "does not apply to {base} within the bounds `check` enforces: {}",
                    applies
                        .findings
                        .iter()
                        .map(|f| f.message.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            ));
        }
        let mut result: PropertyResult = record
            .properties
            .into_iter()
            .find(|p| p.name == name)
            .ok_or_else(|| Error::Internal(format!("the replay ran no property `{name}`")))?;
        // Messages name the copy the replay read; the user named another.
        if let (Some(copy), Some(given), Some(e)) =
            (&known_bad_copy, &self.known_bad, result.error.as_mut())
        {
            *e = e.replace(copy.as_str(), &given.display().to_string());
        }
        let details: Option<&RunDetails> = replayed.runs.get(&name);
        let errored = result.outcome == Outcome::Error;
        about.hints = hints(
            &about.imports,
            result.error.as_deref(),
            details.map_or("", |d| d.stderr_tail.as_str()),
        );
        let exit = if result.outcome == Outcome::Holds {
            ExitCode::Ok
        } else {
            ExitCode::Reject
        };
        let tested = PluginTestOutput {
            about,
            run: Some(Run {
                outcome: result.outcome,
                findings: result.findings,
                error: result.error,
                self_test: known_bad.is_some(),
                fuel_used: result.fuel_used,
                fuel_limit: limits.fuel,
                wall_ms: details.map(|d| d.wall.as_millis() as u64),
                peak_memory_bytes: details.map(|d| d.peak_memory_bytes),
                memory_limit_bytes: limits.memory_bytes as u64,
                stdout: result.stdout,
                stderr: result.stderr,
                stderr_tail: details
                    .filter(|d| errored && !d.stderr_tail.is_empty())
                    .map(|d| d.stderr_tail.clone()),
            }),
        };
        output::emit(self.output.format, &tested, || tested.human())?;
        Ok(exit)
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::write(path, e))
}

/// A record made up for the trial, written to `dir/file` (the replay copies
/// it into the plugin's `/inputs`).
fn made_up<T: crate::record::Record>(dir: &Path, file: &str, record: T) -> Result<Loaded<T>> {
    let path = dir.join(file);
    let bytes = crate::ledger::to_bytes(&record);
    write(&path, &bytes)?;
    Ok(Loaded {
        record,
        sha256: crate::digest::sha256_hex(&bytes),
        path,
    })
}
