//! Reports for CI, from any ledger: JUnit XML (`junit`), SARIF 2.1.0
//! (`sarif`), GitHub workflow commands (`github`), a Markdown summary
//! (`markdown`) and a single-file HTML page (`html`).
//!
//! All of them render one reading of the runs ([`read`]): each run's records
//! read through `chain`, links checked, so a broken chain is reported as a
//! trial of its own status rather than skipped, and a run with records but
//! no verdict is "not classified". Findings, paths, messages and reasons come
//! from plugins and patches, so each format's module escapes every one of
//! them for the place it lands in.
//!
//! Reports are regenerated artifacts, not records: [`write`] replaces the
//! named file atomically and refuses any path inside the ledger.

pub mod github;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod sarif;

use crate::chain;
use crate::exit::{Error, Result};
use crate::ledger::{Ledger, RunId};
use crate::record::ReasonCode;
use crate::record::{Finding, Outcome, PropertyResult, Reason, Verdict};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The schema version of [`Summary`].
pub const SCHEMA: u32 = 1;

/// How many trials the "slowest" list keeps.
pub const SLOWEST: usize = 10;

/// The format of a report file written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportFormat {
    Junit,
    Sarif,
    Markdown,
    Html,
    /// The SWE-bench harness-shaped report (`--swebench`).
    Swebench,
}

impl ReportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportFormat::Junit => "junit",
            ReportFormat::Sarif => "sarif",
            ReportFormat::Markdown => "markdown",
            ReportFormat::Html => "html",
            ReportFormat::Swebench => "swebench",
        }
    }
}

/// Where a run stands in the report: its verdict, or why it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    Review,
    Incomplete,
    FixtureMismatch,
    Reject,
    /// Records are on file, but no verdict yet.
    NotClassified,
    /// A record is unreadable, or does not name the records on file before
    /// it: nothing in the run is trusted.
    Broken,
}

impl TrialStatus {
    pub const ALL: [TrialStatus; 6] = [
        TrialStatus::Review,
        TrialStatus::Incomplete,
        TrialStatus::FixtureMismatch,
        TrialStatus::Reject,
        TrialStatus::NotClassified,
        TrialStatus::Broken,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TrialStatus::Review => "review",
            TrialStatus::Incomplete => "incomplete",
            TrialStatus::FixtureMismatch => "fixture_mismatch",
            TrialStatus::Reject => "reject",
            TrialStatus::NotClassified => "not_classified",
            TrialStatus::Broken => "broken",
        }
    }

    /// How people read it in a table.
    pub fn label(self) -> &'static str {
        match self {
            TrialStatus::NotClassified => "not classified",
            TrialStatus::Broken => "broken chain",
            other => other.as_str(),
        }
    }

    /// The verdict, when the run has one.
    pub fn verdict(self) -> Option<Verdict> {
        match self {
            TrialStatus::Review => Some(Verdict::Review),
            TrialStatus::Incomplete => Some(Verdict::Incomplete),
            TrialStatus::FixtureMismatch => Some(Verdict::FixtureMismatch),
            TrialStatus::Reject => Some(Verdict::Reject),
            TrialStatus::NotClassified | TrialStatus::Broken => None,
        }
    }

    fn of(verdict: Verdict) -> TrialStatus {
        match verdict {
            Verdict::Review => TrialStatus::Review,
            Verdict::Incomplete => TrialStatus::Incomplete,
            Verdict::FixtureMismatch => TrialStatus::FixtureMismatch,
            Verdict::Reject => TrialStatus::Reject,
        }
    }
}

