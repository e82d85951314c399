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
        OutputFormat::Json => output::print_json(&lines),
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

/// How `trace exec` may run its command.
#[derive(Debug, Clone, Copy)]
struct Sandboxing {
    allow_network: bool,
    allow_unsandboxed: bool,
}

/// Runs the command in the test command's sandbox: the workspace writable,
/// the trace's directory (the trace and its key), the home directory, the
/// temporary directory and the compile cache's key hidden, everything else
/// read-only, no network unless allowed. Returns its exit code, or why it
/// has none.
fn run_sandboxed(
    root: &Path,
    trace_file: &Path,
    registered: &[PathBuf],
    argv: &[String],
    how: Sandboxing,
) -> Result<std::result::Result<i32, String>> {
    use crate::jail::{Jail, SANDBOX_HOME};
    let tmp = crate::replay::tempdir()?;
    let report_dir = tmp.path().join("unused");
    std::fs::create_dir(&report_dir).map_err(|e| Error::write(&report_dir, e))?;
    let root = root.canonicalize().map_err(|e| Error::read(root, e))?;
    let trace_dir = std::path::absolute(trace_file)
        .map_err(|e| Error::read(trace_file, e))?
        .parent()
        .map(Path::to_path_buf);
    let mut hidden: Vec<PathBuf> = Vec::new();
    hidden.extend(trace_dir);
    // Every begun run's trace and key, whichever trace this call names.
    hidden.extend(registered.iter().cloned());
    hidden.extend(crate::sandbox::cache_key_path().and_then(|k| k.parent().map(Path::to_path_buf)));
    hidden.extend(std::env::var_os("HOME").map(PathBuf::from));
    hidden.extend(std::env::var_os("TMPDIR").map(PathBuf::from));
    // A directory holding the workspace cannot be hidden without hiding the
    // workspace: `trace begin` refuses a trace there, so only an
    // unauthenticated trace beside its repository gets here.
    hidden.retain(|h| {
        h.canonicalize()
            .map(|h| !root.starts_with(&h))
            .unwrap_or(false)
    });
    let jail = Jail {
        tree: &root,
        overlay: None,
        report_dir: &report_dir,
        hidden: &hidden,
        read_only: &[],
        shown: &[],
        scratch: tmp.path(),
        network: how.allow_network,
        system_only: false,
        // The agent writes the operator's own workspace (see SECURITY.md
        // for what that means as root).
        host_user: None,
    };
    let mut env = vec![
        (
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        ),
        ("HOME".to_string(), SANDBOX_HOME.to_string()),
    ];
    env.extend(std::env::var("LANG").ok().map(|l| ("LANG".to_string(), l)));
    let cwd = std::env::current_dir()
        .ok()
        .filter(|d| d.starts_with(&root));
    // As host root the agent's command would still be host uid 0 in the
    // sandbox (it writes the operator's own workspace, so it cannot be
    // another user as the test command is), and kernel interfaces trust
    // uid 0 without capabilities: a review had such a command point
    // `kernel.core_pattern` at its own script, which the kernel ran as
    // host root.
    if crate::jail::host_root() && !root_agent_allowed() {
        return Err(Error::Refused(
            "trace exec runs the agent's command as this user, and this user is root: in the sandbox it would still be host uid 0, which kernel settings and control files trust without capabilities (a command could run code as host root). Run agent-ledger as an unprivileged user, or set AGENT_LEDGER_ALLOW_ROOT_AGENT=1 to accept that".into(),
        ));
    }
    match jail.probe() {
        Ok(()) => {
            // The sandbox's exec does not search PATH; the sandbox sees the
            // host's directories at their own paths, so look it up here.
            // The sandbox's first process is PID 1 of its namespace, which
            // no signal from inside it kills: the command runs as a child of
            // a shell (`; exit $?` keeps the shell from exec'ing it), so a
            // command killed by a signal is seen as one.
            let mut wrapped: Vec<String> = ["/bin/sh", "-c", "\"$@\"; exit $?", "sh"]
                .map(str::to_string)
                .to_vec();
            wrapped.push(find_program(&argv[0])?);
            wrapped.extend(argv[1..].iter().cloned());
            jail.exec(&wrapped, &env, cwd.as_deref().unwrap_or(&root))
        }
        Err(why) if how.allow_unsandboxed && !unsandboxed_allowed() => {
            Err(Error::Refused(format!(
                "the traced command's sandbox cannot be made here ({why}); `--allow-unsandboxed` is honoured only when the operator also sets AGENT_LEDGER_ALLOW_UNSANDBOXED=1 (a flag is the agent's to pass)"
            )))
        }
        Err(why) if how.allow_unsandboxed => {
            eprintln!(
                "warning: the traced command runs without a sandbox (--allow-unsandboxed): {why}"
            );
            let status = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(&root)
                .status()
                .map_err(|e| Error::Missing(format!("cannot run `{}`: {e}", argv[0])))?;
            Ok(status.code().ok_or_else(|| format!("{status}")))
        }
        Err(why) => Err(Error::Refused(format!(
            "the traced command's sandbox cannot be made here ({why}), so it would see the trace and its key; pass --allow-unsandboxed to run it anyway"
        ))),
    }
}

