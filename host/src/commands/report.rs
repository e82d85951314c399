//! `agent-ledger report`: CI reports (JUnit, SARIF, Markdown, HTML, GitHub
//! workflow commands) from the runs in a ledger. Exit 0 when every report
//! is written; 65 after writing them when a run's chain is broken; with
//! `--fail-on`, the exit code of the most severe listed status a run has.

use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputArgs, OutputFormat};
use crate::report::{self, Summary, TrialStatus, Written};
use crate::resolve::ScopeArgs;
use clap::ValueEnum;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("outputs")
        .required(true)
        .multiple(true)
        .args(["junit", "sarif", "markdown", "html", "github_annotations", "swebench", "fail_on"])
))]
pub struct ReportArgs {
    /// Runs to report (repeatable) [default: every run in the ledger].
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<String>,
    /// Write JUnit XML: a testsuite per run, a testcase per property and one
    /// for the verdict.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write SARIF 2.1.0: a result per finding, the property as its rule.
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Write a Markdown summary (for `$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write a single-file HTML report with charts and a drill-down per trial.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print GitHub workflow commands (`::error file=…,line=…::…`) for
    /// findings and failing trials on stdout.
    #[arg(long)]
    pub github_annotations: bool,
    /// Write the SWE-bench harness's run report (per model: resolved,
    /// unresolved, empty-patch and error counts and ids) with our verdict
    /// and reasons beside every instance; needs `--manifest`.
    #[arg(long, value_name = "FILE", requires = "manifest")]
    pub swebench: Option<PathBuf>,
    /// The manifest `swebench import` wrote: its `instance_id` and `model`
    /// labels group the runs.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// The dataset, for `total_instances` [default: the submitted ones].
    #[arg(long, value_name = "FILE", requires = "swebench")]
    pub dataset: Option<PathBuf>,
    /// Exit non-zero, after writing every report, when a reported run has
    /// one of these statuses (comma-separated: `reject`,
    /// `fixture_mismatch`, `incomplete`, `not_classified`; with no list,
    /// every status but `review`), so a CI gate reads the exit code: 4 when
    /// one is `reject`, else 3 for `fixture_mismatch`, else 2
    /// (`incomplete`, `not_classified`). A broken chain is always exit 65.
    #[arg(long, value_name = "STATUSES", value_delimiter = ',', num_args = 0..)]
    pub fail_on: Option<Vec<FailOn>>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A status `--fail-on` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum FailOn {
    Reject,
    FixtureMismatch,
    Incomplete,
    NotClassified,
}

impl FailOn {
    fn status(self) -> TrialStatus {
        match self {
            FailOn::Reject => TrialStatus::Reject,
            FailOn::FixtureMismatch => TrialStatus::FixtureMismatch,
            FailOn::Incomplete => TrialStatus::Incomplete,
            FailOn::NotClassified => TrialStatus::NotClassified,
        }
    }
}

/// The exit code `--fail-on` asks for: the most severe listed status a
/// trial has, and a line naming how many runs have each.
fn fail_on(listed: &[FailOn], trials: &[report::Trial]) -> Option<(ExitCode, String)> {
    let mut hit: Vec<(TrialStatus, usize)> = Vec::new();
    for f in listed {
        let status = f.status();
        let n = trials.iter().filter(|t| t.status == status).count();
        if n > 0 && !hit.iter().any(|(s, _)| *s == status) {
            hit.push((status, n));
        }
    }
    let code = if hit.iter().any(|(s, _)| *s == TrialStatus::Reject) {
        ExitCode::Reject
    } else if hit.iter().any(|(s, _)| *s == TrialStatus::FixtureMismatch) {
        ExitCode::FixtureMismatch
    } else if hit.is_empty() {
        return None;
    } else {
        ExitCode::Incomplete
    };
    let counts: Vec<String> = hit
        .iter()
        .map(|(s, n)| format!("{n} {}", s.label()))
        .collect();
    Some((
        code,
        format!(
            "--fail-on: {} of {} run(s) reported",
            counts.join(", "),
            trials.len()
        ),
    ))
}

impl ReportArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        if self.github_annotations && self.output.format == OutputFormat::Json {
            return Err(Error::Usage(
                "`--github-annotations` and `--format json` would share stdout: drop one".into(),
            ));
        }
        let ledger = self.scope.ledger(ledger)?;
        if !ledger.root().is_dir() {
            return Err(Error::Missing(format!(
                "no ledger at `{}`",
                ledger.root().display()
            )));
        }
        let files: Vec<(&str, &PathBuf)> = [
            ("junit", &self.junit),
            ("sarif", &self.sarif),
            ("markdown", &self.markdown),
            ("html", &self.html),
            ("swebench", &self.swebench),
        ]
        .into_iter()
        .filter_map(|(format, path)| path.as_ref().map(|p| (format, p)))
        .collect();
        for (i, (format, path)) in files.iter().enumerate() {
            if let Some((other, _)) = files[..i].iter().find(|(_, p)| p == path) {
                return Err(Error::Usage(format!(
                    "`--{other}` and `--{format}` both name `{}`: give each report its own file",
                    path.display()
                )));
            }
            report::check_outside(path, &ledger)?;
        }
        let trials = report::read(&ledger, &self.runs)?;
        let mut summary = Summary::of(&trials);
        for (format, path) in &files {
            let bytes = match *format {
                "junit" => report::junit::render(&trials)?,
                "sarif" => report::sarif::render(&trials),
                "markdown" => report::markdown::render(&summary, &trials),
                "swebench" => {
                    let manifest = self.manifest.as_deref().unwrap_or(Path::new(""));
                    let r =
                        crate::swebench::run_report(manifest, &trials, self.dataset.as_deref())?;
                    let mut text = serde_json::to_string_pretty(&r)
                        .map_err(|e| Error::Internal(format!("cannot encode the report: {e}")))?;
                    text.push('\n');
                    text
                }
                _ => report::html::render(&summary, &trials),
            };
            report::write(path, bytes.as_bytes())?;
            summary.written.push(Written {
                format: match *format {
                    "junit" => report::ReportFormat::Junit,
                    "sarif" => report::ReportFormat::Sarif,
                    "markdown" => report::ReportFormat::Markdown,
                    "swebench" => report::ReportFormat::Swebench,
                    _ => report::ReportFormat::Html,
                },
                path: path.display().to_string(),
            });
        }
        if self.github_annotations {
            output::print(&report::github::render(&trials))?;
        }
        match self.output.format {
            OutputFormat::Json => output::print_json(&summary)?,
            OutputFormat::Human => output::print(&output::human::report(&summary))?,
        }
        let broken: Vec<&str> = trials
            .iter()
            .filter(|t| t.status == TrialStatus::Broken)
            .map(|t| t.run_id.as_str())
            .collect();
        if !broken.is_empty() {
            // The reports say so too; the exit code keeps CI from reading
            // a broken ledger as a finished report.
            return Err(Error::data(
                ledger.root(),
                format!(
                    "the chain of {} run(s) is broken ({}): reported, not trusted",
                    broken.len(),
                    broken.join(", ")
                ),
            ));
        }
        // `--fail-on` with no list fails closed: every status but review.
        let listed = match &self.fail_on {
            None => Vec::new(),
            Some(l) if l.is_empty() => FailOn::value_variants().to_vec(),
            Some(l) => l.clone(),
        };
        if let Some((code, line)) = fail_on(&listed, &trials) {
            eprintln!("{line}");
            return Ok(code);
        }
        Ok(ExitCode::Ok)
    }
}
