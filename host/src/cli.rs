//! The command line: raw arguments only. Parsing does no I/O; each
//! subcommand's module resolves its arguments (through `resolve`) and does
//! the work.

use crate::commands;
use crate::exit::{Error, ExitCode, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "agent-ledger",
    version,
    long_version = env!("AGENT_LEDGER_VERSION_LONG"),
    about = "Judge a captured coding-agent patch without false greens",
    long_about = "Judge a captured coding-agent patch without false greens.\n\n\
        Exit codes: 0 review/ok, 2 incomplete, 3 fixture_mismatch, 4 reject; \
        1/2/3/5 reconcile, 5 verify, 6 a traced command failed; \
        64 usage, 65 bad data, 66 missing input, 70 internal, 73 cannot create, 74 I/O."
)]
pub struct Cli {
    /// Ledger directory where records live [default: the `ledger` the
    /// configuration names (`.agent-ledger`), at the repository root]. Not
    /// accepted by commands that keep no records (`trace`, `keygen`, `flake
    /// list`, `flake prune`).
    #[arg(long, global = true, value_name = "DIR")]
    pub ledger: Option<PathBuf>,

    /// What a replay does when the kernel refuses it a network namespace of
    /// its own (most containers without user namespaces): `required` stops
    /// with exit 70, `preferred` goes on (plugins and the test command keep
    /// their own sandboxes) with a warning and the lapse in the record
    /// [default: `required` when `$CI` is set, else `preferred`].
    #[arg(long, global = true, value_name = "WHEN")]
    pub network_isolation: Option<NetworkIsolation>,

    #[command(subcommand)]
    pub command: Command,
}

/// The parser's definition: what `--help`, completions, man pages and
/// `docs/reference/cli.md` are made from.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// `--network-isolation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NetworkIsolation {
    Required,
    Preferred,
}

