//! `agent-ledger completions SHELL` and `agent-ledger man --out DIR`:
//! shell completions and man pages generated from the parser's own clap
//! definition (which `cli` hands in), so they never drift from the flags.
//! A release ships both (`.ci/release-extras`).

use crate::exit::{Error, ExitCode, Result};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for; the script goes to stdout (bash:
    /// `agent-ledger completions bash > ~/.local/share/bash-completion/completions/agent-ledger`).
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

impl CompletionsArgs {
    pub fn execute(self, mut cli: clap::Command) -> Result<ExitCode> {
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut cli, "agent-ledger", &mut script);
        let script = String::from_utf8(script)
            .map_err(|_| Error::Internal("a completion script is not UTF-8".into()))?;
        crate::output::print(&script)?;
        Ok(ExitCode::Ok)
    }
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Directory to write the pages to (made if missing): `agent-ledger.1`
    /// and one page per subcommand (`agent-ledger-check.1`, ...). An
    /// existing page is never overwritten.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

impl ManArgs {
    pub fn execute(self, cli: clap::Command) -> Result<ExitCode> {
        let mut cli = cli.disable_help_subcommand(true);
        cli.build();
        let mut pages = Vec::new();
        render(&cli, &mut pages)?;
        // Every name is checked before anything is written.
        for (name, _) in &pages {
            let path = self.out.join(name);
            if path.symlink_metadata().is_ok() {
                return Err(Error::Exists {
                    path,
                    hint: "man never overwrites a page: write to an empty directory".into(),
                });
            }
        }
        std::fs::create_dir_all(&self.out).map_err(|e| Error::write(&self.out, e))?;
        for (name, bytes) in &pages {
            crate::ledger::write_new(&self.out.join(name), bytes)?;
        }
        crate::output::print(&format!(
            "wrote {} man pages to {}\n",
            pages.len(),
            crate::output::inert(&self.out.display().to_string())
        ))?;
        Ok(ExitCode::Ok)
    }
}

/// The page of `cmd` and of each of its visible subcommands, depth first.
fn render(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut bytes = Vec::new();
    man.render(&mut bytes)
        .map_err(|e| Error::write(Path::new("<man page>"), e))?;
    pages.push((man.get_filename(), bytes));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        render(sub, pages)?;
    }
    Ok(())
}
