//! `agent-ledger trace begin|write|delete|exec|end|export`: the traced
//! adapter an agent (or its harness) calls to touch a tree, so every change
//! is accounted for, and the run around it: `begin` makes a clean workspace
//! and the run's key, `end` reconciles, seals the trace and prints the patch.

use crate::config::IgnoredPolicy;
use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputArgs, OutputFormat, inert};
use crate::reconcile::{
    abs, changed_paths, display_path, entry_in, hash_at, open_regular, open_tree,
};
use crate::trace::{self, Event, Line, Op, Status};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub mod exec;
pub mod session;

use exec::*;
use session::*;

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Clone, clap::Args)]
pub struct Where {
    /// The repository the paths are relative to [default: the workspace of
    /// a trace begun with `trace begin`, else `.`].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// The trace file to append to (JSONL).
    #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
    pub trace: PathBuf,
    /// The agent making the call; in a begun run it must be the run's own.
    #[arg(long, value_name = "ID", env = "AGENT_LEDGER_AGENT")]
    pub agent: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Set by [`Where::resolved`]: the trace begins a registered run.
    #[arg(skip)]
    pub begun: bool,
}

impl Where {
    /// The call with its trace checked: a trace that begins a run must be a
    /// registered run's, and its registered path replaces the one given (a
    /// symlink or a copy elsewhere cannot bring a key of its own).
    fn resolved(mut self) -> Result<Where> {
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
        if !trace::begins_run(&self.trace)? {
            return Ok(self);
        }
        match crate::runs::of_trace(&self.trace)? {
            Some(reg) => {
                self.trace = reg.trace;
                self.begun = true;
                Ok(self)
            }
            None => Err(Error::Refused(format!(
                "the trace `{}` begins a run that is not registered for this user (`trace begin` registers every run)",
                self.trace.display()
            ))),
        }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum TraceCommand {
    /// Begin an authenticated run: a fresh worktree of the repository at a
    /// pinned revision (the workspace), a per-run key (`TRACE.key`, mode
    /// 0600, never printed) and the trace's begin line.
    Begin {
        /// The repository to make the workspace from.
        #[arg(long, value_name = "DIR", default_value = ".")]
        repo: PathBuf,
        /// The agent the run belongs to: every span carries it, and no other
        /// agent may write in the run.
        #[arg(long, value_name = "ID")]
        agent: String,
        /// Where to make the workspace; it must not exist [default: beside
        /// the ledger, `LEDGER-workspaces/RUN`].
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// The revision the workspace is made at.
        #[arg(long, value_name = "REV", default_value = "HEAD")]
        rev: String,
        /// The run id [default: made from the time and process].
        #[arg(long, value_name = "ID")]
        run: Option<String>,
        /// The new trace file, outside the repository and the workspace; its
        /// key is written beside it.
        #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
        trace: PathBuf,
        /// Hand the key over on this file descriptor (opened for writing by
        /// the caller) instead of writing `TRACE.key`: the key never touches
        /// the disk. Later calls read it from the descriptor
        /// `AGENT_LEDGER_TRACE_KEY_FD` names.
        #[arg(long, value_name = "FD")]
        key_fd: Option<i32>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Write a file (bytes from `--from FILE`, or stdin) and record the span.
    Write {
        /// Repository-relative path to write.
        path: PathBuf,
        /// Where the bytes come from: `-` for stdin, or a file inside the
        /// tree (the adapter reads as the operator, outside any sandbox).
        #[arg(long, value_name = "FILE", default_value = "-")]
        from: PathBuf,
        #[command(flatten)]
        at: Where,
    },
    /// Delete a file and record the span.
    Delete {
        /// Repository-relative path to delete.
        path: PathBuf,
        #[command(flatten)]
        at: Where,
    },
    /// Run a command, in the test command's sandbox (the workspace
    /// writable, the trace and its key hidden, the rest read-only, no
    /// network), that declared its output paths first; fails (exit 1),
    /// naming them, when it changed a path it did not declare, and exits 6
    /// when the command itself failed (never with the command's own status,
    /// which could read as a verdict).
    Exec {
        /// A path the command may write or delete (repeatable).
        #[arg(long = "writes", value_name = "PATH")]
        writes: Vec<PathBuf>,
        /// Keep the network inside the sandbox.
        #[arg(long)]
        allow_network: bool,
        /// Run without the sandbox when the kernel refuses namespaces (the
        /// command then sees the trace and its key).
        #[arg(long)]
        allow_unsandboxed: bool,
        #[command(flatten)]
        at: Where,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<std::ffi::OsString>,
    },
    /// End a begun run: reconcile its workspace (exit codes as `reconcile`);
    /// when it reconciles, seal the trace with its end line and print the
    /// patch (the workspace against its base), ready for `capture --body -`.
    End {
        /// The trace of the run.
        #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
        trace: PathBuf,
        /// Exit 3 when the workspace is clean and no write or delete span
        /// exists.
        #[arg(long)]
        require_mutation: bool,
        #[command(flatten)]
        key_pin: crate::trace::KeyPin,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// List this user's registered runs and where each stands: `active`
    /// (begun, not ended: while one is, no call with a trace that has no
    /// begin line is taken), `ended`, `aborted` or `stale` (its workspace
    /// was removed with `git worktree remove` or `prune`).
    List {
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Abort a begun run that will never be ended: it takes no more calls,
    /// `trace end` refuses it, and it no longer holds back calls of traces
    /// without a begin line. Its trace, key and workspace are left where
    /// they are (the output says how to remove them).
    Abort {
        /// The run id (`trace list` shows them).
        #[arg(value_name = "RUN")]
        run: String,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Write the trace's spans as OpenTelemetry (OTLP/JSON): one trace per
    /// run, one span per tool call.
    Export {
        /// The trace to export.
        #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
        trace: PathBuf,
        /// The OTLP/JSON file to write (must not exist), or `-` for stdout.
        #[arg(long, value_name = "FILE")]
        otlp: PathBuf,
    },
}

/// Where an adapter call works.
struct Call {
    /// The directory the paths of the call are relative to: the workspace
    /// of a begun run (a `--repo` naming another is refused), else the top
    /// of the git work tree `--repo` (or `.`) names.
    root: PathBuf,
    /// The base revision of a begun run (its workspace checked with
    /// `trace::check_workspace`).
    base: Option<String>,
    /// The trace directories of every registered run, which `trace exec`
    /// hides (`runs::guard` refused the call if one forbids it).
    hide: Vec<PathBuf>,
}

fn root_of(at: &Where) -> Result<PathBuf> {
    Ok(workspace_of(at)?.root)
}

fn workspace_of(at: &Where) -> Result<Call> {
    let (root, base) = unguarded_workspace_of(at)?;
    let hide = crate::runs::guard(&root, &at.trace, at.begun)?;
    Ok(Call { root, base, hide })
}

fn unguarded_workspace_of(at: &Where) -> Result<(PathBuf, Option<String>)> {
    let Some(run) = trace::run_of(&at.trace)? else {
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
    trace::check_workspace(
        &ws,
        run.begin.workspace.as_deref().unwrap_or_default(),
        run.begin.git_dir.as_deref().unwrap_or_default(),
        &base,
    )?;
    Ok((ws, Some(base)))
}

/// The `[trace] ignored` setting of the repository at `root`, read from its
/// HEAD (the base revision, never the agent's working copy).
fn ignored_policy(root: &Path) -> Result<IgnoredPolicy> {
    let resolved = crate::resolve::resolve(
        Some(root),
        None,
        None,
        crate::resolve::Needs {
            repo: true,
            config_at: crate::resolve::ConfigAt::Head,
        },
    )?;
    Ok(resolved.config.config.trace.ignored)
}

/// Refuses a path that leaves the repository: absolute, `..`, `.git`, or
/// through a symlink (any existing component, the last included).
pub fn checked_path(repo: &Path, path: &Path) -> Result<Vec<u8>> {
    let bytes = path.as_os_str().as_bytes().to_vec();
    trace::check_relative(&bytes).map_err(Error::Usage)?;
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

fn open(at: &Where, op: Op, path: &[u8], before: Option<String>) -> Result<Line> {
    let mut line = Line::new(&trace::new_span_id(), Event::Open, op, path);
    line.before = before;
    line.agent = at.agent.clone();
    trace::append(&at.trace, &line)?;
    // What the close line repeats: the agent the append settled on.
    if let Some(run) = trace::run_of(&at.trace)? {
        line.agent = run.begin.agent;
    }
    Ok(line)
}

/// Appends the close line of `open`; returns it.
fn close(at: &Where, open: &Line, after: Option<String>, error: Option<String>) -> Result<Line> {
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
    trace::append(&at.trace, &line)?;
    Ok(line)
}

/// Reports a closed span: silent for people, the close line for machines.
fn report(at: &Where, lines: &[Line]) -> Result<()> {
    match at.output.format {
        OutputFormat::Json => output::print_json(lines),
        OutputFormat::Human => Ok(()),
    }
}

impl TraceArgs {
    pub fn execute(self) -> Result<ExitCode> {
        match self.command {
            TraceCommand::Begin {
                repo,
                agent,
                workspace,
                rev,
                run,
                trace,
                key_fd,
                output,
            } => begin(
                &repo,
                &agent,
                Placement {
                    workspace,
                    trace: &trace,
                    key_fd,
                },
                &rev,
                run,
                output.format,
            ),
            TraceCommand::End {
                trace,
                require_mutation,
                key_pin,
                output,
            } => end(
                &trace,
                require_mutation,
                key_pin.sha256.as_deref(),
                output.format,
            ),
            TraceCommand::Export { trace, otlp } => crate::otlp::export(&trace, &otlp),
            TraceCommand::List { output } => crate::runs::list(output.format),
            TraceCommand::Abort { run, output } => crate::runs::abort_command(&run, output.format),
            TraceCommand::Write { path, from, at } => {
                let at = at.resolved()?;
                let root = root_of(&at)?;
                let rel = checked_path(&root, &path)?;
                // Every read and write goes through the tree opened once as
                // a capability: a symlink swapped in after `checked_path`
                // (by a parallel call) cannot lead out of it, and a FIFO
                // cannot stall the adapter.
                let tree = open_tree(&root)?;
                let bytes = if from.as_os_str() == "-" {
                    crate::input::read_file_or_stdin(&from, crate::input::BODY_CAP)?
                } else {
                    // `--from` reads as the operator, outside any sandbox:
                    // only a file inside the call's own tree.
                    let inside = crate::paths::relative_to(&root, &from)
                        .filter(|r| !r.as_os_str().is_empty());
                    let Some(rel_from) = inside else {
                        return Err(Error::Usage(format!(
                            "`--from {}` is not a file inside `{}`: pass the bytes on stdin (`--from -`), or a file in the tree",
                            from.display(),
                            root.display()
                        )));
                    };
                    let rel_from = checked_path(&root, &rel_from)?;
                    let file = open_regular(&tree, &root, &rel_from, false)?;
                    crate::input::read_opened(file, &from, crate::input::BODY_CAP)?
                };
                let span = open(&at, Op::Write, &rel, entry_in(&tree, &root, &rel)?)?;
                match write_in(&tree, &root, &rel, &bytes) {
                    Ok(()) => {
                        // What is there now, with its mode (a write keeps
                        // an existing file's mode).
                        let line = close(&at, &span, entry_in(&tree, &root, &rel)?, None)?;
                        report(&at, &[line])?;
                        Ok(ExitCode::Ok)
                    }
                    Err(e) => {
                        let now = entry_in(&tree, &root, &rel).ok().flatten();
                        close(&at, &span, now, Some(e.to_string()))?;
                        Err(e)
                    }
                }
            }
            TraceCommand::Delete { path, at } => {
                let at = at.resolved()?;
                let root = root_of(&at)?;
                let rel = checked_path(&root, &path)?;
                let tree = open_tree(&root)?;
                let target = abs(&root, &rel);
                let before = entry_in(&tree, &root, &rel)?;
                if before.is_none() {
                    return Err(Error::Missing(format!(
                        "`{}` does not exist: nothing to delete",
                        display_path(&rel)
                    )));
                }
                let span = open(&at, Op::Delete, &rel, before)?;
                // `remove_file` unlinks the last component, never what a
                // symlink there points at.
                match tree.remove_file(std::ffi::OsStr::from_bytes(&rel)) {
                    Ok(()) => {
                        let line = close(&at, &span, None, None)?;
                        report(&at, &[line])?;
                        Ok(ExitCode::Ok)
                    }
                    Err(e) => {
                        let now = entry_in(&tree, &root, &rel).ok().flatten();
                        close(&at, &span, now, Some(e.to_string()))?;
                        Err(Error::write(&target, e))
                    }
                }
            }
            TraceCommand::Exec {
                writes,
                allow_network,
                allow_unsandboxed,
                at,
                command,
            } => exec(
                &at.resolved()?,
                &writes,
                &command,
                Sandboxing {
                    allow_network,
                    allow_unsandboxed,
                },
            ),
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
fn snapshot(
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
