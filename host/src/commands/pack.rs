//! `agent-ledger pack`: one archive of selected runs, for offline `verify`.

use crate::cli::{OutputArgs, OutputFormat};
use crate::exit::{self, Result};
use crate::ledger::{Ledger, RunId};
use crate::output;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct PackArgs {
    /// Runs to archive (repeatable).
    #[arg(long = "run", value_name = "ID", required = true)]
    pub runs: Vec<String>,
    /// The archive to write (never overwritten).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl PackArgs {
    pub fn execute(self, ledger: &Ledger) -> Result<i32> {
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
                self.out.display()
            ))?,
        }
        Ok(exit::OK)
    }
}
