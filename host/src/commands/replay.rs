//! `agent-ledger replay`: run the properties on the patched tree and write
//! the property record (the lock must exist; `check` makes it).

use crate::chain;
use crate::check::property_exit;
use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputArgs};
use crate::replay::TrialTrees;
use crate::resolve::TrialArgs;
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub trial: TrialArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReplayArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let (spec, sandbox) = self.trial.resolve(ledger)?;
        let transcript = chain::require_transcript(&spec.ledger, &spec.run)?;
        if !transcript.loaded.record.complete {
            let value = ReplayIncompleteOutput {
                result: crate::record::CaptureVerdict::Incomplete,
                run_id: spec.run.as_str(),
                reasons: &transcript.loaded.record.reasons,
            };
            output::emit(self.output.format, &value, || {
                format!(
                    "incomplete: the transcript of run {} is incomplete; properties not run\n",
                    spec.run
                )
            })?;
            return Ok(ExitCode::Incomplete);
        }
        let lock =
            chain::read_lock(&spec.ledger, &spec.run, &transcript.loaded)?.ok_or_else(|| {
                Error::Missing(format!(
                    "no fixture lock `{}`: run `agent-ledger lock` first, or `agent-ledger check`",
                    spec.ledger.lock(&spec.run).display()
                ))
            })?;
        let trees = TrialTrees::new(&spec.repo, &spec.base)?;
        let props = crate::check::replay(&spec, sandbox.get()?, &transcript, &lock, &trees)?;
        output::emit(self.output.format, &props.record, || {
            output::human::property_table(&props.record)
        })?;
        Ok(property_exit(&props.record))
    }
}

/// `replay --format json` of a run whose transcript is incomplete: no
/// property ran (otherwise `replay` prints the property record).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ReplayIncompleteOutput<'a> {
    /// Always `incomplete`.
    pub result: crate::record::CaptureVerdict,
    pub run_id: &'a str,
    /// The receipt's reasons.
    pub reasons: &'a [crate::record::Reason],
}
