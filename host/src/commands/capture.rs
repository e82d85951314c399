//! `agent-ledger capture`: judge and store a model response.

use crate::capture::{CaptureInput, capture};
use crate::cli::OutputFormat;
use crate::exit::{self, Error, Result};
use crate::ledger::{Ledger, RunId};
use crate::output;
use crate::provider::BodyFormat;
use clap::ValueEnum;
use std::io::Read;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// Run id for this trial (a retry is a new run id).
    #[arg(long, value_name = "ID")]
    pub run: String,
    /// The response body: a file, or `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub body: PathBuf,
    /// Body format (raw, openai-chat, openai-sse, openai-responses, anthropic,
    /// anthropic-sse; default raw) and/or output format (human, json). Give it
    /// twice to set both: `--format openai-sse --format json`.
    #[arg(long = "format", value_name = "FORMAT", action = clap::ArgAction::Append)]
    pub formats: Vec<String>,
    /// The byte length the server declared for the response.
    #[arg(long, value_name = "N")]
    pub declared_bytes: Option<u64>,
    /// The provider's request id.
    #[arg(long, value_name = "R")]
    pub request_id: Option<String>,
    /// The agent's tool-call trace (JSONL, see `agent-ledger trace`), stored
    /// beside the transcript for the `span_bijection` property.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// Splits the values of `--format` into the body format and output format.
fn resolve_formats(values: &[String]) -> Result<(BodyFormat, OutputFormat)> {
    let mut body = None;
    let mut out = None;
    for v in values {
        if let Ok(f) = BodyFormat::from_str(v, false) {
            if body.replace(f).is_some() {
                return Err(Error::Usage("`--format` names two body formats".into()));
            }
        } else if let Ok(f) = OutputFormat::from_str(v, false) {
            if out.replace(f).is_some() {
                return Err(Error::Usage("`--format` names two output formats".into()));
            }
        } else {
            return Err(Error::Usage(format!(
                "invalid value `{v}` for `--format`: expected raw, openai-chat, openai-sse, openai-responses, anthropic, anthropic-sse, human or json"
            )));
        }
    }
    Ok((body.unwrap_or(BodyFormat::Raw), out.unwrap_or_default()))
}

pub fn read_input(path: &std::path::Path) -> Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| Error::read(std::path::Path::new("<stdin>"), e))?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(|e| Error::read(path, e))
    }
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

impl CaptureArgs {
    pub fn execute(self, ledger: &Ledger) -> Result<i32> {
        let run = RunId::parse(&self.run)?;
        let (format, output) = resolve_formats(&self.formats)?;
        let body = read_input(&self.body)?;
        let trace = match &self.trace {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
                crate::trace::parse(path, &bytes)?;
                Some(bytes)
            }
            None => None,
        };
        let receipt = capture(
            ledger,
            CaptureInput {
                run: &run,
                format,
                body: &body,
                declared_bytes: self.declared_bytes,
                request_id: self.request_id,
                trace: trace.as_deref(),
                captured_at: now_rfc3339(),
            },
        )?;
        match output {
            OutputFormat::Json => output::print_json(&receipt)?,
            OutputFormat::Human => {
                let mut text = format!(
                    "{}: run {} ({}, {} bytes, sha256 {})\n",
                    receipt.verdict,
                    receipt.run_id,
                    receipt.format,
                    receipt.body.bytes,
                    receipt.body.sha256
                );
                for r in &receipt.reasons {
                    text.push_str(&format!("  - {}: {}\n", r.code, r.message));
                }
                output::print(&text)?;
            }
        }
        Ok(if receipt.complete {
            exit::OK
        } else {
            exit::INCOMPLETE
        })
    }
}
