//! A trace judged against its tree ([`judge_trace`]): its authentication
//! checked, the tree reconciled with it, and the outcome for people and
//! machines. Shared by `reconcile` and `trace end`.

use super::{Judged, reconcile};
use crate::config::IgnoredPolicy;
use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputFormat};
use crate::paths::relative_to;
use crate::trace::{Authenticated, Forged};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How a trace was trusted, for people and machines.
pub fn trust_note(auth: Option<&Authenticated>) -> String {
    match auth {
        None => "unauthenticated (no begin line): anyone who could write the trace file could have written any line of it".into(),
        Some(a) => format!(
            "authenticated: run `{}`, agent `{}`, key sha256 {}, {} line(s), {}",
            a.run,
            a.agent,
            a.key_sha256,
            a.lines,
            if a.sealed {
                "sealed by its end line"
            } else {
                "not sealed (no end line yet: lines after the last could have been cut)"
            }
        ),
    }
}

/// What a judged trace tells the caller, and the outcome for machines
/// (`value`) and for people (`human`), not yet printed.
pub struct TraceOutcome {
    pub code: ExitCode,
    pub auth: Option<Authenticated>,
    pub value: ReconcileOutput,
    pub human: String,
}

/// `reconcile --format json` (and `trace end`'s judgement).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ReconcileOutput {
    /// The trace verified (or carries no key) and was judged.
    Judged {
        result: ReconcileResult,
        exit_code: i32,
        report: Box<crate::reconcile::ReconcileReport>,
        /// How the trace was authenticated; null without a begin line.
        authenticated: Option<Authenticated>,
        /// What the judgement can be trusted for, in a sentence.
        trust: String,
    },
    /// A line of a keyed trace does not verify.
    Forged {
        /// Always `forged`.
        result: ReconcileResult,
        exit_code: i32,
        trace: String,
        /// The line (0: the trace as a whole).
        line: usize,
        reason: String,
    },
}

/// What `reconcile` concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReconcileResult {
    /// The trace and the tree agree (exit 0).
    Reconciled,
    /// A ghost, phantom, hash miss, break, alias or agent overlap (exit 1).
    Mismatch,
    /// A span is still open (exit 2).
    OpenSpans,
    /// `--require-mutation`, and nothing was changed (exit 3).
    NoMutation,
    /// A line does not verify under the run's key (exit 5).
    Forged,
}

impl ReconcileResult {
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Reconciled => "reconciled",
            ReconcileResult::Mismatch => "mismatch",
            ReconcileResult::OpenSpans => "open_spans",
            ReconcileResult::NoMutation => "no_mutation",
            ReconcileResult::Forged => "forged",
        }
    }
}

impl TraceOutcome {
    /// Prints the outcome on stdout in `format`.
    pub fn print(&self, format: OutputFormat) -> Result<()> {
        output::emit(format, &self.value, || self.human.clone())
    }
}

/// What the caller trusts: where a trace's key is (`None`: `TRACE.key`
/// beside it), the key's sha256 when pinned, and the base revision of a
/// trace without a begin line (`None`: HEAD).
#[derive(Debug, Clone, Copy, Default)]
pub struct Trust<'a> {
    pub file: Option<&'a Path>,
    pub pin: Option<&'a str>,
    pub base: Option<&'a str>,
}

/// How a verified trace is judged: `exclude`, paths never counted as
/// changed (the trace and its key are never counted either); `ignored`,
/// whether git-ignored files count; `require_mutation`, whether no change
/// at all is `no_mutation`; `tree`, the tree judged (the working tree, or a
/// snapshot of it); `preloaded`, the base's listing if it was read ahead.
pub struct Judging<'a> {
    pub exclude: &'a [PathBuf],
    pub ignored: IgnoredPolicy,
    pub require_mutation: bool,
    pub tree: Judged<'a>,
    pub preloaded: Option<super::BaseOf>,
}

/// A trace read and checked ([`read_trace`]): its spans, or where it was
/// forged.
pub type TraceRead = std::result::Result<crate::trace::Verified, Forged>;

