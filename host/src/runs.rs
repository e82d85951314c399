//! The registry of begun runs: `trace begin` records each run in the
//! per-user state directory (`$XDG_STATE_HOME/agent-ledger/runs/RUN.json`,
//! else `~/.local/state/agent-ledger/runs/`, mode 0700), which `trace exec`
//! and the test command's sandbox always hide.
//!
//! The adapter's flags (`--trace`, `--repo`, `--from`) are the agent's to
//! choose, so what a call may touch cannot depend on them alone. Every
//! adapter call reads the registry: no call may work in a directory that
//! holds (or lies inside) a registered run's trace directory, a begun
//! workspace takes calls only for its own run's trace, the repository a run
//! was begun from takes none while the run's trace exists (its git directory
//! holds the workspace's, and what a call writes into a repository's `.git`
//! runs as the operator's git later), and `trace exec` hides
//! every registered trace directory, not only its own. A registration is
//! removed once its trace no longer exists.
//!
//! A run is in one [`State`]: `active` (begun, not ended), `ended` (its
//! trace sealed by `trace end`), `aborted` (`trace abort`: it takes no more
//! calls and is never ended) or `stale` (its workspace's git directory is
//! gone: `git worktree remove` or `prune` removed the workspace, which
//! nothing inside the run can reach). Only active runs refuse the calls of
//! traces without a begin line; every registered run's trace directory
//! stays hidden while its trace exists.
//!
//! File format (JSON, one file per run):
//!
//! ```json
//! {"schema":1,"run":"run-…","trace":"/abs/state/trace.jsonl","workspace":"/abs/ws","git_dir":"/abs/repo/.git/worktrees/ws","repo":"/abs/repo"}
//! ```
//!
//! `aborted` (an RFC 3339 time) is added by `trace abort`.

use crate::exit::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The registration schema this version writes and reads.
pub const SCHEMA: u32 = 1;

/// One begun run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// Always 1.
    pub schema: u32,
    /// The run id of the trace's begin line.
    pub run: String,
    /// The trace (absolute); its key lies beside it.
    pub trace: PathBuf,
    /// The run's workspace (absolute, canonical).
    pub workspace: PathBuf,
    /// The workspace's git directory (absolute, canonical).
    pub git_dir: PathBuf,
    /// The top of the repository the run was begun from (absolute,
    /// canonical).
    pub repo: PathBuf,
    /// When `trace abort` aborted the run (RFC 3339); absent while it was
    /// not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
}

/// Where a registered run stands (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Begun and not ended: it takes its own calls, and while it is, no
    /// call with a trace that has no begin line is taken.
    Active,
    /// Sealed by `trace end`.
    Ended,
    /// Aborted by `trace abort`: no more calls, never ended.
    Aborted,
    /// Its workspace's git directory is gone.
    Stale,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Ended => "ended",
            State::Aborted => "aborted",
            State::Stale => "stale",
        }
    }
}

impl Registration {
    /// The directory of the trace and its key.
    pub fn trace_dir(&self) -> &Path {
        self.trace.parent().unwrap_or(Path::new("/"))
    }

    /// Where the run stands now.
    pub fn state(&self) -> State {
        if self.aborted.is_some() {
            State::Aborted
        } else if ends_sealed(&self.trace) {
            State::Ended
        } else if std::fs::symlink_metadata(&self.git_dir).is_err() {
            State::Stale
        } else {
            State::Active
        }
    }

    fn file(&self) -> Option<PathBuf> {
        dir().map(|d| d.join(format!("{}.json", self.run)))
    }
}