impl NetworkIsolation {
    /// `required` where `$CI` is set (to anything but `false` or `0`).
    fn default_here() -> NetworkIsolation {
        match std::env::var("CI") {
            Ok(v) if !v.is_empty() && v != "false" && v != "0" => NetworkIsolation::Required,
            _ => NetworkIsolation::Preferred,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Store a model response and its transcript receipt (exit 0 captured, 2 incomplete).
    Capture(commands::capture::CaptureArgs),
    /// Hash the fixture roots into a lock, or compare a lock with a tree (exit 0 match, 3 drift or empty).
    Lock(commands::lock::LockArgs),
    /// Classify a run from its records (exit 0 review, 2 incomplete, 3 fixture_mismatch, 4 reject).
    Classify(commands::classify::ClassifyArgs),
    /// Apply the captured patch in a temporary tree and run every property on it.
    Replay(commands::replay::ReplayArgs),
    /// Lock, replay and classify in one command: the CI gate (exit code = verdict).
    Check(commands::check::CheckArgs),
    /// The traced adapter: write, delete or run a command with every change on the trace.
    Trace(commands::trace::TraceArgs),
    /// Compare a trace with the working tree (exit 0 agree, 1 ghost/phantom/hash miss/alias, 2 open span, 3 no mutation, 5 forged).
    Reconcile(commands::reconcile::ReconcileArgs),
    /// Flake freezes: observe (from evidence only), list, prune.
    Flake(commands::flake::FlakeArgs),
    /// Verify archived runs offline (exit 0 all verify, 5 any fails).
    Verify(commands::verify::VerifyArgs),
    /// Sign a run's verdict (in-toto Statement v1 in a DSSE envelope, Ed25519).
    Sign(commands::sign::SignArgs),
    /// Make an Ed25519 key pair for `sign` and `verify --trusted-key`.
    Keygen(commands::sign::KeygenArgs),
    /// Write one archive of selected runs and the objects they name.
    Pack(commands::pack::PackArgs),
    /// Many trials from a JSONL manifest, in parallel (exit code = the worst verdict).
    Batch(commands::batch::BatchArgs),
    /// Write a first agent-ledger.toml for this repository (never over an existing one).
    Init(commands::init::InitArgs),
    /// Combine the ledgers of partitioned batches (exit 65 on a conflict, nothing written).
    Merge(commands::merge::MergeArgs),
    /// Try a property plugin with no ledger: run it on one patch, or inspect it.
    #[command(subcommand)]
    Plugin(commands::plugin::PluginCommand),
    /// SWE-bench in: a dataset and predictions as a batch manifest.
    #[command(subcommand)]
    Swebench(commands::swebench::SwebenchCommand),
    /// Write CI reports of the runs in a ledger: JUnit, SARIF, Markdown, HTML, GitHub annotations (exit 0 written, 65 a broken chain).
    Report(commands::report::ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::docs::CompletionsArgs),
    /// Write man pages: agent-ledger.1 and one per subcommand.
    Man(commands::docs::ManArgs),
}

impl Cli {
    pub fn execute(self) -> Result<ExitCode> {
        let ledger = self.ledger.as_deref();
        let refuse = |command: &str| -> Result<()> {
            match ledger {
                Some(_) => Err(Error::Usage(format!(
                    "`--ledger` has no effect on `{command}`, which keeps no records: drop it"
                ))),
                None => Ok(()),
            }
        };
        // A replay has no route to any endpoint: the process leaves every
        // network before it reads an input (see `netns`).
        let replays = match &self.command {
            Command::Replay(_) | Command::Check(_) => true,
            Command::Verify(cmd) => cmd.replay,
            Command::Plugin(cmd) => cmd.replays(),
            _ => false,
        };
        if replays {
            leave_network(self.network_isolation)?;
        }
        // `batch` leaves the network itself, later, and starts them after.
        if !matches!(self.command, Command::Batch(_)) {
            start_threads()?;
        }
        match self.command {
            Command::Capture(cmd) => cmd.execute(ledger),
            Command::Lock(cmd) => cmd.execute(ledger),
            Command::Classify(cmd) => cmd.execute(ledger),
            Command::Replay(cmd) => cmd.execute(ledger),
            Command::Check(cmd) => cmd.execute(ledger),
            Command::Trace(cmd) => {
                refuse("trace")?;
                cmd.execute()
            }
            Command::Reconcile(cmd) => cmd.execute(ledger),
            Command::Flake(cmd) => {
                if !cmd.keeps_records() {
                    refuse("flake list/prune")?;
                }
                cmd.execute(ledger)
            }
            Command::Verify(cmd) => cmd.execute(ledger),
            Command::Sign(cmd) => cmd.execute(ledger),
            Command::Keygen(cmd) => {
                refuse("keygen")?;
                cmd.execute()
            }
            Command::Pack(cmd) => cmd.execute(ledger),
            Command::Batch(cmd) => cmd.execute(ledger, self.network_isolation),
            Command::Init(cmd) => cmd.execute(ledger),
            Command::Merge(cmd) => {
                refuse("merge (it names its ledgers with --into and SRC)")?;
                cmd.execute()
            }
            Command::Plugin(cmd) => {
                refuse("plugin")?;
                cmd.execute()
            }
            Command::Report(cmd) => cmd.execute(ledger),
            Command::Completions(cmd) => {
                refuse("completions")?;
                cmd.execute(command())
            }
            Command::Man(cmd) => {
                refuse("man")?;
                cmd.execute(command())
            }
            Command::Swebench(cmd) => {
                refuse("swebench import (it writes a manifest, not records)")?;
                cmd.execute()
            }
        }
    }
}

/// Builds rayon's global pool with the main thread's 8 MiB of stack per
/// thread (the lock walk recurses a frame per directory level, up to
/// `lock::MAX_DEPTH`; a trial's work in a debug build runs deep), never
/// rayon's 2 MiB default. Called once the process has left the network
/// where it replays: rayon starts the threads at once, and a process with
/// more than one thread cannot enter the user namespace that takes (see
/// `netns`). A pool already built stays as it is; one whose threads the
/// kernel refuses is an error (rayon would otherwise panic at first use).
pub fn start_threads() -> Result<()> {
    match rayon::ThreadPoolBuilder::new()
        .stack_size(THREAD_STACK)
        .build_global()
    {
        Err(e) if std::error::Error::source(&e).is_some() => Err(Error::Internal(format!(
            "cannot start agent-ledger's worker threads: {e}"
        ))),
        _ => Ok(()),
    }
}

/// The stack of every thread agent-ledger starts for its own work.
pub const THREAD_STACK: usize = 8 << 20;

/// A replay leaves every network before it reads an input (see `netns`):
/// where the kernel refuses, `required` (the default under `$CI`) stops
/// with exit 70, `preferred` goes on with a warning, and the record says
/// so either way. Must run while the process has one thread.
pub fn leave_network(when: Option<NetworkIsolation>) -> Result<()> {
    let status = crate::netns::isolate();
    if !status.is_isolated() {
        let when = when.unwrap_or_else(NetworkIsolation::default_here);
        if when == NetworkIsolation::Required {
            return Err(Error::Internal(format!(
                "this replay cannot leave the network ({status}); `--network-isolation preferred` goes on without (plugins and the test command keep their own sandboxes), or run where user namespaces are allowed"
            )));
        }
        eprintln!(
            "warning: this replay is {status}; plugins and the test command keep their own sandboxes, and the record says so"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}
