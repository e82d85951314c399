//! `agent-ledger reconcile`: does the working tree agree with the trace?

use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputArgs};
use crate::paths::relative_to;
use crate::reconcile::reconcile;
use crate::resolve::{ConfigAt, Needs, ScopeArgs};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ReconcileArgs {
    /// `--repo`, and `--config FILE` (outside the repository) instead of
    /// `agent-ledger.toml` at HEAD: the working tree's copy is the agent's.
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// The tool-call trace (JSONL).
    #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
    pub trace: PathBuf,
    /// Exit 3 when the tree is clean and no write or delete span exists.
    #[arg(long)]
    pub require_mutation: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReconcileArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let resolved = self.scope.resolve(
            ledger,
            Needs {
                repo: true,
                config_at: ConfigAt::Head,
            },
        )?;
        let root = &resolved.root;
        // No trace file means the agent never called the adapter: no spans.
        let bytes =
            crate::input::read_optional(&self.trace, crate::input::TRACE_CAP)?.unwrap_or_default();
        let spans = crate::trace::parse(&self.trace, &bytes)?;
        if relative_to(root, resolved.ledger.root()).is_some_and(|p| p.as_os_str().is_empty()) {
            return Err(Error::Usage(format!(
                "the ledger `{}` is the repository itself: every change would be excluded",
                resolved.ledger.root().display()
            )));
        }
        // The trace file and the ledger are never counted as changes.
        let exclude: Vec<Vec<u8>> = [self.trace.as_path(), resolved.ledger.root()]
            .into_iter()
            .filter_map(|p| relative_to(root, p))
            .map(|p| p.as_os_str().as_bytes().to_vec())
            .collect();
        let report = reconcile(root, &spans, &exclude)?;
        let (code, result) = if !report.open.is_empty() {
            (ExitCode::OpenSpans, "open_spans")
        } else if !report.ghosts.is_empty()
            || !report.phantoms.is_empty()
            || !report.hash_misses.is_empty()
        {
            (ExitCode::Mismatch, "mismatch")
        } else if self.require_mutation && report.changed == 0 && report.mutating_spans == 0 {
            (ExitCode::NoMutation, "no_mutation")
        } else {
            (ExitCode::Ok, "reconciled")
        };
        let value = serde_json::json!({
            "result": result,
            "exit_code": code.code(),
            "report": report,
        });
        output::emit(self.output.format, &value, || {
            output::human::reconcile(&report, result)
        })?;
        Ok(code)
    }
}
