//! A traced run's life as library calls: `begin` (a workspace, a key, the
//! begin line and the registration) and `end` (the workspace judged against
//! the trace from one snapshot, the trace sealed, the patch made). The
//! `trace begin` and `trace end` commands print what these return.

use super::{Key, SCHEMA, Seal, SealEvent, key_path, new_span_id};
use crate::config::IgnoredPolicy;
use crate::exit::{Error, ExitCode, Result};
use crate::output::inert;
use std::path::{Path, PathBuf};

/// A run id made from the time and this process.
pub fn new_run_id() -> String {
    let now = crate::clock::now();
    format!(
        "run-{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        &new_span_id()[..8]
    )
}

/// An absolute path, without resolving links (it may not exist yet).
pub fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::read(p, e))
}

/// Where the workspace of `run` goes by default: beside the ledger, in
/// `LEDGER-workspaces/RUN`.
pub fn default_workspace(ledger: &Path, run: &str) -> PathBuf {
    let mut name = ledger
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| ".agent-ledger".into());
    name.push("-workspaces");
    ledger.with_file_name(name).join(run)
}

/// Where `trace begin` puts the run: its workspace, its trace, and the key
/// (beside the trace, or handed over on a descriptor).
pub struct Placement<'a> {
    pub workspace: Option<PathBuf>,
    pub trace: &'a Path,
    pub key_fd: Option<i32>,
}

/// What `begin` made: the run, its workspace and trace, and where its key
/// went (`trace begin --format json`).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Begun {
    /// The run id.
    pub run: String,
    /// The agent the run is for.
    pub agent: String,
    /// The workspace (a git worktree at `base`) the agent works in.
    pub workspace: PathBuf,
    /// The commit the workspace was made at.
    pub base: String,
    /// The trace file (`AGENT_LEDGER_TRACE`).
    pub trace: PathBuf,
    /// The run's key file; null when it went to `key_fd`.
    pub key_file: Option<PathBuf>,
    /// The descriptor the key was written to (`--key-fd`).
    pub key_fd: Option<i32>,
    /// sha256 of the key (never the key).
    pub key_sha256: String,
}

