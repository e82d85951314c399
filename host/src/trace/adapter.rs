//! The traced adapter as library calls: where a call works (`Site`,
//! `CallRoot`), its path checks, and `write` and `delete`, each one span (an
//! open line, the change, a close line) on the run's trace. `trace exec`
//! runs its command between the same `open` and `close`.

use super::{Event, Line, Op, Status};
use crate::config::IgnoredPolicy;
use crate::exit::{Error, Result};
use crate::reconcile::{
    abs, changed_paths, display_path, entry_in, hash_at, open_regular, open_tree,
};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// An adapter call's trace, agent and tree (`--trace`, `--agent`,
/// `--repo`), checked: only [`Site::resolve`] makes one, so no call works
/// on a site whose trace and agent were not bound and registered.
#[derive(Debug, Clone)]
pub struct Site {
    repo: Option<PathBuf>,
    trace: PathBuf,
    agent: Option<String>,
    /// The trace begins a registered run.
    begun: bool,
}

impl Site {
    /// The trace the call appends to (a begun run's registered path).
    pub fn trace(&self) -> &Path {
        &self.trace
    }

    /// The call with its trace checked: a trace that begins a run must be a
    /// registered run's, and its registered path replaces the one given (a
    /// symlink or a copy elsewhere cannot bring a key of its own).
    pub fn resolve(repo: Option<PathBuf>, trace: PathBuf, agent: Option<String>) -> Result<Site> {
        let mut site = Site {
            repo,
            trace,
            agent,
            begun: false,
        };
        site.check()?;
        Ok(site)
    }

    fn check(&mut self) -> Result<()> {
        // What the harness put in the environment binds the call: a flag
        // (the agent's to pass) cannot aim it at another run's trace or
        // speak for another agent.
        if let Some(env) = std::env::var_os("AGENT_LEDGER_TRACE").map(PathBuf::from)
            && !crate::paths::same_file(&env, &self.trace)
        {
            return Err(Error::Refused(
                "`--trace` names another trace than AGENT_LEDGER_TRACE, which the harness set: a call cannot be moved to another run".into(),
            ));
        }
        if let Some(env) = std::env::var("AGENT_LEDGER_AGENT").ok()
            && self.agent.as_deref() != Some(env.as_str())
        {
            return Err(Error::Refused(
                "`--agent` names another agent than AGENT_LEDGER_AGENT, which the harness set"
                    .into(),
            ));
        }
        if !super::begins_run(&self.trace)? {
            return Ok(());
        }
        match crate::runs::of_trace(&self.trace)? {
            Some(reg) => {
                self.trace = reg.trace;
                self.begun = true;
                Ok(())
            }
            None => Err(Error::Refused(format!(
                "the trace `{}` begins a run that is not registered for this user (`trace begin` registers every run)",
                self.trace.display()
            ))),
        }
    }
}

/// Where an adapter call works.
pub struct CallRoot {
    /// The directory the paths of the call are relative to: the workspace
    /// of a begun run (a `--repo` naming another is refused), else the top
    /// of the git work tree `--repo` (or `.`) names.
    pub root: PathBuf,
    /// The base revision of a begun run (its workspace checked with
    /// `trace::check_workspace`).
    pub base: Option<String>,
    /// The trace directories of every registered run, which `trace exec`
    /// hides (`runs::guard` refused the call if one forbids it).
    pub hide: Vec<PathBuf>,
}

pub fn root_of(at: &Site) -> Result<PathBuf> {
    Ok(workspace_of(at)?.root)
}

pub fn workspace_of(at: &Site) -> Result<CallRoot> {
    let (root, base) = unguarded_workspace_of(at)?;
    let hide = crate::runs::guard(&root, &at.trace, at.begun)?;
    Ok(CallRoot { root, base, hide })
}

