//! `agent-ledger classify`: the verdict of a run from its records.

use crate::chain;
use crate::classify::{Records, classify};
use crate::exit::{ExitCode, Result};
use crate::ledger::{self, RunId};
use crate::output::{self, OutputArgs};
use crate::resolve::ScopeArgs;
use std::path::{Path, PathBuf};

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
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ClassifyArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let run = RunId::parse(&self.run)?;
        let ledger = self.scope.ledger(ledger)?;
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
        chain::store_verdict(&ledger, &run, &verdict)?;
        output::emit(self.output.format, &verdict, || {
            output::human::verdict(&verdict)
        })?;
        Ok(verdict.verdict.exit_code())
    }
}
