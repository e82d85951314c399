//! `agent-ledger verify`: re-check archived runs offline (exit 0 all verify,
//! 5 any fails).

use crate::exit::{Error, ExitCode, Result};
use crate::ledger::Ledger;
use crate::output::{self, OutputArgs};
use crate::resolve::{ConfigAt, Needs, ScopeArgs};
use crate::verify::{Verifier, runs_in};
use crate::wasm::Sandbox;
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
    /// configuration, requiring a byte-identical property record; needs the
    /// repository holding the recorded base revisions (`--repo`, or the
    /// current directory's).
    #[arg(long)]
    pub replay: bool,
    /// With `--replay`: also run each trial's test command again (its
    /// patched run, and its base run when the record has one) in the
    /// sandbox, from the recorded command, evaluator patch and log parser,
    /// and require the same outcomes. Without it the stored reports are
    /// re-judged and the command is not run. `--test-ro`, `--test-env` and
    /// the limits give the environment it needs (as for `check`).
    #[arg(long = "rerun-tests", id = "test_cmd", requires = "replay")]
    pub rerun_tests: bool,
    #[command(flatten)]
    pub test_env: crate::resolve::TestEnvArgs,
    #[command(flatten)]
    pub scope: ScopeArgs,
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
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        if !self.rerun_tests {
            self.test_env.limits.refuse_unused("--rerun-tests")?;
        }
        if self.archive.is_some() && (ledger.is_some() || self.scope.config.config.is_some()) {
            return Err(Error::Usage(
                "`verify ARCHIVE` reads the runs from the archive: drop `--ledger` and `--config`"
                    .into(),
            ));
        }
        let resolved = self.scope.resolve(
            ledger,
            Needs {
                repo: self.replay,
                config_at: if self.archive.is_some() {
                    ConfigAt::Unused
                } else {
                    ConfigAt::LedgerOnly
                },
            },
        )?;
        let trusted = self
            .trusted_keys
            .iter()
            .map(|k| crate::sign::load_verifying(k))
            .collect::<Result<Vec<_>>>()?;
        let unpacked;
        let mut archive_problems = Vec::new();
        let (ledger, listed) = match &self.archive {
            Some(archive) => {
                unpacked = crate::scratch::make("agent-ledger-verify-")?;
                // Beside the scratch dir's lock, never over it.
                let dir = unpacked.path().join("ledger");
                let (manifest, problems) = crate::archive::unpack(archive, &dir)?;
                archive_problems = problems;
                (Ledger::new(dir), Some(manifest.runs))
            }
            None => {
                let root = resolved.ledger.root();
                if !root.is_dir() {
                    return Err(Error::Missing(format!("no ledger at `{}`", root.display())));
                }
                (resolved.ledger.clone(), None)
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
        let repo = if self.replay { resolved.repo } else { None };
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
        if self.rerun_tests {
            verifier.rerun = Some(self.test_env.command(
                String::new(),
                &resolved.config.config.tests,
                None,
                crate::resolve::default_cache_dir(),
            )?);
        }
        let reports: Vec<_> = runs.iter().map(|run| verifier.verify(run)).collect();
        let verified = archive_problems.is_empty() && reports.iter().all(|r| r.ok);
        let value = VerifyOutput {
            verified,
            archive_problems: &archive_problems,
            runs: &reports,
        };
        output::emit(self.output.format, &value, || {
            output::human::verify(&archive_problems, &reports)
        })?;
        Ok(if verified {
            ExitCode::Ok
        } else {
            ExitCode::VerifyFailed
        })
    }
}

/// `verify --format json`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct VerifyOutput<'a> {
    /// Every run verified and the archive (if any) is whole.
    pub verified: bool,
    /// What is wrong with the archive itself (`verify ARCHIVE`).
    pub archive_problems: &'a [String],
    /// Each run's findings.
    pub runs: &'a [crate::verify::RunVerification],
}