/// Whether the last line of `trace` is an end line. Only the tail is read
/// (a line is far shorter than it); an unreadable trace is not ended.
fn ends_sealed(trace: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(trace) else {
        return false;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if file
        .seek(SeekFrom::Start(len.saturating_sub(64 << 10)))
        .is_err()
    {
        return false;
    }
    let mut tail = Vec::new();
    if file.take(64 << 10).read_to_end(&mut tail).is_err() {
        return false;
    }
    tail.split(|&b| b == b'\n')
        .rev()
        .find(|l| !l.is_empty())
        .and_then(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .is_some_and(|v| v.get("event").and_then(|e| e.as_str()) == Some("end"))
}

/// Marks `run` aborted: it takes no more calls and is never ended; its
/// trace, key and workspace stay where they are. Returns the registration
/// as it was. A run that is not registered is an error (66); an ended run
/// has nothing to abort (65).
pub fn abort(run: &str) -> Result<Registration> {
    let Some(reg) = registered()?.into_iter().find(|r| r.run == run) else {
        return Err(Error::Missing(format!(
            "no begun run `{}` is registered for this user (`agent-ledger trace list` shows them)",
            crate::output::inert(run)
        )));
    };
    match reg.state() {
        State::Ended => {
            return Err(Error::Refused(format!(
                "run `{}` was ended: there is nothing to abort",
                crate::output::inert(run)
            )));
        }
        State::Aborted => return Ok(reg),
        State::Active | State::Stale => {}
    }
    let Some(path) = reg.file() else {
        return Err(Error::Internal("the run registry has no directory".into()));
    };
    let mut aborted = reg.clone();
    aborted.aborted = Some(crate::clock::timestamp());
    let bytes = serde_json::to_vec(&aborted)
        .map_err(|e| Error::Internal(format!("cannot encode a run registration: {e}")))?;
    crate::atomic::write(
        &path,
        &bytes,
        crate::atomic::Access::Private,
        crate::atomic::Clobber::Replace,
    )?;
    Ok(reg)
}

/// The registry directory, `None` when neither `$XDG_STATE_HOME` nor
/// `$HOME` is set.
/// `AGENT_LEDGER_RUNS_DIR` (absolute) overrides it, for tests and for
/// operators who keep state elsewhere.
pub fn dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("AGENT_LEDGER_RUNS_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        return Some(d);
    }
    crate::wasm::cache_key_path().and_then(|k| k.parent().map(|d| d.join("runs")))
}

/// The registered run whose trace is `trace` (compared as canonical
/// paths), if any.
pub fn of_trace(trace: &Path) -> Result<Option<Registration>> {
    let Ok(trace) = trace.canonicalize() else {
        return Ok(None);
    };
    Ok(registered()?
        .into_iter()
        .find(|r| r.trace.canonicalize().is_ok_and(|t| t == trace)))
}

/// Records a begun run; the registry directory is made 0700.
pub fn register(reg: &Registration) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let Some(dir) = dir() else {
        return Err(Error::Usage(
            "`trace begin` registers the run in $XDG_STATE_HOME or $HOME, and neither is set"
                .into(),
        ));
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| Error::write(&dir, e))?;
    let path = dir.join(format!("{}.json", reg.run));
    let bytes = serde_json::to_vec(reg)
        .map_err(|e| Error::Internal(format!("cannot encode a run registration: {e}")))?;
    crate::atomic::write(
        &path,
        &bytes,
        crate::atomic::Access::Private,
        crate::atomic::Clobber::Never(
            "a run is registered once, by the `trace begin` that makes it",
        ),
    )
}

/// Every registered run whose trace still exists; registrations of traces
/// that are gone are removed. An unreadable registration is an error.
pub fn registered() -> Result<Vec<Registration>> {
    let Some(dir) = dir() else {
        return Ok(Vec::new());
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::read(&dir, e)),
    };
    let mut runs = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::read(&dir, e))?.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let bytes = crate::input::read_file(&path, crate::input::KEY_CAP)?;
        let reg: Registration = serde_json::from_slice(&bytes)
            .map_err(|e| Error::data(&path, format!("not a run registration: {e}")))?;
        if reg.schema != SCHEMA {
            return Err(Error::data(
                &path,
                format!("schema {} is not 1", reg.schema),
            ));
        }
        if std::fs::symlink_metadata(&reg.trace).is_err() {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        runs.push(reg);
    }
    runs.sort_by(|a, b| a.run.cmp(&b.run));
    Ok(runs)
}