fn unguarded_workspace_of(at: &Site) -> Result<(PathBuf, Option<String>)> {
    let Some(run) = super::run_of(&at.trace)? else {
        // Unauthenticated: the top of a git work tree, nothing else (the
        // flags are the agent's, and the adapter writes as the operator).
        let dir = at.repo.clone().unwrap_or_else(|| PathBuf::from("."));
        let repo = crate::git::Repo::open(&dir)?;
        if !crate::paths::same_file(&dir, &repo.root) {
            return Err(Error::Usage(format!(
                "`{}` is not the top of a git work tree (`{}` is): an adapter call works at the top of one",
                dir.display(),
                repo.root.display()
            )));
        }
        return Ok((dir, None));
    };
    let ws = PathBuf::from(run.begin.workspace.clone().unwrap_or_default());
    if let Some(repo) = &at.repo {
        let same = match (repo.canonicalize(), ws.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            return Err(Error::Usage(format!(
                "the run `{}` works in `{}`; `--repo {}` names another directory",
                run.begin.run,
                ws.display(),
                repo.display()
            )));
        }
    }
    let base = run.begin.base.clone().unwrap_or_default();
    super::check_workspace(
        &ws,
        run.begin.workspace.as_deref().unwrap_or_default(),
        run.begin.git_dir.as_deref().unwrap_or_default(),
        &base,
    )?;
    Ok((ws, Some(base)))
}

/// The `[trace] ignored` setting of the repository at `root`, read from its
/// HEAD (the base revision, never the agent's working copy).
pub fn ignored_policy(root: &Path) -> Result<IgnoredPolicy> {
    let resolved = crate::resolve::at_head(root)?;
    Ok(resolved.config.config.trace.ignored)
}

/// Refuses a path that leaves the repository: absolute, `..`, `.git`, or
/// through a symlink (any existing component, the last included).
pub fn checked_path(repo: &Path, path: &Path) -> Result<Vec<u8>> {
    let bytes = path.as_os_str().as_bytes().to_vec();
    super::check_relative(&bytes).map_err(Error::Usage)?;
    let mut at = repo.to_path_buf();
    for component in bytes.split(|&b| b == b'/') {
        at.push(std::ffi::OsStr::from_bytes(component));
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::Usage(format!(
                    "path `{}` goes through the symlink `{}`: refused before anything was written",
                    display_path(&bytes),
                    at.display()
                )));
            }
            _ => {}
        }
    }
    Ok(bytes)
}

pub fn open(at: &Site, op: Op, path: &[u8], before: Option<String>) -> Result<Line> {
    let mut line = Line::new(&super::new_span_id(), Event::Open, op, path);
    line.before = before;
    line.agent = at.agent.clone();
    super::append(&at.trace, &line)?;
    // What the close line repeats: the agent the append settled on.
    if let Some(run) = super::run_of(&at.trace)? {
        line.agent = run.begin.agent;
    }
    Ok(line)
}

/// Appends the close line of `open`; returns it.
pub fn close(at: &Site, open: &Line, after: Option<String>, error: Option<String>) -> Result<Line> {
    let mut line = open.clone();
    line.event = Event::Close;
    line.after = after;
    line.status = if error.is_some() {
        Status::Error
    } else {
        Status::Closed
    };
    line.error = error;
    line.ts = crate::clock::timestamp();
    line.run = None;
    line.prev = None;
    line.mac = None;
    super::append(&at.trace, &line)?;
    Ok(line)
}

