//! `agent-ledger trace begin|write|delete|exec|end|export`: the traced
//! adapter an agent (or its harness) calls to touch a tree, so every change
//! is accounted for, and the run around it: `begin` makes a clean workspace
//! and the run's key, `end` reconciles, seals the trace and prints the patch.

use crate::config::IgnoredPolicy;
use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputArgs, OutputFormat, inert};
use crate::reconcile::display_path;
use crate::trace::adapter::{
    CallRoot, Site, checked_path, close, ignored_policy, open, snapshot, workspace_of,
};
use crate::trace::{self, Line, Op};
use std::path::{Path, PathBuf};

pub mod exec;
pub mod session;

use exec::*;
use session::*;

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Clone, clap::Args)]
pub struct Where {
    /// The repository the paths are relative to [default: the workspace of
    /// a trace begun with `trace begin`, else `.`].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// The trace file to append to (JSONL).
    #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
    pub trace: PathBuf,
    /// The agent making the call; in a begun run it must be the run's own.
    #[arg(long, value_name = "ID", env = "AGENT_LEDGER_AGENT")]
    pub agent: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl Where {
    /// The call's site, checked (`trace::adapter::Site::resolve`).
    fn site(&self) -> Result<Site> {
        Site::resolve(self.repo.clone(), self.trace.clone(), self.agent.clone())
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum TraceCommand {
    /// Begin an authenticated run: a fresh worktree of the repository at a
    /// pinned revision (the workspace), a per-run key (`TRACE.key`, mode
    /// 0600, never printed) and the trace's begin line.
    Begin {
        /// The repository to make the workspace from.
        #[arg(long, value_name = "DIR", default_value = ".")]
        repo: PathBuf,
        /// The agent the run belongs to: every span carries it, and no other
        /// agent may write in the run.
        #[arg(long, value_name = "ID")]
        agent: String,
        /// Where to make the workspace; it must not exist [default: beside
        /// the ledger, `LEDGER-workspaces/RUN`].
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// The revision the workspace is made at.
        #[arg(long, value_name = "REV", default_value = "HEAD")]
        rev: String,
        /// The run id [default: made from the time and process].
        #[arg(long, value_name = "ID")]
        run: Option<String>,
        /// The new trace file, outside the repository and the workspace; its
        /// key is written beside it.
        #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
        trace: PathBuf,
        /// Hand the key over on this file descriptor (opened for writing by
        /// the caller) instead of writing `TRACE.key`: the key never touches
        /// the disk. Later calls read it from the descriptor
        /// `AGENT_LEDGER_TRACE_KEY_FD` names.
        #[arg(long, value_name = "FD")]
        key_fd: Option<i32>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Write a file (bytes from `--from FILE`, or stdin) and record the span.
    Write {
        /// Repository-relative path to write.
        path: PathBuf,
        /// Where the bytes come from: `-` for stdin, or a file inside the
        /// tree (the adapter reads as the operator, outside any sandbox).
        #[arg(long, value_name = "FILE", default_value = "-")]
        from: PathBuf,
        #[command(flatten)]
        at: Where,
    },
    /// Delete a file and record the span.
    Delete {
        /// Repository-relative path to delete.
        path: PathBuf,
        #[command(flatten)]
        at: Where,
    },
    /// Run a command, in the test command's sandbox (the workspace
    /// writable, the trace and its key hidden, the rest read-only, no
    /// network), that declared its output paths first; fails (exit 1),
    /// naming them, when it changed a path it did not declare, and exits 6
    /// when the command itself failed (never with the command's own status,
    /// which could read as a verdict).
    Exec {
        /// A path the command may write or delete (repeatable).
        #[arg(long = "writes", value_name = "PATH")]
        writes: Vec<PathBuf>,
        /// Keep the network inside the sandbox.
        #[arg(long)]
        allow_network: bool,
        /// Run without the sandbox when the kernel refuses namespaces (the
        /// command then sees the trace and its key).
        #[arg(long)]
        allow_unsandboxed: bool,
        #[command(flatten)]
        at: Where,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<std::ffi::OsString>,
    },
    /// End a begun run: reconcile its workspace (exit codes as `reconcile`);
    /// when it reconciles, seal the trace with its end line and print the
    /// patch (the workspace against its base), ready for `capture --body -`.
    End {
        /// The trace of the run.
        #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
        trace: PathBuf,
        /// Exit 3 when the workspace is clean and no write or delete span
        /// exists.
        #[arg(long)]
        require_mutation: bool,
        #[command(flatten)]
        key_pin: crate::trace::KeyPin,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// List this user's registered runs and where each stands: `active`
    /// (begun, not ended: while one is, no call with a trace that has no
    /// begin line is taken), `ended`, `aborted` or `stale` (its workspace
    /// was removed with `git worktree remove` or `prune`).
    List {
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Abort a begun run that will never be ended: it takes no more calls,
    /// `trace end` refuses it, and it no longer holds back calls of traces
    /// without a begin line. Its trace, key and workspace are left where
    /// they are (the output says how to remove them).
    Abort {
        /// The run id (`trace list` shows them).
        #[arg(value_name = "RUN")]
        run: String,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Write the trace's spans as OpenTelemetry (OTLP/JSON): one trace per
    /// run, one span per tool call.
    Export {
        /// The trace to export.
        #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
        trace: PathBuf,
        /// The OTLP/JSON file to write (must not exist), or `-` for stdout.
        #[arg(long, value_name = "FILE")]
        otlp: PathBuf,
    },
}

/// Reports a closed span: silent for people, the close line for machines.
fn report(format: OutputFormat, lines: &[Line]) -> Result<()> {
    match format {
        OutputFormat::Json => output::print_json(lines),
        OutputFormat::Human => Ok(()),
    }
}

impl TraceArgs {
    pub fn execute(self) -> Result<ExitCode> {
        match self.command {
            TraceCommand::Begin {
                repo,
                agent,
                workspace,
                rev,
                run,
                trace,
                key_fd,
                output,
            } => begin(
                &repo,
                &agent,
                Placement {
                    workspace,
                    trace: &trace,
                    key_fd,
                },
                &rev,
                run,
                output.format,
            ),
            TraceCommand::End {
                trace,
                require_mutation,
                key_pin,
                output,
            } => end(
                &trace,
                require_mutation,
                key_pin.sha256.as_deref(),
                output.format,
            ),
            TraceCommand::Export { trace, otlp } => crate::otlp::export(&trace, &otlp),
            TraceCommand::List { output } => crate::runs::list(output.format),
            TraceCommand::Abort { run, output } => crate::runs::abort_command(&run, output.format),
            TraceCommand::Write { path, from, at } => {
                let line = crate::trace::adapter::write(&at.site()?, &path, &from)?;
                report(at.output.format, &[line])?;
                Ok(ExitCode::Ok)
            }
            TraceCommand::Delete { path, at } => {
                let line = crate::trace::adapter::delete(&at.site()?, &path)?;
                report(at.output.format, &[line])?;
                Ok(ExitCode::Ok)
            }
            TraceCommand::Exec {
                writes,
                allow_network,
                allow_unsandboxed,
                at,
                command,
            } => exec(
                &at.site()?,
                at.output.format,
                &writes,
                &command,
                Sandboxing {
                    allow_network,
                    allow_unsandboxed,
                },
            ),
        }
    }
}
