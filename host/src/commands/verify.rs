//! `agent-ledger verify`: re-check archived runs offline (exit 0 all verify,
//! 5 any fails).

use crate::cli::{OutputArgs, OutputFormat};
use crate::exit::{self, Error, Result};
use crate::git::Repo;
use crate::ledger::Ledger;
use crate::output;
use crate::sandbox::Sandbox;
use crate::verify::{Verifier, runs_in};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// An archive written by `agent-ledger pack` to verify instead of the ledger.
    #[arg(value_name = "ARCHIVE")]
    pub archive: Option<PathBuf>,
    /// Runs to verify (repeatable) [default: every run].
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<String>,
    /// Re-run each replay from the archived patch, lock, plugins and
    /// configuration, requiring a byte-identical property record.
    #[arg(long, requires = "repo")]
    pub replay: bool,
    /// The repository holding the recorded base revisions (for `--replay`).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// A public key whose signatures are trusted (repeatable). Every signed
    /// verdict must then verify under one of them.
    #[arg(long = "trusted-key", value_name = "FILE")]
    pub trusted_keys: Vec<PathBuf>,
    /// Fail any run without a signed verdict valid under a trusted key.
    #[arg(long, requires = "trusted_keys")]
    pub require_signatures: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl VerifyArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<i32> {
        let trusted = self
            .trusted_keys
            .iter()
            .map(|k| crate::sign::load_verifying(k))
            .collect::<Result<Vec<_>>>()?;
        let unpacked;
        let mut archive_problems = Vec::new();
        let (ledger, listed) = match &self.archive {
            Some(archive) => {
                unpacked = tempfile::Builder::new()
                    .prefix("agent-ledger-verify-")
                    .tempdir()
                    .map_err(|e| Error::write(&std::env::temp_dir(), e))?;
                let (manifest, problems) = crate::archive::unpack(archive, unpacked.path())?;
                archive_problems = problems;
                (Ledger::new(unpacked.path()), Some(manifest.runs))
            }
            None => {
                let root = ledger.unwrap_or(Path::new(".agent-ledger"));
                if !root.is_dir() {
                    return Err(Error::Missing(format!("no ledger at `{}`", root.display())));
                }
                (Ledger::new(root), None)
            }
        };
        let runs = if !self.runs.is_empty() {
            self.runs.clone()
        } else {
            listed.unwrap_or_else(|| runs_in(&ledger))
        };
        if runs.is_empty() {
            return Err(Error::Missing(format!(
                "no runs to verify in `{}`",
                ledger.root().display()
            )));
        }
        let repo = self.repo.as_deref().map(Repo::open).transpose()?;
        let sandbox = if self.replay {
            Some(Sandbox::new(None).map_err(|e| {
                Error::Internal(format!("cannot start the WebAssembly engine: {e}"))
            })?)
        } else {
            None
        };
        let replay = match (&repo, &sandbox) {
            (Some(r), Some(s)) => Some((r, s)),
            _ => None,
        };
        let mut verifier = Verifier::new(ledger, trusted, replay);
        verifier.require_signatures = self.require_signatures;
        let mut failed = 0;
        let mut reports = Vec::new();
        let mut text = String::new();
        if !archive_problems.is_empty() {
            text.push_str("FAILED  archive manifest\n");
            for p in &archive_problems {
                text.push_str(&format!("  - {p}\n"));
            }
        }
        for run in &runs {
            let report = verifier.verify(run);
            if report.ok {
                text.push_str(&format!(
                    "ok      {run} (signature: {})\n",
                    report.signature
                ));
            } else {
                failed += 1;
                text.push_str(&format!("FAILED  {run}\n"));
                for f in &report.failures {
                    text.push_str(&format!("  - {f}\n"));
                }
            }
            if self.output.format == OutputFormat::Json {
                reports.push(report);
            }
        }
        text.push_str(&format!(
            "{} of {} run(s) verified\n",
            runs.len() - failed,
            runs.len()
        ));
        match self.output.format {
            OutputFormat::Json => output::print_json(&serde_json::json!({
                "verified": failed == 0 && archive_problems.is_empty(),
                "archive_problems": archive_problems,
                "runs": reports,
            }))?,
            OutputFormat::Human => output::print(&text)?,
        }
        Ok(if failed == 0 && archive_problems.is_empty() {
            exit::OK
        } else {
            exit::VERIFY_FAILED
        })
    }
}