/// `trace write PATH`: writes `from`'s bytes (`-`: stdin; else a file in
/// the call's own tree) to `path` as one span; returns its close line. A
/// failed write still closes its span, with the error.
pub fn write(at: &Site, path: &Path, from: &Path) -> Result<Line> {
    let root = root_of(at)?;
    let rel = checked_path(&root, path)?;
    // Every read and write goes through the tree opened once as
    // a capability: a symlink swapped in after `checked_path`
    // (by a parallel call) cannot lead out of it, and a FIFO
    // cannot stall the adapter.
    let tree = open_tree(&root)?;
    let bytes = if from.as_os_str() == "-" {
        crate::input::read_file_or_stdin(from, crate::input::BODY_CAP)?
    } else {
        // `--from` reads as the operator, outside any sandbox:
        // only a file inside the call's own tree.
        let inside = crate::paths::relative_to(&root, from).filter(|r| !r.as_os_str().is_empty());
        let Some(rel_from) = inside else {
            return Err(Error::Usage(format!(
                "`--from {}` is not a file inside `{}`: pass the bytes on stdin (`--from -`), or a file in the tree",
                from.display(),
                root.display()
            )));
        };
        let rel_from = checked_path(&root, &rel_from)?;
        let file = open_regular(&tree, &root, &rel_from, false)?;
        crate::input::read_opened(file, from, crate::input::BODY_CAP)?
    };
    let span = open(at, Op::Write, &rel, entry_in(&tree, &root, &rel)?)?;
    match write_in(&tree, &root, &rel, &bytes) {
        Ok(()) => {
            // What is there now, with its mode (a write keeps
            // an existing file's mode).
            let line = close(at, &span, entry_in(&tree, &root, &rel)?, None)?;
            Ok(line)
        }
        Err(e) => {
            let now = entry_in(&tree, &root, &rel).ok().flatten();
            close(at, &span, now, Some(e.to_string()))?;
            Err(e)
        }
    }
}

/// `trace delete PATH`: removes the file at `path` as one span; returns
/// its close line.
pub fn delete(at: &Site, path: &Path) -> Result<Line> {
    let root = root_of(at)?;
    let rel = checked_path(&root, path)?;
    let tree = open_tree(&root)?;
    let target = abs(&root, &rel);
    let before = entry_in(&tree, &root, &rel)?;
    if before.is_none() {
        return Err(Error::Missing(format!(
            "`{}` does not exist: nothing to delete",
            display_path(&rel)
        )));
    }
    let span = open(at, Op::Delete, &rel, before)?;
    // `remove_file` unlinks the last component, never what a
    // symlink there points at.
    match tree.remove_file(std::ffi::OsStr::from_bytes(&rel)) {
        Ok(()) => {
            let line = close(at, &span, None, None)?;
            Ok(line)
        }
        Err(e) => {
            let now = entry_in(&tree, &root, &rel).ok().flatten();
            close(at, &span, now, Some(e.to_string()))?;
            Err(Error::write(&target, e))
        }
    }
}

/// Writes `bytes` to `path` in the tree `dir` (opened on `root`): its
/// directories made through the capability, the file opened without
/// following its last component and rewritten only if it is a regular file.
fn write_in(dir: &cap_std::fs::Dir, root: &Path, path: &[u8], bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let rel = Path::new(std::ffi::OsStr::from_bytes(path));
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        dir.create_dir_all(parent)
            .map_err(|e| Error::write(&root.join(parent), e))?;
    }
    let mut file = open_regular(dir, root, path, true)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_data())
        .map_err(|e| Error::write(&root.join(rel), e))
}

/// Content of every changed path (and the declared ones): what `exec`
/// compares before and after the command.
pub fn snapshot(
    repo: &Path,
    also: &[Vec<u8>],
    skip: &[Vec<u8>],
    ignored: bool,
    base: Option<&str>,
) -> Result<BTreeMap<Vec<u8>, Option<String>>> {
    let mut paths = changed_paths(repo, ignored, base)?;
    paths.extend(also.iter().cloned());
    let mut snap = BTreeMap::new();
    for p in paths {
        if skip
            .iter()
            .any(|s| p == *s || (p.starts_with(s) && p.get(s.len()) == Some(&b'/')))
        {
            continue;
        }
        let h = hash_at(repo, &p)?;
        snap.insert(p, h);
    }
    Ok(snap)
}
