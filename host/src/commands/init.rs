//! `agent-ledger init`: a first configuration (and optionally a CI
//! workflow) for a repository that has never used agent-ledger.

use crate::exit::{ExitCode, Result};
use crate::init::Ci;
use crate::output::{self, OutputArgs, inert};
use crate::resolve::{ConfigAt, Needs, ScopeArgs};
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Also write the sharded batch workflow for this CI system
    /// (`.github/workflows/agent-ledger.yml` or
    /// `ci/agent-ledger.gitlab-ci.yml`).
    #[arg(long, value_enum, value_name = "SYSTEM")]
    pub ci: Option<Ci>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl InitArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let resolved = self.scope.resolve(
            ledger,
            Needs {
                repo: true,
                config_at: ConfigAt::Unused,
            },
        )?;
        let repo = resolved.repo.ok_or_else(|| {
            crate::exit::Error::Missing("`init` needs a git repository (--repo DIR)".into())
        })?;
        let done = crate::init::init(&repo, self.ci)?;
        output::emit(self.output.format, &done, || {
            let mut text = format!(
                "wrote {}\n  languages: {}\n  test globs: {}\n  fixture roots: {}\n",
                inert(&done.config.display().to_string()),
                if done.languages.is_empty() {
                    "none recognised".into()
                } else {
                    done.languages.join(", ")
                },
                if done.test_globs.is_empty() {
                    "(built-in defaults)".into()
                } else {
                    inert(&done.test_globs.join(", ")).to_string()
                },
                if done.fixture_roots.is_empty() {
                    "none found: list yours under [fixtures] roots, or say `none = \"why\"` (else check says fixture_mismatch)".into()
                } else {
                    inert(&done.fixture_roots.join(", ")).to_string()
                },
            );
            if let Some(ci) = &done.ci {
                text.push_str(&format!("wrote {}\n", inert(&ci.display().to_string())));
            }
            text.push_str("review it, commit it, then run `agent-ledger check`\n");
            text
        })?;
        Ok(ExitCode::Ok)
    }
}
