//! `agent-ledger replay`: run the properties on the patched tree and write
//! the property record. Also the shared set-up of `check`.

use crate::cli::{OutputArgs, OutputFormat};
use crate::config;
use crate::exit::{self, Error, Result};
use crate::git::Repo;
use crate::ledger::{self, Ledger, Loaded, RunId};
use crate::output;
use crate::record::{FixtureLock, Outcome, PropertyRecord, TranscriptReceipt};
use crate::replay::{self, Trial};
use crate::sandbox::Sandbox;
use std::path::PathBuf;

/// What identifies a trial on the command line.
#[derive(Debug, Clone, clap::Args)]
pub struct TrialArgs {
    /// Run id of the captured trial.
    #[arg(long, value_name = "ID")]
    pub run: String,
    /// The git repository the patch is for.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// The base revision the patch applies to.
    #[arg(long, value_name = "REV")]
    pub base: String,
    /// Read the configuration from this file (outside the repository)
    /// instead of `agent-ledger.toml` at the base revision.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where compiled components are cached [default: $AGENT_LEDGER_CACHE_DIR,
    /// else $XDG_CACHE_HOME/agent-ledger, else ~/.cache/agent-ledger].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Do not cache compiled components on disk.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// A JUnit XML report of the project's suite on the patched tree, for
    /// the `tests_pass` property; stored in the ledger with its digest.
    #[arg(long, value_name = "FILE", conflicts_with = "test_cmd")]
    pub junit: Option<PathBuf>,
    /// Run the project's suite in a temporary patched tree with no network;
    /// it must write a JUnit report to the path in `$AGENT_LEDGER_JUNIT`.
    #[arg(long, value_name = "CMD")]
    pub test_cmd: Option<String>,
    /// Run `--test-cmd` even when no network namespace can be made.
    #[arg(long, requires = "test_cmd")]
    pub allow_network: bool,
    /// The instant flake-freeze expiry is judged against (RFC 3339 or a
    /// date) [default: the transcript's `captured_at`].
    #[arg(long, value_name = "T")]
    pub now: Option<String>,
}

/// A trial resolved from its arguments: repository, base, configuration, ledger.
pub struct Resolved {
    pub run: RunId,
    pub repo: Repo,
    pub base: String,
    pub config: config::Loaded,
    pub ledger: Ledger,
    pub cache_dir: Option<PathBuf>,
    pub junit: Option<Vec<u8>>,
    pub test_cmd: Option<String>,
    pub allow_network: bool,
    pub now: Option<time::OffsetDateTime>,
}

impl TrialArgs {
    pub fn resolve(&self, ledger: Option<&std::path::Path>) -> Result<Resolved> {
        let run = RunId::parse(&self.run)?;
        let repo = Repo::open(&self.repo)?;
        let base = repo.resolve_commit(&self.base)?;
        let config = replay::load_config(&repo, &base, self.config.as_deref())?;
        let ledger = match ledger {
            Some(l) => Ledger::new(l),
            None => Ledger::new(repo.root.join(&config.config.ledger)),
        };
        let cache_dir = if self.no_cache {
            None
        } else {
            self.cache_dir.clone().or_else(default_cache_dir)
        };
        let junit = match &self.junit {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
                crate::junit::parse(path, &bytes)?;
                Some(bytes)
            }
            None => None,
        };
        let now = match &self.now {
            Some(s) => Some(
                crate::freeze::parse_time(s).map_err(|e| Error::Usage(format!("`--now`: {e}")))?,
            ),
            None => None,
        };
        Ok(Resolved {
            run,
            repo,
            base,
            config,
            ledger,
            cache_dir,
            junit,
            test_cmd: self.test_cmd.clone(),
            allow_network: self.allow_network,
            now,
        })
    }
}

fn default_cache_dir() -> Option<PathBuf> {
    let env = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("AGENT_LEDGER_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("agent-ledger")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/agent-ledger")))
}

impl Resolved {
    pub fn sandbox(&self) -> Result<Sandbox> {
        Sandbox::new(self.cache_dir.clone())
            .map_err(|e| Error::Internal(format!("cannot start the WebAssembly engine: {e}")))
    }

