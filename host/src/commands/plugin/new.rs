//! `agent-ledger plugin new`: a standalone property project in Rust, Python
//! or JavaScript (`scaffold`), ready to build with one command.

use crate::exit::{ExitCode, Result};
use crate::output::{self, OutputArgs, OutputFormat, inert};
use crate::scaffold::{self, Lang};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The property's name, snake_case (also the crate or package name and
    /// the component's file name).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The language of the project.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// Where to write it (must not exist, or be empty) [default: ./NAME].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl NewArgs {
    pub fn execute(self) -> Result<ExitCode> {
        let files = scaffold::files(self.lang, &self.name)?;
        let dir = self.dir.unwrap_or_else(|| PathBuf::from(&self.name));
        scaffold::write(&dir, &files)?;
        let build = self.lang.build_command();
        let component = dir.join(self.lang.component(&self.name));
        match self.output.format {
            OutputFormat::Json => output::print_json(&PluginNewOutput {
                name: &self.name,
                lang: self.lang,
                dir: &dir,
                files: files.iter().map(|f| f.path).collect(),
                build,
                component: &component,
            })?,
            OutputFormat::Human => {
                let dir = dir.display().to_string();
                let dir = inert(&dir);
                output::print(&format!(
                    "wrote a {} property project `{}` in {dir} ({} files)\n  \
                     build:     cd {dir} && {build}\n  \
                     component: {}\n  \
                     then:      {dir}/README.md says how to configure, test and commit it\n",
                    self.lang.as_str(),
                    self.name,
                    files.len(),
                    inert(&component.display().to_string()),
                ))?
            }
        }
        Ok(ExitCode::Ok)
    }
}

/// `plugin new --format json`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct PluginNewOutput<'a> {
    /// The property's name.
    pub name: &'a str,
    pub lang: crate::scaffold::Lang,
    /// The project directory written.
    pub dir: &'a std::path::Path,
    /// The files written, relative to `dir`.
    pub files: Vec<&'static str>,
    /// The one command that builds the component, run in `dir`.
    pub build: &'static str,
    /// The component the build writes.
    pub component: &'a std::path::Path,
}