/// Begins a run: a worktree of `repo` at `rev`, a fresh key, the trace's
/// begin line, and the run registered for this user.
pub fn begin(
    repo: &Path,
    agent: &str,
    place: Placement<'_>,
    rev: &str,
    run: Option<String>,
) -> Result<Begun> {
    let Placement {
        workspace,
        trace: trace_file,
        key_fd,
    } = place;
    if agent.is_empty() || agent.len() > 128 || agent.chars().any(char::is_control) {
        return Err(Error::Usage(format!(
            "invalid agent id `{}`: use 1 to 128 characters, no control characters",
            inert(agent)
        )));
    }
    let run = match run {
        Some(r) => crate::ledger::RunId::parse(&r)?.as_str().to_string(),
        None => new_run_id(),
    };
    let resolved = crate::resolve::at_head(repo)?;
    let git = resolved.repo()?;
    let base = git.resolve_commit(rev)?;
    let workspace =
        absolute(&workspace.unwrap_or_else(|| default_workspace(resolved.ledger.root(), &run)))?;
    let trace_abs = absolute(trace_file)?;
    let key_file = key_path(&trace_abs);
    let trace_dir = trace_abs.parent().unwrap_or(Path::new("/")).to_path_buf();
    for existing in [&workspace, &trace_abs, &key_file] {
        if std::fs::symlink_metadata(existing).is_ok() {
            return Err(Error::Exists {
                path: existing.clone(),
                hint: "`trace begin` makes a new workspace, trace and key for each run".into(),
            });
        }
    }
    if crate::paths::is_inside(&resolved.root, &trace_abs) {
        return Err(Error::Usage(format!(
            "the trace `{}` lies inside the repository `{}`: put it (and so its key) outside the repository and the workspace",
            trace_abs.display(),
            resolved.root.display()
        )));
    }
    if trace_abs.starts_with(&workspace) {
        return Err(Error::Usage(format!(
            "the trace `{}` lies inside the workspace `{}`: put it outside",
            trace_abs.display(),
            workspace.display()
        )));
    }
    if workspace.starts_with(&trace_dir) {
        return Err(Error::Usage(format!(
            "the workspace `{}` lies inside the trace's directory `{}`, which `trace exec` hides from the agent: give the trace a directory of its own",
            workspace.display(),
            trace_dir.display()
        )));
    }
    if let Some(parent) = workspace.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::write(parent, e))?;
    }
    crate::git::run(
        git.command()
            .args(["worktree", "add", "--detach", "--quiet"])
            .arg(&workspace)
            .arg(&base),
        &format!("worktree add (the workspace `{}`)", workspace.display()),
    )?;
    let workspace = workspace
        .canonicalize()
        .map_err(|e| Error::read(&workspace, e))?;
    let git_dir = crate::git::Repo::open(&workspace)?
        .git_dir()
        .canonicalize()
        .map_err(|e| Error::read(&workspace, e))?;
    std::fs::create_dir_all(&trace_dir).map_err(|e| Error::write(&trace_dir, e))?;
    // No other process of this user may read the key from this one's
    // memory or descriptors (`/proc`) while it holds it.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| Error::Internal(format!("cannot make the process non-dumpable: {e}")))?;
    let key = Key::generate()?;
    match key_fd {
        Some(fd) => key.write_to_fd(fd)?,
        None => key.create(&key_file)?,
    }
    let seal = Seal {
        schema: SCHEMA,
        event: SealEvent::Begin,
        run: run.clone(),
        agent: Some(agent.to_string()),
        key_sha256: Some(key.sha256()),
        workspace: Some(workspace.to_string_lossy().into_owned()),
        base: Some(base.clone()),
        git_dir: Some(git_dir.to_string_lossy().into_owned()),
        lines: None,
        prev: None,
        ts: crate::clock::timestamp(),
        mac: None,
    };
    if let Err(e) = super::begin(&trace_abs, &seal, &key) {
        // The key of a run that never began is no use to anyone.
        let _ = std::fs::remove_file(&key_file);
        return Err(e);
    }
    let registered = crate::runs::register(&crate::runs::Registration {
        schema: crate::runs::SCHEMA,
        run: run.clone(),
        trace: trace_abs.clone(),
        workspace: workspace.clone(),
        git_dir: git_dir.clone(),
        repo: resolved
            .root
            .canonicalize()
            .map_err(|e| Error::read(&resolved.root, e))?,
        aborted: None,
    });
    if let Err(e) = registered {
        // Unregistered, nothing would keep other adapter calls away from the
        // key: the run does not begin.
        let _ = std::fs::remove_file(&key_file);
        let _ = std::fs::remove_file(&trace_abs);
        return Err(e);
    }
    Ok(Begun {
        run,
        agent: agent.to_string(),
        workspace,
        base,
        trace: trace_abs,
        key_file: key_fd.is_none().then_some(key_file),
        key_fd,
        key_sha256: key.sha256(),
    })
}

/// What `end` found: the judgement, and when the workspace agreed with the
/// trace, the patch and the line the trace is sealed after.
pub struct Ended {
    pub run: String,
    pub judged: crate::reconcile::TraceOutcome,
    /// `Some` only when the judgement is `reconciled` (exit 0): then the
    /// trace is sealed and this is the snapshot's patch against the base.
    pub sealed: Option<(u64, Vec<u8>)>,
}

