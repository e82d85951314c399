//! `agent-ledger capture`: judge and store a model response.

use crate::capture::{CaptureInput, capture};
use crate::exit::{Error, ExitCode, Result};
use crate::input;
use crate::ledger::RunId;
use crate::output::{self, OutputFormat, inert};
use crate::provider::BodyFormat;
use crate::resolve::ScopeArgs;
use clap::ValueEnum;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// Run id for this trial (a retry is a new run id).
    #[arg(long, value_name = "ID")]
    pub run: String,
    /// The response body: a file, or `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub body: PathBuf,
    /// How the body is encoded.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub body_format: Option<BodyFormat>,
    /// Output format (human, json). For one release it also accepts a body
    /// format (raw, openai-chat, ...), with a deprecation warning: use
    /// `--body-format` for that.
    #[arg(long = "format", value_name = "FORMAT", action = clap::ArgAction::Append)]
    pub formats: Vec<String>,
    /// Take the diff out of the model's answer: `patch-tags` (between a
    /// `<patch>` and a `</patch>` line, SWE-bench's convention) or `fence`
    /// (one fenced ```` ```diff ```` block). A missing closing delimiter is
    /// `unterminated_envelope`. Without it, a wrapped answer is incomplete.
    #[arg(long, value_enum, value_name = "ENVELOPE")]
    pub extract: Option<crate::envelope::Extract>,
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
    #[command(flatten)]
    pub scope: ScopeArgs,
}

/// Splits the values of `--format` into the output format and, deprecated,
/// a body format.
fn resolve_formats(
    body_flag: Option<BodyFormat>,
    values: &[String],
) -> Result<(BodyFormat, OutputFormat)> {
    let mut body = body_flag;
    let mut out = None;
    for v in values {
        if let Ok(f) = OutputFormat::from_str(v, false) {
            if out.replace(f).is_some() {
                return Err(Error::Usage("`--format` names two output formats".into()));
            }
        } else if let Ok(f) = BodyFormat::from_str(v, false) {
            if body.replace(f).is_some() {
                return Err(Error::Usage(
                    "the body format is given twice (`--body-format` and `--format`, or `--format` twice)".into(),
                ));
            }
            let v = inert(v);
            eprintln!(
                "warning: `--format {v}` names the body format; use `--body-format {v}` (from the next release `--format` names only the output format)"
            );
        } else {
            return Err(Error::Usage(format!(
                "invalid value `{v}` for `--format`: expected human or json (body formats go to `--body-format`)"
            )));
        }
    }
    Ok((body.unwrap_or(BodyFormat::Raw), out.unwrap_or_default()))
}

impl CaptureArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let run = RunId::parse(&self.run)?;
        let (format, output) = resolve_formats(self.body_format, &self.formats)?;
        let ledger = self.scope.ledger(ledger)?;
        let body = input::read_file_or_stdin(&self.body, input::BODY_CAP)?;
        let trace = match &self.trace {
            Some(path) => {
                let bytes = input::read_file(path, input::TRACE_CAP)?;
                crate::trace::parse(path, &bytes)?;
                Some(bytes)
            }
            None => None,
        };
        let receipt = capture(
            &ledger,
            CaptureInput {
                run: &run,
                format,
                extract: self.extract,
                body: &body,
                declared_bytes: self.declared_bytes,
                request_id: self.request_id,
                trace: trace.as_deref(),
                captured_at: crate::clock::format_time(crate::clock::now()),
            },
        )?;
        output::emit(output, &receipt, || {
            let mut text = format!(
                "{}: run {} ({}, {} bytes, sha256 {})\n",
                receipt.verdict,
                inert(&receipt.run_id),
                inert(&receipt.format),
                receipt.body.bytes,
                receipt.body.sha256
            );
            if let Some(e) = &receipt.envelope {
                text.push_str(&format!("  envelope: {}\n", inert(e)));
            }
            if receipt.strip != 1 {
                text.push_str(&format!("  strip: -p{}\n", receipt.strip));
            }
            for r in &receipt.reasons {
                text.push_str(&format!("  - {}: {}\n", inert(&r.code), inert(&r.message)));
            }
            for n in &receipt.notes {
                text.push_str(&format!(
                    "  note {}: {}\n",
                    inert(&n.code),
                    inert(&n.message)
                ));
            }
            text
        })?;
        Ok(if receipt.complete {
            ExitCode::Ok
        } else {
            ExitCode::Incomplete
        })
    }
}
