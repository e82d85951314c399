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

/// `docs/reference/cli.md`: every visible command's `--help`, in the
/// order the parser lists them, as one Markdown page. The integration test
/// `docs_reference` holds the checked-in page to this
/// (`UPDATE_DOCS=1 cargo test --test all docs_reference` rewrites it).
pub fn cli_reference(cli: clap::Command) -> String {
    let mut cli = cli.disable_help_subcommand(true).term_width(100);
    cli.build();
    let mut page = String::from(
        "# Command reference\n\n\
         Generated from the command-line parser (`--help` of every command); do not\n\
         edit by hand. Regenerate with `UPDATE_DOCS=1 cargo test --test all docs_reference`.\n",
    );
    let mut index = String::new();
    let mut sections = String::new();
    reference_section(&cli, 0, &mut index, &mut sections);
    page.push('\n');
    page.push_str(&index);
    page.push_str(&sections);
    page
}

fn reference_section(cmd: &clap::Command, depth: usize, index: &mut String, sections: &mut String) {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string();
    let anchor = name.replace(' ', "-");
    index.push_str(&format!("{}- [`{name}`](#{anchor})\n", "  ".repeat(depth)));
    let help = cmd.clone().render_long_help().to_string();
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    sections.push_str(&format!(
        "\n## {name}\n\n```text\n{}\n```\n",
        help.join("\n").trim_end()
    ));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        reference_section(sub, depth + 1, index, sections);
    }
}

/// `docs/reference/reason-codes.md`: every reason code with what it
/// means, from the comments of [`crate::record::ReasonCode`] (held to the
/// checked-in page as the command reference is).
pub fn reason_code_reference() -> String {
    let mut page = String::from(
        "# Reason codes\n\n\
         Every `code` a transcript receipt's `reasons` and `notes`, a verdict's `reasons`\n\
         or a report can hold: a closed list (the schemas list it as an enumeration).\n\
         The first words say which verdict a code leads to. Generated from\n\
         `host/src/record/reason.rs`; regenerate with\n\
         `UPDATE_DOCS=1 cargo test --test all docs_reference`.\n\n\
         | code | meaning |\n|---|---|\n",
    );
    for code in crate::record::ReasonCode::all() {
        let meaning: Vec<&str> = code.meaning().split_whitespace().collect();
        page.push_str(&format!(
            "| `{code}` | {} |\n",
            meaning.join(" ").replace('|', "\\|")
        ));
    }
    page
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
