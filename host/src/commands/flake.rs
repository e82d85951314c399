//! `agent-ledger flake observe|list|prune`: the flake-freeze file.

use crate::clock::{format_time, parse_flag};
use crate::config::Config;
use crate::digest::sha256_hex;
use crate::exit::{Error, ExitCode, Result};
use crate::freeze::{FreezeFile, Row};
use crate::junit::{self, Status};
use crate::ledger::{self, Ledger, RunId};
use crate::output::{self, OutputArgs, OutputFormat, inert};
use crate::record::TranscriptReceipt;
use crate::resolve::{ConfigAt, Needs, ScopeArgs};
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

#[derive(Debug, clap::Args)]
pub struct FlakeArgs {
    #[command(subcommand)]
    pub command: FlakeCommand,
}

#[derive(Debug, Clone, clap::Args)]
pub struct FreezeWhere {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// The freeze file [default: `[flakes].file` of the configuration, else `flakes.toml`].
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The instant expiry is judged against (RFC 3339 or a date) [default: now].
    #[arg(long, value_name = "T")]
    pub now: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum FlakeCommand {
    /// Freeze a test from evidence: two or more JUnit reports of one revision
    /// in which it both passed and failed.
    Observe {
        /// Test id: the testcase's `classname::name`.
        #[arg(long, value_name = "ID")]
        test: String,
        /// The revision the reports were produced at.
        #[arg(long, value_name = "REV")]
        revision: String,
        /// Why the test is believed flaky.
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// When the freeze ends (RFC 3339 or a date; at most `max_days` ahead).
        #[arg(long, value_name = "DATE")]
        expires: String,
        /// A JUnit XML report (repeat: two or more).
        #[arg(long = "report", value_name = "FILE", required = true)]
        reports: Vec<PathBuf>,
        #[command(flatten)]
        at: FreezeWhere,
    },
    /// Show active and expired rows.
    List {
        #[command(flatten)]
        at: FreezeWhere,
    },
    /// Remove expired rows.
    Prune {
        #[command(flatten)]
        at: FreezeWhere,
    },
}

struct Setup {
    config: Config,
    file: PathBuf,
    now: OffsetDateTime,
    ledger: Ledger,
    repo: Option<crate::git::Repo>,
}

fn setup(at: &FreezeWhere, ledger: Option<&Path>) -> Result<Setup> {
    let resolved = at.scope.resolve(
        ledger,
        Needs {
            repo: false,
            config_at: ConfigAt::WorkingTree,
        },
    )?;
    let file = at
        .file
        .clone()
        .unwrap_or_else(|| resolved.root.join(&resolved.config.config.flakes.file));
    let now = match at.now.as_deref() {
        Some(s) => parse_flag("--now", s)?,
        None => crate::clock::now(),
    };
    Ok(Setup {
        now,
        file,
        ledger: resolved.ledger,
        repo: resolved.repo,
        config: resolved.config.config,
    })
}

impl FlakeArgs {
    /// Whether the subcommand reads the ledger (`observe` does; `list` and
    /// `prune` touch only the freeze file).
    pub fn keeps_records(&self) -> bool {
        matches!(self.command, FlakeCommand::Observe { .. })
    }

    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        match self.command {
            FlakeCommand::Observe {
                test,
                revision,
                reason,
                expires,
                reports,
                at,
            } => {
                let s = setup(&at, ledger)?;
                observe(&s, &test, &revision, &reason, &expires, &reports, &at)
            }
            FlakeCommand::List { at } => {
                let s = setup(&at, None)?;
                let freeze = FreezeFile::load(&s.file)?;
                show(&freeze, s.now, at.output.format, "")?;
                Ok(ExitCode::Ok)
            }
            FlakeCommand::Prune { at } => {
                let s = setup(&at, None)?;
                let mut freeze = FreezeFile::load(&s.file)?;
                let before = freeze.rows.len();
                freeze.rows.retain(|r| r.active(s.now));
                let removed = before - freeze.rows.len();
                if removed > 0 {
                    freeze.save(&s.file)?;
                }
                show(
                    &freeze,
                    s.now,
                    at.output.format,
                    &format!("pruned {removed} expired row(s)\n"),
                )?;
                Ok(ExitCode::Ok)
            }
        }
    }
}

/// `flake list --format json` (and `flake prune`).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct FlakeListOutput<'a> {
    /// The instant each row was judged at.
    pub now: String,
    pub rows: Vec<FlakeListRow<'a>>,
}

/// A freeze row and whether it is in force at `now`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct FlakeListRow<'a> {
    #[serde(flatten)]
    pub row: &'a Row,
    pub status: RowStatus,
}

/// Whether a freeze row is in force.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Before its expiry.
    Active,
    /// At or past its expiry.
    Expired,
}

/// `flake observe --format json`: the row written.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct FlakeObserveOutput<'a> {
    pub frozen: &'a Row,
    /// The freeze file written.
    pub file: &'a Path,
}