/// Refuses an adapter call that would work in `root` for the trace `trace`
/// when a registered run forbids it; returns the trace directories of every
/// registered run and the registry itself, for `trace exec` to hide. A call
/// with an unauthenticated trace (`begun` false) is refused while any run is
/// registered: it would act as the operator on any work tree it names.
pub fn guard(root: &Path, trace: &Path, begun: bool) -> Result<Vec<PathBuf>> {
    let root = root.canonicalize().map_err(|e| Error::read(root, e))?;
    let trace = std::path::absolute(trace).map_err(|e| Error::read(trace, e))?;
    let trace = trace.canonicalize().unwrap_or(trace);
    let runs = registered()?;
    // The refusal names no run: it goes to whoever made the call.
    let active = runs.iter().filter(|r| r.state() == State::Active).count();
    if !begun && active > 0 {
        return Err(Error::Refused(format!(
            "{active} begun run(s) are registered for this user and not ended: an adapter call must be part of one (name its trace); a trace without a begin line is not accepted meanwhile. The operator's `agent-ledger trace list` shows them, and `agent-ledger trace abort RUN` clears one that will never be ended"
        )));
    }
    let mut hide: Vec<PathBuf> = dir().into_iter().filter(|d| d.exists()).collect();
    if hide
        .iter()
        .any(|d| d.starts_with(&root) || root.starts_with(d))
    {
        return Err(Error::Refused(format!(
            "`{}` holds or lies in the run registry: no adapter call works there",
            root.display()
        )));
    }
    for reg in runs {
        let trace_dir = reg.trace_dir();
        let trace_dir = trace_dir.canonicalize().unwrap_or(trace_dir.to_path_buf());
        let own = reg.trace.canonicalize().unwrap_or(reg.trace.clone()) == trace;
        if own && reg.aborted.is_some() {
            return Err(Error::Refused(format!(
                "run `{}` was aborted (`trace abort`, {}): it takes no more calls",
                crate::output::inert(&reg.run),
                reg.aborted.as_deref().unwrap_or("")
            )));
        }
        if root.starts_with(&trace_dir) || trace_dir.starts_with(&root) {
            return Err(Error::Refused(format!(
                "`{}` holds or lies in the directory of a begun run's trace and key: no adapter call works there",
                root.display()
            )));
        }
        if root != reg.workspace && root.starts_with(&reg.workspace) {
            return Err(Error::Refused(format!(
                "`{}` lies inside the workspace of a begun run: its calls work at the workspace's top, for its own trace",
                root.display()
            )));
        }
        if root == reg.workspace && !own {
            return Err(Error::Refused(format!(
                "`{}` is the workspace of a begun run: its calls go to that run's own trace",
                root.display()
            )));
        }
        if root != reg.workspace && reg.git_dir.starts_with(&root) {
            return Err(Error::Refused(format!(
                "`{}` holds the git directory of a begun run's workspace: no adapter call works there while the run's trace exists",
                root.display()
            )));
        }
        hide.push(trace_dir);
    }
    Ok(hide)
}

/// One run as `trace list` shows it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Listed {
    pub run: String,
    pub state: State,
    pub trace: PathBuf,
    pub workspace: PathBuf,
    pub repo: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
}

/// `trace abort --format json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct TraceAbortOutput<'a> {
    pub run: &'a str,
    /// Always true.
    pub aborted: bool,
    /// Left in place, with its key.
    pub trace: &'a std::path::Path,
    /// Left in place.
    pub workspace: &'a std::path::Path,
    /// The repository the workspace is a worktree of.
    pub repo: &'a std::path::Path,
}

/// `trace list`.
pub fn list(format: crate::output::OutputFormat) -> Result<crate::exit::ExitCode> {
    use crate::output::inert;
    let runs: Vec<Listed> = registered()?
        .into_iter()
        .map(|r| Listed {
            state: r.state(),
            run: r.run,
            trace: r.trace,
            workspace: r.workspace,
            repo: r.repo,
            aborted: r.aborted,
        })
        .collect();
    crate::output::emit(format, &runs, || {
        if runs.is_empty() {
            return "no begun runs are registered for this user\n".to_string();
        }
        let mut text = String::new();
        for r in &runs {
            text.push_str(&format!(
                "{}  {}\n  workspace: {}\n  trace: {}\n  repository: {}\n",
                inert(&r.run),
                r.state.as_str(),
                inert(&r.workspace.display().to_string()),
                inert(&r.trace.display().to_string()),
                inert(&r.repo.display().to_string()),
            ));
        }
        text
    })?;
    Ok(crate::exit::ExitCode::Ok)
}

/// `trace abort RUN`.
pub fn abort_command(
    run: &str,
    format: crate::output::OutputFormat,
) -> Result<crate::exit::ExitCode> {
    use crate::output::inert;
    let reg = abort(run)?;
    let value = TraceAbortOutput {
        run: &reg.run,
        aborted: true,
        trace: &reg.trace,
        workspace: &reg.workspace,
        repo: &reg.repo,
    };
    crate::output::emit(format, &value, || {
        format!(
            "aborted run `{}`: it takes no more calls and is never ended\nleft in place: the trace {} (and its key), the workspace {}\nto remove the workspace: git -C {} worktree remove --force {}\n",
            inert(&reg.run),
            inert(&reg.trace.display().to_string()),
            inert(&reg.workspace.display().to_string()),
            inert(&reg.repo.display().to_string()),
            inert(&reg.workspace.display().to_string()),
        )
    })?;
    Ok(crate::exit::ExitCode::Ok)
}
