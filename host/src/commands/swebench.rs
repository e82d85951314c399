//! `agent-ledger swebench import`: a SWE-bench dataset and predictions as
//! a batch manifest (see `swebench`).

use crate::exit::{ExitCode, Result};
use crate::output::{self, OutputArgs};
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum SwebenchCommand {
    /// Write a batch manifest (and one body file per prediction, one test
    /// patch per instance) from a dataset and predictions as published.
    Import(ImportArgs),
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The dataset: JSON list or JSONL of instances (`instance_id`, `repo`,
    /// `base_commit`, `test_patch`, `FAIL_TO_PASS`, `PASS_TO_PASS`,
    /// `version`).
    #[arg(long, value_name = "FILE")]
    pub dataset: PathBuf,
    /// The predictions: JSON list, JSON object by instance id, or JSONL
    /// (`instance_id`, `model_name_or_path`, `model_patch`).
    #[arg(long, value_name = "FILE")]
    pub predictions: PathBuf,
    /// How each repository's tests run, and where its clone is (TOML; see
    /// `schemas/swebench-import.schema.json`).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// A new directory for the manifest, bodies and test patches.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Leave out predictions whose instance is not in the dataset (else an
    /// error).
    #[arg(long)]
    pub skip_unknown: bool,
    /// The `captured_at` of every trial (RFC 3339) [default: now]: fixed,
    /// a re-run batch writes the same records.
    #[arg(long, value_name = "T")]
    pub captured_at: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl SwebenchCommand {
    pub fn execute(self) -> Result<ExitCode> {
        match self {
            SwebenchCommand::Import(args) => args.execute(),
        }
    }
}

impl ImportArgs {
    fn execute(self) -> Result<ExitCode> {
        let at = match &self.captured_at {
            Some(t) => crate::clock::parse_flag("--captured-at", t)?,
            None => crate::clock::now(),
        };
        let imported = crate::swebench::import(
            &self.dataset,
            &self.predictions,
            &self.config,
            &self.out,
            self.skip_unknown,
            &crate::clock::format_time(at),
        )?;
        output::emit(self.output.format, &imported, || {
            let roots: String = imported
                .manifest_roots
                .iter()
                .map(|r| format!(" --manifest-root {}", output::inert(r)))
                .collect();
            format!(
                "wrote {} with {} trial(s) of {} model(s) ({} empty patch(es){}); run it with `agent-ledger --ledger {} batch --manifest {}{roots}`\n",
                output::inert(&imported.manifest),
                imported.trials,
                imported.models.len(),
                imported.empty_patches,
                if imported.skipped.is_empty() {
                    String::new()
                } else {
                    format!(", {} skipped", imported.skipped.len())
                },
                output::inert(&self.out.join("ledger").display().to_string()),
                output::inert(&imported.manifest),
            )
        })?;
        Ok(ExitCode::Ok)
    }
}
