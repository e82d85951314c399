//! `agent-ledger reconcile`: does the working tree agree with the trace?

use crate::cli::{OutputArgs, OutputFormat};
use crate::commands::trace::trace_relative;
use crate::exit::{self, Error, Result};
use crate::output;
use crate::reconcile::{Report, reconcile};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ReconcileArgs {
    /// The repository whose working tree is judged.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
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
    pub fn execute(self, ledger: Option<&std::path::Path>) -> Result<i32> {
        // No trace file means the agent never called the adapter: no spans.
        let bytes = match std::fs::read(&self.trace) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::read(&self.trace, e)),
        };
        let spans = crate::trace::parse(&self.trace, &bytes)?;
        let mut exclude: Vec<Vec<u8>> = trace_relative(&self.repo, &self.trace)
            .into_iter()
            .collect();
        let ledger = ledger
            .map(PathBuf::from)
            .unwrap_or_else(|| self.repo.join(".agent-ledger"));
        exclude.extend(
            trace_relative(&self.repo, &ledger.join("x"))
                .and_then(|p| p.strip_suffix(b"/x").map(<[u8]>::to_vec)),
        );
        let report = reconcile(&self.repo, &spans, &exclude)?;
        let (code, result) = if !report.open.is_empty() {
            (exit::INCOMPLETE, "open_spans")
        } else if !report.ghosts.is_empty()
            || !report.phantoms.is_empty()
            || !report.hash_misses.is_empty()
        {
            (exit::RECONCILE_MISMATCH, "mismatch")
        } else if self.require_mutation && report.changed == 0 && report.mutating_spans == 0 {
            (exit::FIXTURE_MISMATCH, "no_mutation")
        } else {
            (exit::OK, "reconciled")
        };
        match self.output.format {
            OutputFormat::Json => output::print_json(&serde_json::json!({
                "result": result,
                "exit_code": code,
                "report": report,
            }))?,
            OutputFormat::Human => output::print(&human(&report, result))?,
        }
        Ok(code)
    }
}

fn human(r: &Report, result: &str) -> String {
    let mut text = match result {
        "open_spans" => "open spans: the agent run did not finish\n".to_string(),
        "mismatch" => "mismatch: the tree and the trace disagree\n".to_string(),
        "no_mutation" => {
            "no mutation: the tree is clean and the trace has no write or delete\n".to_string()
        }
        _ => format!(
            "reconciled: {} changed path(s), {} closed write/delete span(s)\n",
            r.changed, r.mutating_spans
        ),
    };
    if !r.open.is_empty() {
        text.push_str("open spans:\n");
        for o in &r.open {
            text.push_str(&format!(
                "  {} {} {} (line {})\n",
                o.span, o.op, o.path, o.line
            ));
        }
    }
    for (title, list) in [
        ("ghosts (changed, no span):", &r.ghosts),
        ("phantoms (span, unchanged):", &r.phantoms),
    ] {
        if !list.is_empty() {
            text.push_str(title);
            text.push('\n');
            for p in list {
                text.push_str(&format!("  {p}\n"));
            }
        }
    }
    if !r.hash_misses.is_empty() {
        text.push_str("hash misses (disk differs from the span):\n");
        for m in &r.hash_misses {
            text.push_str(&format!("  {}\n", m.path));
        }
    }
    text
}
