//! `agent-ledger merge`: combine shard ledgers (see `merge`).

use crate::exit::{ExitCode, Result};
use crate::output::{self, OutputArgs, inert};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The ledger to merge into (created when missing).
    #[arg(long, value_name = "LEDGER")]
    pub into: PathBuf,
    /// The ledgers to merge from.
    #[arg(value_name = "SRC", required = true)]
    pub sources: Vec<PathBuf>,
    /// A public key (from `keygen`) every signature a source brings must
    /// verify under (repeatable). Without one, a signature is still
    /// compared with its run's records, but its bytes are not checked.
    #[arg(long = "trusted-key", value_name = "FILE")]
    pub trusted_keys: Vec<PathBuf>,
    /// The batch manifest the shards ran: every run a source brings must be
    /// one of its lines and must have been judged as that line says (base,
    /// test command, log parser, evaluator's patch, required tests, a
    /// baseline for an evaluation); a mismatch is refused, naming the run.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl MergeArgs {
    pub fn execute(self) -> Result<ExitCode> {
        let trusted = self
            .trusted_keys
            .iter()
            .map(|k| crate::sign::load_verifying(k))
            .collect::<Result<Vec<_>>>()?;
        let merged = crate::merge::merge(
            &self.into,
            &self.sources,
            &trusted,
            self.manifest.as_deref(),
        )?;
        output::emit(self.output.format, &merged, || {
            format!(
                "merged into {}: {} file(s) copied, {} already there\n",
                inert(&self.into.display().to_string()),
                merged.copied.len(),
                merged.identical
            )
        })?;
        Ok(ExitCode::Ok)
    }
}
