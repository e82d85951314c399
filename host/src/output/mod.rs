//! What commands print: the output format flag, the writers, and the human
//! renderers (`human`). A closed pipe (`| head`) is not an error: the
//! judgement is already made, so the command still exits with its verdict
//! code rather than 0, which would be a false green.

pub mod human;

use crate::exit::{Error, Result};
use std::io::{self, Write};

/// How a command prints its result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
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

pub fn print(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::write(std::path::Path::new("<stdout>"), e)),
    }
}

pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Internal(format!("cannot serialise output: {e}")))?;
    text.push('\n');
    print(&text)
}

/// Prints `value` as JSON or `text()` for people, as `format` asks.
pub fn emit<T: serde::Serialize>(
    format: OutputFormat,
    value: &T,
    text: impl FnOnce() -> String,
) -> Result<()> {
    match format {
        OutputFormat::Json => print_json(value),
        OutputFormat::Human => print(&text()),
    }
}
