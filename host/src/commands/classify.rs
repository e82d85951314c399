//! `agent-ledger classify`: the verdict of a run from its records.

use crate::classify::{Records, classify};
use crate::cli::{OutputArgs, OutputFormat};
use crate::exit::{Error, Result};
use crate::ledger::{self, Ledger, RunId};
use crate::output;
use crate::record::VerdictRecord;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    /// Run id to classify.
    #[arg(long, value_name = "ID")]
    pub run: String,
    /// Transcript receipt to read instead of `<ledger>/transcripts/ID.json`.
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Fixture lock to read instead of `<ledger>/fixtures/ID.lock.json`.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Property record to read instead of `<ledger>/properties/ID.json`.
    #[arg(long, value_name = "FILE")]
    pub properties: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ClassifyArgs {
    pub fn execute(self, ledger: &Ledger) -> Result<i32> {
        let run = RunId::parse(&self.run)?;
        // An explicitly named record must exist; a default one may be missing.
        fn load<T: crate::record::Record>(
            explicit: Option<PathBuf>,
            default: PathBuf,
        ) -> Result<Option<ledger::Loaded<T>>> {
            match explicit {
                Some(p) => ledger::read_required(&p).map(Some),
                None => ledger::read_optional(&default),
            }
        }
        let records = Records {
            transcript: load(self.transcript, ledger.transcript(&run))?,
            lock: load(self.lock, ledger.lock(&run))?,
            properties: load(self.properties, ledger.properties(&run))?,
        };
        let verdict = classify(&run, &records)?;
        store_verdict(ledger, &run, &verdict)?;
        print_verdict(&verdict, self.output.format)?;
        Ok(verdict.exit_code)
    }
}

/// Writes the verdict record. Classifying again from the same records is
/// idempotent; a different verdict for a recorded run is never written over.
pub fn store_verdict(ledger: &Ledger, run: &RunId, verdict: &VerdictRecord) -> Result<()> {
    let path = ledger.verdict(run);
    if let Some(existing) = ledger::read_optional::<VerdictRecord>(&path)?
        && &existing.record != verdict
    {
        return Err(Error::Exists {
            path,
            hint: format!(
                "it records `{}` from other records; a retry is a new run id",
                existing.record.verdict.as_str()
            ),
        });
    }
    ledger::write_or_match(&path, verdict, "verdict").map(|_| ())
}

/// The verdict and its reasons, as people read them.
pub fn verdict_text(verdict: &VerdictRecord) -> String {
    let mut text = format!(
        "verdict: {} (exit {}) for run {}\n",
        verdict.verdict.as_str(),
        verdict.exit_code,
        verdict.run_id
    );
    for r in &verdict.reasons {
        text.push_str(&format!("  - {}: {}\n", r.code, r.message));
    }
    text
}

pub fn print_verdict(verdict: &VerdictRecord, format: OutputFormat) -> Result<()> {
    match format {
        OutputFormat::Json => output::print_json(verdict),
        OutputFormat::Human => output::print(&verdict_text(verdict)),
    }
}