/// One run, as every report shows it.
#[derive(Debug, Clone)]
pub struct Trial {
    pub run_id: String,
    pub status: TrialStatus,
    /// The verdict's reasons; for a broken chain, what is broken.
    pub reasons: Vec<Reason>,
    /// The property results on file, in record order; empty when there is
    /// no property record or the chain is broken.
    pub properties: Vec<PropertyResult>,
    /// The paths the captured patch names (repository-relative, as `git
    /// apply` strips them), in patch order; empty without a transcript.
    /// Where a report must point at a file for a trial-level result.
    pub patched: Vec<String>,
    /// What the HTML report shows of the trial beside its verdict.
    pub about: About,
    /// The property record, when there is one and the chain holds: what
    /// `report --swebench` compares with the manifest's line.
    pub record: Option<Box<crate::record::PropertyRecord>>,
    /// The transcript receipt, likewise.
    pub receipt: Option<Box<crate::record::TranscriptReceipt>>,
}

/// A trial's inputs, for people: the repository, the base it was judged
/// on, the model, the patch. Each is absent when no record on file holds it.
#[derive(Debug, Clone, Default)]
pub struct About {
    /// The repository the patch was captured in (the receipt's
    /// `repository`).
    pub repository: Option<String>,
    /// The base revision (the property record's, else a `capture --git`
    /// receipt's merge base).
    pub base: Option<String>,
    /// The model the response came from (what the server said, else what
    /// was asked for).
    pub model: Option<String>,
    /// The commits the patch was taken from (`capture --git`).
    pub range: Option<String>,
    /// The patch's size in bytes, and its first [`PATCH_SHOWN`] bytes as
    /// text (lossy; untrusted).
    pub patch_bytes: Option<u64>,
    pub patch: Option<String>,
    /// How long the trial's test command ran (`test_run.elapsed_ms`).
    pub test_ms: Option<u64>,
}

/// How much of a patch the HTML report shows.
pub const PATCH_SHOWN: usize = 64 << 10;

impl Trial {
    /// Fuel all properties used: the deterministic measure of a trial's
    /// cost (wall time is not recorded, as it would make replays differ).
    pub fn fuel(&self) -> u64 {
        self.properties.iter().map(|p| p.fuel_used).sum()
    }

    fn broken(run_id: &str, why: String) -> Trial {
        Trial {
            run_id: run_id.to_string(),
            status: TrialStatus::Broken,
            reasons: vec![Reason::new(ReasonCode::BrokenChain, why)],
            properties: Vec::new(),
            patched: Vec::new(),
            about: About::default(),
            record: None,
            receipt: None,
        }
    }
}

/// Reads `runs` (every run with a record, when empty) from the ledger.
/// A run named on the command line must have a record; a run whose
/// records do not hold together is a [`TrialStatus::Broken`] trial.
pub fn read(ledger: &Ledger, runs: &[String]) -> Result<Vec<Trial>> {
    let explicit = !runs.is_empty();
    let runs = if explicit {
        let mut named = Vec::new();
        for run in runs {
            let id = RunId::parse(run)?;
            if !has_record(ledger, &id) {
                return Err(Error::Missing(format!(
                    "no record of run `{id}` in `{}`",
                    ledger.root().display()
                )));
            }
            if !named.contains(run) {
                named.push(run.clone());
            }
        }
        named
    } else {
        crate::verify::runs_in(ledger)
    };
    if runs.is_empty() {
        return Err(Error::Missing(format!(
            "no runs to report in `{}`",
            ledger.root().display()
        )));
    }
    Ok(runs.iter().map(|run| read_trial(ledger, run)).collect())
}

fn has_record(ledger: &Ledger, run: &RunId) -> bool {
    [
        ledger.transcript(run),
        ledger.lock(run),
        ledger.properties(run),
        ledger.verdict(run),
    ]
    .iter()
    .any(|p| p.symlink_metadata().is_ok())
}