/// Ends a begun run: judges one snapshot of its workspace against the
/// trace and, when they agree, seals the trace and makes the patch from
/// that same snapshot.
pub fn end(trace_file: &Path, require_mutation: bool, pin: Option<&str>) -> Result<Ended> {
    let Some(run) = super::run_of(trace_file)? else {
        return Err(Error::Refused(format!(
            "`{}` has no begin line: only a run begun with `trace begin` is ended",
            trace_file.display()
        )));
    };
    if let Some(reg) = crate::runs::of_trace(trace_file)?
        && let Some(when) = &reg.aborted
    {
        return Err(Error::Refused(format!(
            "run `{}` was aborted (`trace abort`, {when}): it is never ended",
            inert(&reg.run)
        )));
    }
    let ws = PathBuf::from(run.begin.workspace.clone().unwrap_or_default());
    let base = run.begin.base.clone().unwrap_or_default();
    let resolved = crate::resolve::at_head(&ws)?;
    let ignored = resolved.config.config.trace.ignored;
    // The tree judged is the tree the patch is made from: a snapshot of
    // the workspace, taken once, so nothing changed between the judgement
    // and the patch can reach the patch.
    let scratch = crate::replay::tempdir()?;
    let git = resolved.repo()?.isolated(&base, scratch.path())?;
    // Nothing in the workspace is excused as a ledger: capture runs in the
    // repository, so a ledger here would be the agent's.
    let snapshot = workspace_snapshot(&git, &base, ignored == IgnoredPolicy::Deny)?;
    let judged = crate::reconcile::judge_trace(
        resolved.repo()?,
        resolved.revision.as_deref(),
        trace_file,
        crate::reconcile::Trust {
            file: None,
            pin,
            base: None,
        },
        crate::reconcile::Judging {
            exclude: &[],
            ignored,
            require_mutation,
            tree: crate::reconcile::Judged::Snapshot {
                git: &git,
                tree: &snapshot,
            },
            preloaded: None,
        },
    )?;
    if judged.code != ExitCode::Ok {
        return Ok(Ended {
            run: run.begin.run,
            judged,
            sealed: None,
        });
    }
    let lines = super::end(trace_file)?;
    let patch = tree_patch(&git, &base, &snapshot)?;
    Ok(Ended {
        run: run.begin.run,
        judged,
        sealed: Some((lines as u64, patch)),
    })
}

/// A snapshot of the workspace as a tree object: the base with every change
/// in the working tree, untracked files included (and, under `[trace]
/// ignored = "deny"`, git-ignored ones too, as reconcile counts them),
/// written from a private index so the workspace's own index is untouched.
/// `git`: the workspace seen through its own git directory
/// (`Repo::isolated`), which holds the snapshot's objects.
pub fn workspace_snapshot(git: &crate::git::Repo, base: &str, ignored: bool) -> Result<String> {
    let tmp = crate::replay::tempdir()?;
    let index = tmp.path().join("index");
    let run = |args: &[&str]| -> Result<Vec<u8>> {
        let out = crate::git::run(
            git.command().env("GIT_INDEX_FILE", &index).args(args),
            &format!(
                "{} in the workspace `{}`",
                args.first().copied().unwrap_or(""),
                git.root.display()
            ),
        )?;
        Ok(out.stdout)
    };
    run(&["read-tree", base])?;
    let mut add: Vec<String> = vec!["add".into(), "-A".into()];
    if ignored {
        add.push("-f".into());
    }
    add.push("--".into());
    add.push(".".into());
    let add: Vec<&str> = add.iter().map(String::as_str).collect();
    run(&add)?;
    let tree = run(&["write-tree"])?;
    Ok(String::from_utf8_lossy(&tree).trim().to_string())
}

/// The snapshot `tree` against `base` as a binary unified diff.
pub fn tree_patch(git: &crate::git::Repo, base: &str, tree: &str) -> Result<Vec<u8>> {
    let out = crate::git::run(
        git.command().args([
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--end-of-options",
            base,
            tree,
        ]),
        &format!("diff in the workspace `{}`", git.root.display()),
    )?;
    Ok(out.stdout)
}
