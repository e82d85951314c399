//! `agent-ledger pack`: one archive of selected runs, for offline `verify`.

use crate::exit::{ExitCode, Result};
use crate::ledger::RunId;
use crate::output::{self, OutputArgs, OutputFormat, inert};
use crate::resolve::ScopeArgs;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct PackArgs {
    /// Runs to archive (repeatable).
    #[arg(long = "run", value_name = "ID", required = true)]
    pub runs: Vec<String>,
    /// The archive to write (never overwritten).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl PackArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let ledger = &self.scope.ledger(ledger)?;
        let runs = self
            .runs
            .iter()
            .map(|r| RunId::parse(r))
            .collect::<Result<Vec<_>>>()?;
        let manifest = crate::archive::pack(ledger, &runs, &self.out)?;
        match self.output.format {
            OutputFormat::Json => output::print_json(&manifest)?,
            OutputFormat::Human => output::print(&format!(
                "packed {} run(s), {} file(s) -> {}\n",
                manifest.runs.len(),
                manifest.files.len(),
                inert(&self.out.display().to_string())
            ))?,
        }
        Ok(ExitCode::Ok)
    }
}
