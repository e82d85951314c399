//! `agent-ledger reconcile`: does the working tree agree with the trace?

use crate::exit::{Error, ExitCode, Result};
use crate::output::OutputArgs;
use crate::paths::relative_to;
use crate::reconcile::{Judging, judge_read, read_trace};
use crate::resolve::{ConfigAt, Needs, ScopeArgs};
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
    /// The run key of a trace begun with `trace begin` [default: TRACE.key,
    /// when it exists].
    #[arg(long, value_name = "FILE")]
    pub trace_key: Option<PathBuf>,
    #[command(flatten)]
    pub key_pin: crate::trace::KeyPin,
    /// Exit 3 when the tree is clean and no write or delete span exists.
    #[arg(long)]
    pub require_mutation: bool,
    /// The revision the agent started from, for a trace without a begin
    /// line [default: HEAD, which an agent that can commit can move]. A
    /// begun run's base is its begin line's.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReconcileArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        // The trace needs no repository: it is read and verified while git
        // finds the repository and its configuration (two child processes
        // to wait for). HEAD's listing (the base unless the trace or
        // `--base` names another) is read beside the configuration.
        let (resolved, read) = rayon::join(
            || {
                self.scope.resolve_beside(
                    ledger,
                    Needs {
                        repo: true,
                        config_at: ConfigAt::Head,
                    },
                    |repo| match self.base {
                        Some(_) => None,
                        None => crate::reconcile::BaseOf::of_head(repo),
                    },
                )
            },
            || {
                // A mistyped path is not an agent that never called the
                // adapter: on a clean tree it would read as agreement.
                if std::fs::symlink_metadata(&self.trace).is_err() {
                    return Err(Error::Missing(format!(
                        "no trace `{}`: name the trace file the agent's adapter wrote (an empty file is a trace with no spans)",
                        self.trace.display()
                    )));
                }
                // Its own errors come after `--base`'s, as they always have.
                Ok(read_trace(
                    &self.trace,
                    self.trace_key.as_deref(),
                    self.key_pin.sha256.as_deref(),
                ))
            },
        );
        let (resolved, preloaded) = resolved?;
        let root = &resolved.root;
        if relative_to(root, resolved.ledger.root()).is_some_and(|p| p.as_os_str().is_empty()) {
            return Err(Error::Usage(format!(
                "the ledger `{}` is the repository itself: every change would be excluded",
                resolved.ledger.root().display()
            )));
        }
        let read = read?;
        let base = match &self.base {
            Some(rev) => Some(resolved.repo()?.resolve_commit(rev)?),
            None => None,
        };
        let read = read?;
        let judged = judge_read(
            resolved.repo()?,
            resolved.revision.as_deref(),
            &self.trace,
            read,
            base.as_deref(),
            Judging {
                exclude: &[resolved.ledger.root().to_path_buf()],
                ignored: resolved.config.config.trace.ignored,
                require_mutation: self.require_mutation,
                tree: crate::reconcile::Judged::Worktree,
                preloaded: preloaded.flatten(),
            },
        )?;
        judged.print(self.output.format)?;
        Ok(judged.code)
    }
}