fn read_trial(ledger: &Ledger, run: &str) -> Trial {
    let id = match RunId::parse(run) {
        Ok(id) => id,
        Err(e) => return Trial::broken(run, e.to_string()),
    };
    let records = match chain::read_run(ledger, &id) {
        Ok(r) => r,
        Err(e) => return Trial::broken(run, e.to_string()),
    };
    if let Err(why) = crate::classify::stored_verdict_follows(&id, &records) {
        return Trial::broken(run, why);
    }
    let mut patched: Vec<String> = Vec::new();
    let mut about = About {
        base: records
            .properties
            .as_ref()
            .map(|p| p.record.base_revision.clone()),
        test_ms: records
            .properties
            .as_ref()
            .and_then(|p| p.record.test_run.as_ref())
            .and_then(|r| r.elapsed_ms),
        ..About::default()
    };
    if let Some(t) = &records.transcript {
        let r = &t.loaded.record;
        about.repository = r.repository.clone();
        about.model = r
            .model
            .clone()
            .or_else(|| r.http.as_ref().map(|h| h.model_requested.clone()));
        if let Some(g) = &r.git {
            about.range = Some(g.range.clone());
            about.base = about.base.or_else(|| Some(g.merge_base.clone()));
        }
        about.patch_bytes = Some(t.patch.len() as u64);
        let shown = &t.patch[..t.patch.len().min(PATCH_SHOWN)];
        about.patch = Some(String::from_utf8_lossy(shown).into_owned());
    }
    if let Some(t) = &records.transcript {
        for p in crate::diff::header_paths(&t.patch, t.loaded.record.strip) {
            let p = String::from_utf8_lossy(&p).into_owned();
            if !patched.contains(&p) {
                patched.push(p);
            }
        }
    }
    let record = records.properties.map(|p| Box::new(p.record));
    let receipt = records.transcript.map(|t| Box::new(t.loaded.record));
    let properties = record
        .as_ref()
        .map(|r| r.properties.clone())
        .unwrap_or_default();
    let (status, reasons) = match records.verdict {
        Some(v) => (TrialStatus::of(v.record.verdict), v.record.reasons),
        None => (TrialStatus::NotClassified, Vec::new()),
    };
    Trial {
        run_id: run.to_string(),
        status,
        reasons,
        properties,
        patched,
        about,
        record,
        receipt,
    }
}

/// A finding as one line of text: `[frozen] path:line: message`. Raw: each
/// format escapes it.
pub fn finding_line(f: &Finding) -> String {
    let at = match (f.path.as_str(), f.line) {
        ("", _) => String::new(),
        (path, Some(line)) => format!("{path}:{line}: "),
        (path, None) => format!("{path}: "),
    };
    format!(
        "{}{at}{}",
        if f.frozen { "[frozen] " } else { "" },
        f.message
    )
}

/// Whether a property's outcome fails the trial.
pub fn fails(outcome: Outcome) -> bool {
    outcome != Outcome::Holds
}

/// What `report` found, printed with `--format json` and the data the
/// Markdown and HTML summaries show.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// The version of this document's shape.
    pub schema: u32,
    /// How many trials have each status.
    pub counts: Counts,
    /// Each property's outcomes over the trials that have a property record
    /// (broken chains excluded), in the order the properties first appear.
    pub properties: Vec<PropertyTally>,
    /// Up to ten trials with properties, most fuel first (ties by run id).
    /// Ranked by fuel, not wall time: fuel is deterministic and recorded;
    /// wall time is neither, and recording it would make replays differ.
    pub slowest: Vec<TrialLine>,
    /// Every trial, in run-id order.
    pub trials: Vec<TrialLine>,
    /// The files this command wrote.
    pub written: Vec<Written>,
}

/// Trials per status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Counts {
    pub trials: u64,
    pub review: u64,
    pub incomplete: u64,
    pub fixture_mismatch: u64,
    pub reject: u64,
    pub not_classified: u64,
    pub broken: u64,
}

impl Counts {
    pub fn get(&self, status: TrialStatus) -> u64 {
        match status {
            TrialStatus::Review => self.review,
            TrialStatus::Incomplete => self.incomplete,
            TrialStatus::FixtureMismatch => self.fixture_mismatch,
            TrialStatus::Reject => self.reject,
            TrialStatus::NotClassified => self.not_classified,
            TrialStatus::Broken => self.broken,
        }
    }