/// Reads the trace at `trace` (none there: no spans) and checks its
/// authentication against `key` (a key file) and `pin` (the key's digest).
/// Needs no repository, so a caller may read it while git finds one.
pub fn read_trace(trace: &Path, key: Option<&Path>, pin: Option<&str>) -> Result<TraceRead> {
    let started = std::time::Instant::now();
    // No trace file means the agent never called the adapter: no spans.
    let bytes = crate::input::read_optional(trace, crate::input::TRACE_CAP)?.unwrap_or_default();
    let verified = crate::trace::verify(trace, &bytes, key, pin)?;
    crate::profile::phase("trace", &[("verify", started.elapsed())]);
    Ok(verified)
}

/// Verifies the trace at `trace` and judges it against `git`'s tree
/// ([`Judging`]), whose HEAD is the full commit id `head` as the caller
/// resolved it.
pub fn judge_trace(
    git: &crate::git::Repo,
    head: Option<&str>,
    trace: &Path,
    key: Trust<'_>,
    how: Judging<'_>,
) -> Result<TraceOutcome> {
    let read = read_trace(trace, key.file, key.pin)?;
    judge_read(git, head, trace, read, key.base, how)
}

/// [`judge_trace`] of a trace already read: `base`, the revision the spans
/// start from when the trace has no begin line to say (`--base`).
pub fn judge_read(
    git: &crate::git::Repo,
    head: Option<&str>,
    trace: &Path,
    read: TraceRead,
    base: Option<&str>,
    how: Judging<'_>,
) -> Result<TraceOutcome> {
    let Judging {
        exclude,
        ignored,
        require_mutation,
        tree,
        preloaded,
    } = how;
    let root = git.root.as_path();
    let verified = match read {
        Ok(v) => v,
        Err(forged) => return Ok(forged_outcome(trace, &forged)),
    };
    // The trace file, its key and the ledger are never counted as changes;
    // a begun run's workspace holds no ledger (capture runs in the
    // repository), so nothing in it is excused.
    let key_file = crate::trace::key_path(trace);
    let exclude_ledger = if verified.auth.is_some() {
        &[][..]
    } else {
        exclude
    };
    let exclude: Vec<Vec<u8>> = [trace, key_file.as_path()]
        .into_iter()
        .chain(exclude_ledger.iter().map(PathBuf::as_path))
        .filter_map(|p| relative_to(root, p))
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .collect();
    if let Some(a) = &verified.auth {
        crate::trace::check_workspace(root, &a.workspace, &a.git_dir, &a.base)?;
        if let Some(b) = base.filter(|b| *b != a.base) {
            return Err(Error::Usage(format!(
                "`--base {b}` is not the run's base {}: a begun run is judged from its begin line's",
                a.base
            )));
        }
    }
    let report = reconcile(
        git,
        &verified.spans,
        &exclude,
        ignored == IgnoredPolicy::Deny,
        super::Base {
            commit: verified
                .auth
                .as_ref()
                .map(|a| a.base.as_str())
                .or(base)
                .or(head),
            preloaded,
        },
        verified.auth.is_some(),
        tree,
    )?;
    let (code, result) = if !report.open.is_empty() {
        (ExitCode::OpenSpans, ReconcileResult::OpenSpans)
    } else if report.mismatch() {
        (ExitCode::Mismatch, ReconcileResult::Mismatch)
    } else if require_mutation && report.changed == 0 && report.mutating_spans == 0 {
        (ExitCode::NoMutation, ReconcileResult::NoMutation)
    } else {
        (ExitCode::Ok, ReconcileResult::Reconciled)
    };
    let trust = trust_note(verified.auth.as_ref());
    let human = output::human::reconcile(&report, result.as_str(), &trust);
    Ok(TraceOutcome {
        code,
        auth: verified.auth.clone(),
        value: ReconcileOutput::Judged {
            result,
            exit_code: code.code(),
            report: Box::new(report),
            authenticated: verified.auth,
            trust,
        },
        human,
    })
}

fn forged_outcome(trace: &Path, forged: &Forged) -> TraceOutcome {
    let value = ReconcileOutput::Forged {
        result: ReconcileResult::Forged,
        exit_code: ExitCode::TraceForged.code(),
        trace: trace.display().to_string(),
        line: forged.line,
        reason: forged.reason.clone(),
    };
    let human = format!(
        "forged: the trace `{}` does not verify: {}\n",
        output::inert(&trace.display().to_string()),
        output::inert(&forged.to_string())
    );
    TraceOutcome {
        code: ExitCode::TraceForged,
        auth: None,
        value,
        human,
    }
}
