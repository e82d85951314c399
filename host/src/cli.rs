//! The command line: raw arguments only. Parsing does no I/O; each
//! subcommand's module resolves its arguments and does the work.

use crate::commands;
use crate::exit::Result;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
    /// Ledger directory where records live.
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
}

impl Cli {
    pub fn execute(self) -> Result<i32> {
        let ledger = self
            .ledger
            .unwrap_or_else(|| PathBuf::from(".agent-ledger"));
        let ledger = crate::ledger::Ledger::new(ledger);
        match self.command {
            Command::Capture(cmd) => cmd.execute(&ledger),
            Command::Lock(cmd) => cmd.execute(&ledger),
            Command::Classify(cmd) => cmd.execute(&ledger),
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
