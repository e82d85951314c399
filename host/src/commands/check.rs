//! `agent-ledger check`: lock (when no lock exists, from the base tree),
//! replay and classify in one command. The CI gate: it exits with the
//! verdict code.

use crate::exit::{ExitCode, Result};
use crate::output::{self, OutputArgs};
use crate::resolve::TrialArgs;
use std::path::Path;

/// `check --format json`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct CheckOutput<'a> {
    /// The verdict record written.
    pub verdict: &'a crate::record::VerdictRecord,
    /// The property record, when the properties ran.
    pub properties: Option<&'a crate::record::PropertyRecord>,
    /// What the check noticed on the way (a cached base run used, ...).
    pub notes: &'a [String],
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub trial: TrialArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl CheckArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let (spec, sandbox) = self.trial.resolve(ledger)?;
        let checked = crate::check::check(&spec, &sandbox)?;
        let props = checked.properties.as_ref().map(|p| &p.record);
        let value = CheckOutput {
            verdict: &checked.verdict,
            properties: props,
            notes: &checked.notes,
        };
        output::emit(self.output.format, &value, || {
            output::human::check(&checked.verdict, &checked.notes, props)
        })?;
        Ok(checked.verdict.verdict.exit_code())
    }
}
