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
//! File format (JSON, one file per run):
//!
//! ```json
//! {"schema":1,"run":"run-…","trace":"/abs/state/trace.jsonl","workspace":"/abs/ws","git_dir":"/abs/repo/.git/worktrees/ws","repo":"/abs/repo"}
//! ```

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
}

impl Registration {
    /// The directory of the trace and its key.
    pub fn trace_dir(&self) -> &Path {
        self.trace.parent().unwrap_or(Path::new("/"))
    }
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
    crate::sandbox::cache_key_path().and_then(|k| k.parent().map(|d| d.join("runs")))
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
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| Error::write(&path, e))?;
    let bytes = serde_json::to_vec(reg)
        .map_err(|e| Error::Internal(format!("cannot encode a run registration: {e}")))?;
    file.write_all(&bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::write(&path, e))
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
    if !begun && !runs.is_empty() {
        return Err(Error::Refused(format!(
            "{} begun run(s) are registered for this user: an adapter call must be part of one (name its trace); a trace without a begin line is not accepted meanwhile",
            runs.len()
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