    /// Runs the replay and writes (or matches) the property record.
    pub fn replay(
        &self,
        sandbox: &Sandbox,
        transcript: &Loaded<TranscriptReceipt>,
        patch: &[u8],
        lock: &Loaded<FixtureLock>,
        trees: &replay::TrialTrees,
    ) -> Result<Loaded<PropertyRecord>> {
        let now = match self.now {
            Some(n) => n,
            None => crate::freeze::parse_time(&transcript.record.captured_at)
                .map_err(|e| Error::data(&transcript.path, format!("field `captured_at`: {e}")))?,
        };
        let (test_run, produced) = match &self.test_cmd {
            Some(cmd) => {
                let (run, report) =
                    replay::run_tests(&self.repo, &self.base, patch, cmd, self.allow_network)?;
                (Some(run), report)
            }
            None => (None, None),
        };
        let junit = match produced.as_ref().or(self.junit.as_ref()) {
            Some(bytes) => Some((self.store_junit(bytes)?, bytes.clone())),
            None => None,
        };
        let trial = Trial {
            source: replay::Source::Live,
            used: Default::default(),
            run: &self.run,
            repo: &self.repo,
            base: &self.base,
            config: &self.config,
            ledger_rel: replay::ledger_relative(&self.repo, self.ledger.root()),
            transcript,
            lock,
            sandbox,
            now,
            junit,
            test_run,
        };
        let record = trial.replay(patch, trees)?;
        // Archive what an auditor needs to re-run this replay offline.
        ledger::store_object(&self.ledger, &self.config.bytes)?;
        for bytes in trial.used.into_inner().expect("used objects").values() {
            ledger::store_object(&self.ledger, bytes)?;
        }
        let path = self.ledger.properties(&self.run);
        let sha256 = ledger::write_or_match(&path, &record, "property record")?;
        Ok(Loaded {
            record,
            sha256,
            path,
        })
    }
}

impl Resolved {
    /// Stores the trial's test report in the ledger (never over a different one).
    pub fn store_junit(&self, bytes: &[u8]) -> Result<crate::record::StoredFile> {
        let path = self.ledger.junit(&self.run);
        let sha256 = ledger::write_bytes_or_match(&path, bytes, "test report")?;
        Ok(crate::record::StoredFile {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256,
            bytes: bytes.len() as u64,
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub trial: TrialArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReplayArgs {
    pub fn execute(self, ledger: Option<&std::path::Path>) -> Result<i32> {
        let r = self.trial.resolve(ledger)?;
        let (transcript, patch) = replay::read_transcript(&r.ledger, &r.run)?.ok_or_else(|| {
            Error::Missing(format!(
                "no transcript receipt `{}`: capture the run first",
                r.ledger.transcript(&r.run).display()
            ))
        })?;
        if !transcript.record.complete {
            match self.output.format {
                OutputFormat::Json => output::print_json(&serde_json::json!({
                    "result": "incomplete",
                    "run_id": r.run.as_str(),
                    "reasons": transcript.record.reasons,
                }))?,
                OutputFormat::Human => output::print(&format!(
                    "incomplete: the transcript of run {} is incomplete; properties not run\n",
                    r.run
                ))?,
            }
            return Ok(exit::INCOMPLETE);
        }
        let lock = replay::read_lock(&r.ledger, &r.run, &transcript)?.ok_or_else(|| {
            Error::Missing(format!(
                "no fixture lock `{}`: run `agent-ledger lock` first, or `agent-ledger check`",
                r.ledger.lock(&r.run).display()
            ))
        })?;
        let sandbox = r.sandbox()?;
        let trees = replay::TrialTrees::new(&r.repo, &r.base)?;
        let props = r.replay(&sandbox, &transcript, &patch, &lock, &trees)?;
        match self.output.format {
            OutputFormat::Json => output::print_json(&props.record)?,
            OutputFormat::Human => output::print(&property_table(&props.record))?,
        }
        Ok(record_exit(&props.record))
    }
}

/// The exit code a property record implies on its own.
pub fn record_exit(record: &PropertyRecord) -> i32 {
    if !record.fixtures.is_empty() {
        exit::FIXTURE_MISMATCH
    } else if record
        .properties
        .iter()
        .all(|p| p.outcome == Outcome::Holds)
    {
        exit::OK
    } else {
        exit::REJECT
    }
}

/// The table of properties people read.
pub fn property_table(record: &PropertyRecord) -> String {
    let width = record
        .properties
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut text = format!(
        "  {:width$}  {:8}  {:>12}  detail\n",
        "property", "outcome", "fuel"
    );
    for p in &record.properties {
        let mut detail: Vec<String> = p.error.iter().cloned().collect();
        detail.extend(p.findings.iter().map(|f| {
            let at = match (f.path.as_str(), f.line) {
                ("", _) => String::new(),
                (path, Some(l)) => format!("{path}:{l}: "),
                (path, None) => format!("{path}: "),
            };
            format!(
                "{}{at}{}",
                if f.frozen { "[frozen] " } else { "" },
                f.message
            )
        }));
        let fuel = if p.plugin == "host" {
            "-".to_string()
        } else {
            p.fuel_used.to_string()
        };
        let first = detail.first().cloned().unwrap_or_default();
        text.push_str(&format!(
            "  {:width$}  {:8}  {:>12}  {}\n",
            p.name,
            p.outcome.as_str(),
            fuel,
            first
        ));
        for more in detail.iter().skip(1) {
            text.push_str(&format!(
                "  {:width$}  {:8}  {:>12}  {}\n",
                "", "", "", more
            ));
        }
    }
    for (kind, paths) in [
        ("added", &record.fixtures.added),
        ("removed", &record.fixtures.removed),
        ("changed", &record.fixtures.changed),
    ] {
        for p in paths {
            text.push_str(&format!("  fixture {kind}: {p}\n"));
        }
    }
    text
}