fn show(freeze: &FreezeFile, now: OffsetDateTime, format: OutputFormat, head: &str) -> Result<()> {
    match format {
        OutputFormat::Json => output::print_json(&FlakeListOutput {
            now: format_time(now),
            rows: freeze
                .rows
                .iter()
                .map(|row| FlakeListRow {
                    status: if row.active(now) {
                        RowStatus::Active
                    } else {
                        RowStatus::Expired
                    },
                    row,
                })
                .collect(),
        }),
        OutputFormat::Human => {
            let mut text = head.to_string();
            if freeze.rows.is_empty() {
                text.push_str("no flake freezes\n");
            }
            for r in &freeze.rows {
                text.push_str(&format!(
                    "{:7}  {}  expires {}  ({})\n",
                    if r.active(now) { "active" } else { "expired" },
                    inert(&r.test),
                    inert(&r.expires),
                    inert(&r.reason)
                ));
            }
            output::print(&text)
        }
    }
}

/// The run a report belongs to, found by its digest among the reports stored
/// in the ledger.
fn report_run(ledger: &Ledger, sha: &str) -> Result<Option<String>> {
    let dir = ledger.root().join("properties");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(None);
    };
    for entry in entries {
        let path = entry.map_err(|e| Error::read(&dir, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(run) = name.strip_suffix(".junit.xml") {
            let bytes = crate::input::read_file(&path, crate::input::REPORT_CAP)?;
            if sha256_hex(&bytes) == sha {
                return Ok(Some(run.to_string()));
            }
        }
    }
    Ok(None)
}

fn observe(
    s: &Setup,
    test: &str,
    revision: &str,
    reason: &str,
    expires: &str,
    reports: &[PathBuf],
    at: &FreezeWhere,
) -> Result<ExitCode> {
    let refuse = |rule: &str| Err(Error::Refused(rule.to_string()));
    let repo = s.repo.as_ref().ok_or_else(|| {
        Error::Missing(format!(
            "`--revision {revision}` needs a git repository: run in one or pass --repo DIR"
        ))
    })?;
    let revision = repo.resolve_commit(revision)?;
    if reason.trim().is_empty() {
        return refuse("`--reason` must say why the test is believed flaky");
    }
    let mut passed = 0;
    let mut failed = 0;
    let mut digests = Vec::new();
    let mut runs = Vec::new();
    for path in reports {
        let bytes = crate::input::read_file(path, crate::input::REPORT_CAP)?;
        let sha = sha256_hex(&bytes);
        if let Some(run) = report_run(&s.ledger, &sha)? {
            let receipt = ledger::read_optional::<TranscriptReceipt>(
                &s.ledger.transcript(&RunId::parse(&run)?),
            )?;
            if !receipt.is_some_and(|t| t.record.complete) {
                return refuse(&format!(
                    "report `{}` belongs to run `{run}`, whose transcript is incomplete or missing: a transport failure cannot open or extend a freeze (rule 2)",
                    path.display()
                ));
            }
            runs.push(run);
        }
        let cases = junit::parse(path, &bytes)?;
        match cases.iter().rev().find(|c| c.id == test).map(|c| c.status) {
            Some(Status::Passed) => passed += 1,
            Some(Status::Failed) => failed += 1,
            Some(Status::Skipped) | None => {}
        }
        if !digests.contains(&sha) {
            digests.push(sha);
        }
    }
    if digests.len() < 2 {
        return refuse("a freeze needs two or more distinct JUnit reports of the same revision");
    }
    if passed == 0 || failed == 0 {
        return refuse(&format!(
            "no evidence of nondeterminism: `{test}` passed in {passed} and failed in {failed} report(s); a plain failure or a property miss cannot create a row (rule 1)"
        ));
    }
    let expiry = parse_flag("--expires", expires)?;
    if expiry <= s.now {
        return refuse(&format!(
            "`--expires {expires}` is not after now ({})",
            format_time(s.now)
        ));
    }
    let max = s.now + time::Duration::days(i64::from(s.config.flakes.max_days));
    if expiry > max {
        return refuse(&format!(
            "`--expires {expires}` is further out than `max_days` = {} (latest {})",
            s.config.flakes.max_days,
            format_time(max)
        ));
    }
    let mut freeze = FreezeFile::load(&s.file)?;
    if let Some(row) = freeze
        .rows
        .iter()
        .find(|r| r.test == test && r.active(s.now))
        && digests.iter().all(|d| row.reports.contains(d))
    {
        return refuse(&format!(
            "`{test}` is already frozen until {}; extending a row needs a new observation (new reports)",
            row.expires
        ));
    }
    let mut row = Row {
        test: test.to_string(),
        revision,
        reason: reason.to_string(),
        expires: format_time(expiry),
        observed_at: format_time(s.now),
        reports: digests,
        runs,
    };
    if let Some(old) = freeze.rows.iter().position(|r| r.test == test) {
        let old = freeze.rows.remove(old);
        if old.active(s.now) {
            for d in old.reports {
                if !row.reports.contains(&d) {
                    row.reports.push(d);
                }
            }
        }
    }
    freeze.rows.push(row);
    freeze.rows.sort_by(|a, b| a.test.cmp(&b.test));
    freeze.save(&s.file)?;
    match at.output.format {
        OutputFormat::Json => {
            let row = freeze
                .rows
                .iter()
                .find(|r| r.test == test)
                .expect("the row just written");
            output::print_json(&FlakeObserveOutput {
                frozen: row,
                file: &s.file,
            })?
        }
        OutputFormat::Human => output::print(&format!(
            "frozen: {} until {}\n",
            inert(test),
            format_time(expiry)
        ))?,
    }
    Ok(ExitCode::Ok)
}