/// Whether the operator accepts traced commands run as host root
/// (`AGENT_LEDGER_ALLOW_ROOT_AGENT=1`).
fn root_agent_allowed() -> bool {
    std::env::var_os("AGENT_LEDGER_ALLOW_ROOT_AGENT").is_some_and(|v| v == "1")
}

/// Whether the operator allowed traced commands without a sandbox
/// (`AGENT_LEDGER_ALLOW_UNSANDBOXED=1`).
fn unsandboxed_allowed() -> bool {
    std::env::var_os("AGENT_LEDGER_ALLOW_UNSANDBOXED").is_some_and(|v| v == "1")
}

/// `program` as a path: itself when it names one, else the first
/// executable file of that name in `PATH`.
fn find_program(program: &str) -> Result<String> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Ok(program.to_string());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .map(|p| p.to_string_lossy().into_owned())
        .ok_or_else(|| Error::Missing(format!("cannot run `{program}`: not found in PATH")))
}

fn exec(
    at: &Where,
    writes: &[PathBuf],
    command: &[std::ffi::OsString],
    how: Sandboxing,
) -> Result<ExitCode> {
    let argv = command
        .iter()
        .map(|a| {
            a.to_str().map(str::to_string).ok_or_else(|| {
                Error::Usage(format!(
                    "the command argument `{}` is not UTF-8",
                    a.to_string_lossy()
                ))
            })
        })
        .collect::<Result<Vec<String>>>()?;
    let Call { root, base, hide } = workspace_of(at)?;
    let declared = writes
        .iter()
        .map(|w| checked_path(&root, w))
        .collect::<Result<Vec<_>>>()?;
    let ignored = ignored_policy(&root)? == IgnoredPolicy::Deny;
    let skip: Vec<Vec<u8>> = [at.trace.clone(), trace::key_path(&at.trace)]
        .iter()
        .filter_map(|p| crate::paths::relative_to(&root, p))
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .collect();
    let before = snapshot(&root, &declared, &skip, ignored, base.as_deref())?;
    let mut spans = Vec::new();
    for p in &declared {
        spans.push(open(at, Op::Write, p, before.get(p).cloned().flatten())?);
    }
    let ran = run_sandboxed(&root, &at.trace, &hide, &argv, how);
    let after = snapshot(&root, &declared, &skip, ignored, base.as_deref())?;
    let failure = match &ran {
        Ok(Ok(0)) => None,
        Ok(Ok(code)) => Some(format!("command exited with status {code}")),
        Ok(Err(why)) => Some(format!("command did not exit: {why}")),
        Err(e) => Some(format!("command could not run: {e}")),
    };
    let mut closed = Vec::new();
    for (p, span) in declared.iter().zip(&spans) {
        closed.push(close(
            at,
            span,
            after.get(p).cloned().flatten(),
            failure.clone(),
        )?);
    }
    let keys: std::collections::BTreeSet<&Vec<u8>> = before.keys().chain(after.keys()).collect();
    // A path in one snapshot only changed too: it differed from HEAD before
    // the command and not after, or the other way round (a clean file the
    // command deleted or edited). A path that was clean in both snapshots is
    // in neither, and what it holds is the base's.
    let undeclared: Vec<&Vec<u8>> = keys
        .into_iter()
        .filter(|p| !declared.contains(p) && before.get(*p) != after.get(*p))
        .collect();
    // The command changed them, so the trace records it, as failed spans:
    // they own nothing (each stays a ghost until a traced call writes it),
    // and the next span on the path starts from what they left. Without
    // them, a later no-op call could adopt the change as its `before`.
    let base_entries = match &undeclared[..] {
        [] => Default::default(),
        paths => {
            let git = crate::git::Repo::open(&root)?;
            let rev = match &base {
                Some(b) => Some(b.clone()),
                None => git.resolve_commit("HEAD").ok(),
            };
            let paths: Vec<&[u8]> = paths.iter().map(|p| p.as_slice()).collect();
            match rev {
                Some(rev) => git.entries_at(&rev, &paths)?,
                None => Default::default(),
            }
        }
    };
    let at_start = |p: &Vec<u8>, snap: &BTreeMap<Vec<u8>, Option<String>>| match snap.get(p) {
        Some(entry) => entry.clone(),
        None => base_entries.get(p).cloned().flatten(),
    };
    for p in &undeclared {
        let span = open(at, Op::Write, p, at_start(p, &before))?;
        closed.push(close(
            at,
            &span,
            at_start(p, &after),
            Some("undeclared: the command changed this path without --writes".into()),
        )?);
    }
    let ran = ran?;
    let undeclared: Vec<String> = undeclared.into_iter().map(|p| display_path(p)).collect();
    let code = if !undeclared.is_empty() {
        ExitCode::Mismatch
    } else if ran == Ok(0) {
        ExitCode::Ok
    } else {
        ExitCode::CommandFailed
    };
    if at.output.format == OutputFormat::Json {
        output::print_json(&serde_json::json!({
            "spans": closed,
            "undeclared": undeclared,
            "command_exit_code": ran.as_ref().ok(),
            "exit_code": code.code(),
        }))?;
    }
    if !undeclared.is_empty() {
        eprintln!("error: the command changed paths it did not declare with --writes:");
        for p in &undeclared {
            eprintln!("  {}", inert(p));
        }
    } else if code == ExitCode::CommandFailed {
        eprintln!(
            "error: `{}` failed ({}); agent-ledger exits {} for a failed traced command",
            inert(&argv[0]),
            inert(&failure.unwrap_or_default()),
            code.code()
        );
    }
    Ok(code)
}

