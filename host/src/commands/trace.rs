//! `agent-ledger trace write|delete|exec`: the traced adapter an agent (or
//! its harness) calls to touch a tree, so every change is accounted for.

use crate::exit::{Error, ExitCode, Result};
use crate::output::{self, OutputArgs, OutputFormat, inert};
use crate::reconcile::{abs, changed_paths, display_path, hash_at};
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
    /// The repository the paths are relative to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// The trace file to append to (JSONL).
    #[arg(long, value_name = "FILE", env = "AGENT_LEDGER_TRACE")]
    pub trace: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum TraceCommand {
    /// Write a file (bytes from `--from FILE`, or stdin) and record the span.
    Write {
        /// Repository-relative path to write.
        path: PathBuf,
        /// Where the bytes come from: a file, or `-` for stdin.
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
    /// Run a command that declared its output paths first; fails (exit 1),
    /// naming them, when it changed a path it did not declare, and exits 6
    /// when the command itself failed (never with the command's own status,
    /// which could read as a verdict).
    Exec {
        /// A path the command may write or delete (repeatable).
        #[arg(long = "writes", value_name = "PATH")]
        writes: Vec<PathBuf>,
        #[command(flatten)]
        at: Where,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<std::ffi::OsString>,
    },
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
    trace::append(&at.trace, &line)?;
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
            TraceCommand::Write { path, from, at } => {
                let rel = checked_path(&at.repo, &path)?;
                let bytes = crate::input::read_file_or_stdin(&from, crate::input::BODY_CAP)?;
                let target = abs(&at.repo, &rel);
                let span = open(&at, Op::Write, &rel, hash_at(&at.repo, &rel)?)?;
                let written = target
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::write(&target, &bytes));
                match written {
                    Ok(()) => {
                        let line =
                            close(&at, &span, Some(crate::digest::sha256_hex(&bytes)), None)?;
                        report(&at, &[line])?;
                        Ok(ExitCode::Ok)
                    }
                    Err(e) => {
                        close(&at, &span, hash_at(&at.repo, &rel)?, Some(e.to_string()))?;
                        Err(Error::write(&target, e))
                    }
                }
            }
            TraceCommand::Delete { path, at } => {
                let rel = checked_path(&at.repo, &path)?;
                let target = abs(&at.repo, &rel);
                let before = hash_at(&at.repo, &rel)?;
                if before.is_none() {
                    return Err(Error::Missing(format!(
                        "`{}` does not exist: nothing to delete",
                        display_path(&rel)
                    )));
                }
                let span = open(&at, Op::Delete, &rel, before)?;
                match std::fs::remove_file(&target) {
                    Ok(()) => {
                        let line = close(&at, &span, None, None)?;
                        report(&at, &[line])?;
                        Ok(ExitCode::Ok)
                    }
                    Err(e) => {
                        close(&at, &span, hash_at(&at.repo, &rel)?, Some(e.to_string()))?;
                        Err(Error::write(&target, e))
                    }
                }
            }
            TraceCommand::Exec {
                writes,
                at,
                command,
            } => exec(&at, &writes, &command),
        }
    }
}

/// Content of every changed path (and the declared ones): what `exec`
/// compares before and after the command.
fn snapshot(
    repo: &Path,
    also: &[Vec<u8>],
    trace_rel: Option<&[u8]>,
) -> Result<BTreeMap<Vec<u8>, Option<String>>> {
    let mut paths = changed_paths(repo)?;
    paths.extend(also.iter().cloned());
    let mut snap = BTreeMap::new();
    for p in paths {
        if Some(p.as_slice()) == trace_rel {
            continue;
        }
        let h = hash_at(repo, &p)?;
        snap.insert(p, h);
    }
    Ok(snap)
}

fn exec(at: &Where, writes: &[PathBuf], command: &[std::ffi::OsString]) -> Result<ExitCode> {
    let declared = writes
        .iter()
        .map(|w| checked_path(&at.repo, w))
        .collect::<Result<Vec<_>>>()?;
    let trace_rel =
        crate::paths::relative_to(&at.repo, &at.trace).map(|p| p.as_os_str().as_bytes().to_vec());
    let before = snapshot(&at.repo, &declared, trace_rel.as_deref())?;
    let mut spans = Vec::new();
    for p in &declared {
        spans.push(open(at, Op::Write, p, before.get(p).cloned().flatten())?);
    }
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .current_dir(&at.repo)
        .status();
    let after = snapshot(&at.repo, &declared, trace_rel.as_deref())?;
    let failure = match &status {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("command exited with {s}")),
        Err(e) => Some(format!("command could not start: {e}")),
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
    let status = status.map_err(|e| {
        Error::Missing(format!(
            "cannot run `{}`: {e}",
            command[0].to_string_lossy()
        ))
    })?;
    let keys: std::collections::BTreeSet<&Vec<u8>> = before.keys().chain(after.keys()).collect();
    let undeclared: Vec<String> = keys
        .into_iter()
        .filter(|p| {
            !declared.contains(p)
                && before.get(*p).cloned().flatten() != after.get(*p).cloned().flatten()
        })
        .map(|p| display_path(p))
        .collect();
    let code = if !undeclared.is_empty() {
        ExitCode::Mismatch
    } else if status.success() {
        ExitCode::Ok
    } else {
        ExitCode::CommandFailed
    };
    if at.output.format == OutputFormat::Json {
        output::print_json(&serde_json::json!({
            "spans": closed,
            "undeclared": undeclared,
            "command_exit_code": status.code(),
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
            "error: `{}` failed ({status}); agent-ledger exits {} for a failed traced command",
            inert(&command[0].to_string_lossy()),
            code.code()
        );
    }
    Ok(code)
}