    fn add(&mut self, status: TrialStatus) {
        self.trials += 1;
        *match status {
            TrialStatus::Review => &mut self.review,
            TrialStatus::Incomplete => &mut self.incomplete,
            TrialStatus::FixtureMismatch => &mut self.fixture_mismatch,
            TrialStatus::Reject => &mut self.reject,
            TrialStatus::NotClassified => &mut self.not_classified,
            TrialStatus::Broken => &mut self.broken,
        } += 1;
    }
}

/// One property's outcomes over the trials.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PropertyTally {
    pub name: String,
    pub holds: u64,
    pub miss: u64,
    pub error: u64,
    pub vacuous: u64,
}

impl PropertyTally {
    pub fn get(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Holds => self.holds,
            Outcome::Miss => self.miss,
            Outcome::Error => self.error,
            Outcome::Vacuous => self.vacuous,
        }
    }

    pub fn total(&self) -> u64 {
        self.holds + self.miss + self.error + self.vacuous
    }
}

/// One trial in a summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TrialLine {
    pub run_id: String,
    pub status: TrialStatus,
    /// Fuel all its properties used.
    pub fuel_used: u64,
    /// Properties whose outcome is not `holds`.
    pub failing: Vec<String>,
}

/// A report file written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Written {
    pub format: ReportFormat,
    pub path: String,
}

impl Summary {
    pub fn of(trials: &[Trial]) -> Summary {
        let mut counts = Counts::default();
        let mut properties: Vec<PropertyTally> = Vec::new();
        for t in trials {
            counts.add(t.status);
            for p in &t.properties {
                let i = match properties.iter().position(|x| x.name == p.name) {
                    Some(i) => i,
                    None => {
                        properties.push(PropertyTally {
                            name: p.name.clone(),
                            ..PropertyTally::default()
                        });
                        properties.len() - 1
                    }
                };
                let tally = &mut properties[i];
                *match p.outcome {
                    Outcome::Holds => &mut tally.holds,
                    Outcome::Miss => &mut tally.miss,
                    Outcome::Error => &mut tally.error,
                    Outcome::Vacuous => &mut tally.vacuous,
                } += 1;
            }
        }
        let line = |t: &Trial| TrialLine {
            run_id: t.run_id.clone(),
            status: t.status,
            fuel_used: t.fuel(),
            failing: t
                .properties
                .iter()
                .filter(|p| fails(p.outcome))
                .map(|p| p.name.clone())
                .collect(),
        };
        let mut trials: Vec<TrialLine> = trials.iter().map(line).collect();
        trials.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        let mut slowest: Vec<TrialLine> =
            trials.iter().filter(|t| t.fuel_used > 0).cloned().collect();
        slowest.sort_by(|a, b| b.fuel_used.cmp(&a.fuel_used).then(a.run_id.cmp(&b.run_id)));
        slowest.truncate(SLOWEST);
        Summary {
            schema: SCHEMA,
            counts,
            properties,
            slowest,
            trials,
            written: Vec::new(),
        }
    }
}

/// Refuses an output path inside the ledger: reports are regenerated
/// artifacts, and the ledger holds only records written once.
pub fn check_outside(path: &Path, ledger: &Ledger) -> Result<()> {
    let Ok(ledger_root) = ledger.root().canonicalize() else {
        return Ok(());
    };
    let dir = parent(path);
    let dir = dir.canonicalize().map_err(|e| Error::write(&dir, e))?;
    if dir.starts_with(&ledger_root) {
        return Err(Error::Usage(format!(
            "refusing to write the report `{}` inside the ledger `{}`: write reports elsewhere",
            path.display(),
            ledger.root().display()
        )));
    }
    Ok(())
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes a report, replacing any file at `path` atomically: a temp file in
/// the same directory, fsync, rename, fsync of the directory. A reader sees
/// the old report or the new one, never half of one. A symlink at `path` is
/// replaced, not followed.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    use crate::atomic::{Access, Clobber};
    crate::atomic::write(path, bytes, Access::Shared, Clobber::Replace)
}

#[cfg(test)]
pub(crate) mod tests;
