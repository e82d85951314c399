//! The command line: raw arguments only. Parsing does no I/O; each
//! subcommand's module resolves its arguments and does the work.

use crate::commands;
use crate::exit::Result;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Debug, Parser)]
#[command(
    name = "agent-ledger",
    version,
    about = "Judge a captured coding-agent patch without false greens",
    long_about = "Judge a captured coding-agent patch without false greens.\n\n\
        Exit codes: 0 review/ok, 2 incomplete, 3 fixture_mismatch, 4 reject; \
        64 usage, 65 bad data, 66 missing input, 70 internal, 73 cannot create, 74 I/O."
)]
pub struct Cli {
    /// Ledger directory where records live [default: `.agent-ledger`; for
    /// `replay` and `check`, the `ledger` the configuration names, in the repository].
    #[arg(long, global = true, value_name = "DIR")]
    pub ledger: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
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
    /// Compare a trace with the working tree (exit 0 agree, 1 ghost/phantom/hash miss, 2 open span, 3 no mutation).
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
}

impl Cli {
    pub fn execute(self) -> Result<i32> {
        // Commands that read a repository default to the ledger its
        // configuration names; the others to `.agent-ledger` here.
        let explicit = self.ledger.as_deref();
        let ledger = crate::ledger::Ledger::new(explicit.unwrap_or(Path::new(".agent-ledger")));
        match self.command {
            Command::Capture(cmd) => cmd.execute(&ledger),
            Command::Lock(cmd) => cmd.execute(&ledger),
            Command::Classify(cmd) => cmd.execute(&ledger),
            Command::Replay(cmd) => cmd.execute(explicit),
            Command::Check(cmd) => cmd.execute(explicit),
            Command::Trace(cmd) => cmd.execute(),
            Command::Reconcile(cmd) => cmd.execute(explicit),
            Command::Flake(cmd) => cmd.execute(explicit),
            Command::Verify(cmd) => cmd.execute(explicit),
            Command::Sign(cmd) => cmd.execute(&ledger),
            Command::Keygen(cmd) => cmd.execute(),
            Command::Pack(cmd) => cmd.execute(&ledger),
        }
    }
}

/// How a command prints its result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Sentences for people.
    #[default]
    Human,
    /// One JSON document on stdout.
    Json,
}

#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
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