/// A run id made from the time and this process.
fn new_run_id() -> String {
    let now = crate::clock::now();
    format!(
        "run-{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        &trace::new_span_id()[..8]
    )
}

/// An absolute path, without resolving links (it may not exist yet).
fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::read(p, e))
}

/// Where the workspace of `run` goes by default: beside the ledger, in
/// `LEDGER-workspaces/RUN`.
fn default_workspace(ledger: &Path, run: &str) -> PathBuf {
    let mut name = ledger
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| ".agent-ledger".into());
    name.push("-workspaces");
    ledger.with_file_name(name).join(run)
}

/// Where `trace begin` puts the run: its workspace, its trace, and the key
/// (beside the trace, or handed over on a descriptor).
struct Placement<'a> {
    workspace: Option<PathBuf>,
    trace: &'a Path,
    key_fd: Option<i32>,
}

fn begin(
    repo: &Path,
    agent: &str,
    place: Placement<'_>,
    rev: &str,
    run: Option<String>,
    format: OutputFormat,
) -> Result<ExitCode> {
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
    let resolved = crate::resolve::resolve(
        Some(repo),
        None,
        None,
        crate::resolve::Needs {
            repo: true,
            config_at: crate::resolve::ConfigAt::Head,
        },
    )?;
    let git = resolved.repo()?;
    let base = git.resolve_commit(rev)?;
    let workspace =
        absolute(&workspace.unwrap_or_else(|| default_workspace(resolved.ledger.root(), &run)))?;
    let trace_abs = absolute(trace_file)?;
    let key_file = trace::key_path(&trace_abs);
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
    let out = git
        .command()
        .args(["worktree", "add", "--detach", "--quiet"])
        .arg(&workspace)
        .arg(&base)
        .output()
        .map_err(|e| Error::Internal(format!("cannot run git worktree add: {e}")))?;
    if !out.status.success() {
        return Err(Error::Missing(format!(
            "cannot make the workspace `{}`: git worktree add failed: {}",
            workspace.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
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
    let key = trace::Key::generate()?;
    match key_fd {
        Some(fd) => key.write_to_fd(fd)?,
        None => key.create(&key_file)?,
    }
    let seal = trace::Seal {
        schema: trace::SCHEMA,
        event: trace::SealEvent::Begin,
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
    if let Err(e) = trace::begin(&trace_abs, &seal, &key) {
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
    let value = serde_json::json!({
        "run": run,
        "agent": agent,
        "workspace": workspace,
        "base": base,
        "trace": trace_abs,
        "key_file": key_fd.is_none().then_some(&key_file),
        "key_fd": key_fd,
        "key_sha256": key.sha256(),
    });
    output::emit(format, &value, || {
        format!(
            "began run `{}` for agent `{}`\nworkspace: {} (at {})\ntrace: {} (key: {}, sha256 {})\nexport AGENT_LEDGER_TRACE={}\n",
            inert(&run),
            inert(agent),
            inert(&workspace.display().to_string()),
            base,
            inert(&trace_abs.display().to_string()),
            match key_fd {
                Some(fd) => format!("handed over on descriptor {fd}"),
                None => inert(&key_file.display().to_string()).into_owned(),
            },
            key.sha256(),
            inert(&shell_quote(&trace_abs.to_string_lossy()))
        )
    })?;
    Ok(ExitCode::Ok)
}

/// A word for a POSIX shell.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%=,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn end(
    trace_file: &Path,
    require_mutation: bool,
    pin: Option<&str>,
    format: OutputFormat,
) -> Result<ExitCode> {
    let Some(run) = trace::run_of(trace_file)? else {
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
    let resolved = crate::resolve::resolve(
        Some(&ws),
        None,
        None,
        crate::resolve::Needs {
            repo: true,
            config_at: crate::resolve::ConfigAt::Head,
        },
    )?;
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
        &ws,
        trace_file,
        crate::reconcile::Trust {
            file: None,
            pin,
            base: None,
        },
        &[],
        ignored,
        require_mutation,
        crate::reconcile::Judged::Snapshot {
            git: &git,
            tree: &snapshot,
        },
    )?;
    // The report goes to stderr: stdout is the patch.
    match format {
        OutputFormat::Json => eprintln!(
            "{}",
            serde_json::to_string(&judged.value)
                .map_err(|e| Error::Internal(format!("cannot encode the report: {e}")))?
        ),
        OutputFormat::Human => eprint!("{}", judged.human),
    }
    if judged.code != ExitCode::Ok {
        eprintln!(
            "error: run `{}` is not ended (no end line written, no patch printed): exit {}",
            inert(&run.begin.run),
            judged.code.code()
        );
        return Ok(judged.code);
    }
    let lines = trace::end(trace_file)?;
    let patch = tree_patch(&git, &base, &snapshot)?;
    use std::io::Write;
    std::io::stdout()
        .lock()
        .write_all(&patch)
        .map_err(|e| Error::write(Path::new("<stdout>"), e))?;
    eprintln!(
        "ended run `{}`: the trace is sealed after line {lines}; the patch ({} bytes) is on stdout",
        inert(&run.begin.run),
        patch.len()
    );
    Ok(ExitCode::Ok)
}

/// A snapshot of the workspace as a tree object: the base with every change
/// in the working tree, untracked files included (and, under `[trace]
/// ignored = "deny"`, git-ignored ones too, as reconcile counts them),
/// written from a private index so the workspace's own index is untouched.
/// `git`: the workspace seen through its own git directory
/// (`Repo::isolated`), which holds the snapshot's objects.
fn workspace_snapshot(git: &crate::git::Repo, base: &str, ignored: bool) -> Result<String> {
    let tmp = crate::replay::tempdir()?;
    let index = tmp.path().join("index");
    let run = |args: &[&str]| -> Result<Vec<u8>> {
        let out = git
            .command()
            .env("GIT_INDEX_FILE", &index)
            .args(args)
            .output()
            .map_err(|e| Error::Internal(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            return Err(Error::Internal(format!(
                "git {} failed in the workspace `{}`: {}",
                args.first().copied().unwrap_or(""),
                git.root.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
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
fn tree_patch(git: &crate::git::Repo, base: &str, tree: &str) -> Result<Vec<u8>> {
    let out = git
        .command()
        .args([
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--end-of-options",
            base,
            tree,
        ])
        .output()
        .map_err(|e| Error::Internal(format!("cannot run git diff: {e}")))?;
    if !out.status.success() {
        return Err(Error::Internal(format!(
            "git diff failed in the workspace `{}`: {}",
            git.root.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}
