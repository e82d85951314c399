//! `trace exec`: an agent's command run in the jail, its declared writes
//! traced and everything else it changed judged.

use super::*;
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;

/// How `trace exec` may run its command.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sandboxing {
    pub(super) allow_network: bool,
    pub(super) allow_unsandboxed: bool,
}

/// Runs the command in the test command's sandbox: the workspace writable,
/// the trace's directory (the trace and its key), the home directory, the
/// temporary directory and the compile cache's key hidden, everything else
/// read-only, no network unless allowed. Returns its exit code, or why it
/// has none.
pub(super) fn run_sandboxed(
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
    hidden.extend(crate::wasm::cache_key_path().and_then(|k| k.parent().map(Path::to_path_buf)));
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
        // The agent writes the operator's own workspace (see
        // docs/design/threat-model.md, "Known limits", for what that means
        // as root).
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
    // uid 0 without capabilities: such a command pointed `kernel.core_pattern`
    // at its own script, which the kernel ran as host root
    // (`tests/all/trace_auth.rs`,
    // `trace_exec_as_host_root_is_refused_unless_the_operator_accepts_it`).
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
pub(super) fn root_agent_allowed() -> bool {
    std::env::var_os("AGENT_LEDGER_ALLOW_ROOT_AGENT").is_some_and(|v| v == "1")
}

/// Whether the operator allowed traced commands without a sandbox
/// (`AGENT_LEDGER_ALLOW_UNSANDBOXED=1`).
pub(super) fn unsandboxed_allowed() -> bool {
    std::env::var_os("AGENT_LEDGER_ALLOW_UNSANDBOXED").is_some_and(|v| v == "1")
}

/// `program` as a path: itself when it names one, else the first
/// executable file of that name in `PATH`.
pub(super) fn find_program(program: &str) -> Result<String> {
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

pub(super) fn exec(
    at: &Site,
    format: OutputFormat,
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
    let CallRoot { root, base, hide } = workspace_of(at)?;
    let declared = writes
        .iter()
        .map(|w| checked_path(&root, w))
        .collect::<Result<Vec<_>>>()?;
    let ignored = ignored_policy(&root)? == IgnoredPolicy::Deny;
    let skip: Vec<Vec<u8>> = [at.trace().to_path_buf(), trace::key_path(at.trace())]
        .iter()
        .filter_map(|p| crate::paths::relative_to(&root, p))
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .collect();
    let before = snapshot(&root, &declared, &skip, ignored, base.as_deref())?;
    let mut spans = Vec::new();
    for p in &declared {
        spans.push(open(at, Op::Write, p, before.get(p).cloned().flatten())?);
    }
    let ran = run_sandboxed(&root, at.trace(), &hide, &argv, how);
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
                None => git.head().map(str::to_string),
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
    if format == OutputFormat::Json {
        output::print_json(&TraceExecOutput {
            spans: &closed,
            undeclared: &undeclared,
            command_exit_code: ran.as_ref().ok().copied(),
            exit_code: code.code(),
        })?;
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

/// `trace exec --format json`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct TraceExecOutput<'a> {
    /// The close line of each span, in order.
    pub spans: &'a [agent_ledger_trace::Line],
    /// Paths the command changed without declaring them (`--writes`).
    pub undeclared: &'a [String],
    /// The command's own exit code; null when it was killed by a signal.
    pub command_exit_code: Option<i32>,
    /// `trace exec`'s exit code: 0, 1 (undeclared changes) or 6 (the
    /// command failed).
    pub exit_code: i32,
}
