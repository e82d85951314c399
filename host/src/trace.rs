//! The tool-call trace, host side: appending lines to the file, span ids,
//! timestamps, and the run key of an authenticated trace. The line format,
//! the parse into spans and the rules that judge them live in
//! `agent-ledger-trace`, shared with the `span_bijection` guest component;
//! this module re-exports them so there is one trace API.
//!
//! Appends take an exclusive lock on the file, read what is there, and write
//! each line with one `write` call, then sync, so concurrent writers never
//! tear a line and each line chains to the one really before it.
//!
//! An authenticated trace (`trace begin`) has a per-run key: 32 random bytes,
//! in hex, in `TRACE.key` beside the trace (mode 0600, created with the trace,
//! never printed). The trace and its key must lie outside the repository and
//! the workspace, and `trace exec` hides their directory from the command it
//! runs. Each line carries the run id, the sha256 of the line before it and
//! an HMAC-SHA256 under the key; [`verify`] checks all of it.

use crate::exit::{Error, Result};
pub use agent_ledger_trace::{
    Chain, Event, Line, Op, SCHEMA, Seal, SealEvent, Span, Status, Trace, line_sha256,
};
use std::fs::OpenOptions;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

pub mod adapter;
mod key;
pub mod session;

pub use key::{KEY_FD_ENV, KEY_LEN, Key, KeyPin, fd_key, key_path, new_span_id, preload_fd_key};

/// Opens the trace for appending, locked; hands what it holds to `build`,
/// which returns the line to append (without its newline); writes it with one
/// `write` and syncs.
fn append_with(
    trace: &Path,
    create_new: bool,
    build: impl FnOnce(&[u8]) -> Result<Vec<u8>>,
) -> Result<()> {
    if let Some(dir) = trace.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    }
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    let mut file = options.open(trace).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => Error::Exists {
            path: trace.to_path_buf(),
            hint: "a traced run begins with a new trace file".into(),
        },
        _ => Error::write(trace, e),
    })?;
    file.lock().map_err(|e| Error::write(trace, e))?;
    let result = (|| {
        let mut existing = Vec::new();
        file.rewind()
            .and_then(|()| file.read_to_end(&mut existing).map(|_| ()))
            .map_err(|e| Error::read(trace, e))?;
        if existing.len() as u64 > crate::input::TRACE_CAP {
            return Err(Error::data(trace, "the trace is larger than its cap"));
        }
        let mut text = build(&existing)?;
        text.push(b'\n');
        file.write_all(&text)
            .and_then(|()| file.sync_data())
            .map_err(|e| Error::write(trace, e))
    })();
    let _ = file.unlock();
    result
}

/// The lines of `bytes`, without the empty piece after the last newline.
fn raw_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// The begin line of a trace, when its line 1 is one.
fn begin_line(trace: &Path, bytes: &[u8]) -> Result<Option<Seal>> {
    let Some(first) = raw_lines(bytes).into_iter().next() else {
        return Ok(None);
    };
    let value: serde_json::Value = match serde_json::from_slice(first) {
        Ok(v) => v,
        Err(_) => return Ok(None),
    };
    if value.get("event").and_then(|e| e.as_str()) != Some("begin") {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| Error::data(trace, format!("line 1: not a begin line: {e}")))
}

/// Whether the trace at `trace` exists and its line 1 is a begin line (its
/// key is not read).
pub fn begins_run(trace: &Path) -> Result<bool> {
    let bytes = crate::input::read_optional(trace, crate::input::TRACE_CAP)?.unwrap_or_default();
    Ok(begin_line(trace, &bytes)?.is_some())
}

/// The run a trace was begun for, with its key (checked against the begin
/// line), or `None` for a trace without a begin line.
pub struct Run {
    pub begin: Seal,
    pub key: Key,
}

/// Reads the begin line of `trace` and its key; `None` when the trace does
/// not exist or has no begin line.
pub fn run_of(trace: &Path) -> Result<Option<Run>> {
    let bytes = crate::input::read_optional(trace, crate::input::TRACE_CAP)?.unwrap_or_default();
    run_in(trace, &bytes)
}

fn run_in(trace: &Path, bytes: &[u8]) -> Result<Option<Run>> {
    let Some(begin) = begin_line(trace, bytes)? else {
        return Ok(None);
    };
    let key_file = key_path(trace);
    let key = match fd_key() {
        Some(k) => k.clone(),
        None => Key::read(&key_file)?,
    };
    if Some(key.sha256()) != begin.key_sha256 {
        // Neither digest is printed: the message must not tell a caller
        // which key a file it pointed here holds.
        return Err(Error::data(
            &key_file,
            "not this run's key: its sha256 is not the one the trace's begin line names",
        ));
    }
    Ok(Some(Run { begin, key }))
}

/// Writes the begin line of a new trace (the file must not exist).
pub fn begin(trace: &Path, seal: &Seal, key: &Key) -> Result<()> {
    append_with(trace, true, |_| {
        let mut seal = seal.clone();
        seal.prev = None;
        seal.mac = Some(key.mac(&seal.mac_input()));
        serde_json::to_vec(&seal)
            .map_err(|e| Error::Internal(format!("cannot encode a trace line: {e}")))
    })
}

/// Seals an authenticated trace with its end line; returns how many lines
/// came before it.
pub fn end(trace: &Path) -> Result<usize> {
    let mut count = 0;
    append_with(trace, false, |existing| {
        let Some(run) = run_in(trace, existing)? else {
            return Err(Error::Refused(format!(
                "`{}` has no begin line: only a trace begun with `trace begin` is ended",
                trace.display()
            )));
        };
        let lines = raw_lines(existing);
        let last = lines.last().copied().unwrap_or_default();
        refuse_if_sealed(trace, &lines)?;
        count = lines.len();
        let mut seal = Seal {
            schema: SCHEMA,
            event: SealEvent::End,
            run: run.begin.run.clone(),
            agent: None,
            key_sha256: None,
            workspace: None,
            base: None,
            git_dir: None,
            lines: Some(lines.len() as u64),
            prev: Some(line_sha256(last)),
            ts: crate::clock::timestamp(),
            mac: None,
        };
        seal.mac = Some(run.key.mac(&seal.mac_input()));
        serde_json::to_vec(&seal)
            .map_err(|e| Error::Internal(format!("cannot encode a trace line: {e}")))
    })?;
    Ok(count)
}

fn refuse_if_sealed(trace: &Path, lines: &[&[u8]]) -> Result<()> {
    let sealed = lines.last().is_some_and(|l| {
        serde_json::from_slice::<serde_json::Value>(l)
            .ok()
            .and_then(|v| v.get("event").and_then(|e| e.as_str()).map(|e| e == "end"))
            .unwrap_or(false)
    });
    if sealed {
        return Err(Error::Refused(format!(
            "the run of `{}` was ended (line {} seals it): nothing more may be traced in it",
            trace.display(),
            lines.len()
        )));
    }
    Ok(())
}

/// Appends one span line: exclusive lock, one write, fsync. A line without a
/// `ts` (as `Line::new` makes it: the shared crate has no clock) is stamped
/// with the time of the append. In an authenticated trace the line is bound
/// to the run (run id, agent, the sha256 of the line before it, its MAC);
/// an agent other than the run's is refused, naming the path.
pub fn append(trace: &Path, line: &Line) -> Result<()> {
    let mut line = line.clone();
    if line.ts.is_empty() {
        line.ts = crate::clock::timestamp();
    }
    append_with(trace, false, |existing| {
        if let Some(run) = run_in(trace, existing)? {
            let lines = raw_lines(existing);
            refuse_if_sealed(trace, &lines)?;
            let owner = run.begin.agent.clone();
            if line.agent.is_some() && line.agent != owner {
                return Err(Error::Refused(format!(
                    "agent `{}` may not write `{}`: the run `{}` and its workspace belong to agent `{}`",
                    line.agent.as_deref().unwrap_or(""),
                    line.path.clone().unwrap_or_else(|| format!(
                        "hex:{}",
                        line.path_hex.clone().unwrap_or_default()
                    )),
                    run.begin.run,
                    owner.as_deref().unwrap_or("")
                )));
            }
            line.agent = owner;
            line.run = Some(run.begin.run.clone());
            line.prev = Some(line_sha256(lines.last().copied().unwrap_or_default()));
            line.mac = None;
            line.mac = Some(run.key.mac(&line.mac_input()));
        } else {
            line.run = None;
            line.prev = None;
            line.mac = None;
        }
        serde_json::to_vec(&line)
            .map_err(|e| Error::Internal(format!("cannot encode a trace line: {e}")))
    })
}

/// Parses a whole trace read from `path`; a malformed line is an error
/// naming the file and the line's number. The chain of an authenticated
/// trace is checked, its MACs are not: see [`verify`].
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Span>> {
    agent_ledger_trace::parse(bytes).map_err(|e| Error::data(path, e.to_string()))
}

/// How a trace was authenticated.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Authenticated {
    pub run: String,
    pub agent: String,
    pub key_sha256: String,
    pub workspace: String,
    pub base: String,
    /// The workspace's git directory when the run began.
    pub git_dir: String,
    /// Whether an end line seals the trace (`trace end`).
    pub sealed: bool,
    /// Lines in the trace, begin and end lines included.
    pub lines: usize,
}

/// A trace whose every line verified.
#[derive(Debug)]
pub struct Verified {
    pub spans: Vec<Span>,
    /// `None`: the trace has no begin line (unauthenticated).
    pub auth: Option<Authenticated>,
}

/// A trace that does not verify: the line (0: the trace as a whole) and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Forged {
    pub line: usize,
    pub reason: String,
}

impl std::fmt::Display for Forged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.reason)
        } else {
            write!(f, "line {}: {}", self.line, self.reason)
        }
    }
}

/// Parses and verifies a trace. `key`: the key file (`--trace-key`), else
/// `TRACE.key` when it exists. A trace with a begin line needs its key, and
/// every line's chain link and MAC must verify; a trace without one is
/// unauthenticated, unless a key is there (then its begin line was removed
/// or the whole trace replaced: forged). `pin`: the key's sha256 as `trace
/// begin` printed it (`--trace-key-sha256`), kept where the agent cannot
/// write: a trace begun with another key, or with none, is forged, since
/// whoever can write the trace's directory can replace the trace and its key
/// together. A malformed line that is not a forgery is an error (exit 65).
pub fn verify(
    trace: &Path,
    bytes: &[u8],
    key: Option<&Path>,
    pin: Option<&str>,
) -> Result<std::result::Result<Verified, Forged>> {
    let parsed = match agent_ledger_trace::parse_trace(bytes) {
        Ok(t) => t,
        Err(e) if e.is_forgery() => {
            return Ok(Err(Forged {
                line: e.line,
                reason: e.reason.to_string(),
            }));
        }
        Err(e) => return Err(Error::data(trace, e.to_string())),
    };
    let default = key_path(trace);
    let key_file = match key {
        Some(k) => Some(k.to_path_buf()),
        None if fd_key().is_some() => Some(PathBuf::from(format!("<{KEY_FD_ENV}>"))),
        None => default.exists().then_some(default),
    };
    let Some(chain) = parsed.chain else {
        if let Some(pin) = pin {
            return Ok(Err(Forged {
                line: 1,
                reason: format!(
                    "forged: the run's key was pinned (sha256 {pin}) but the trace has no begin line: the trace was replaced or its begin line removed"
                ),
            }));
        }
        if let Some(k) = key_file {
            return Ok(Err(Forged {
                line: 1,
                reason: format!(
                    "forged: the run key `{}` is there but the trace has no begin line: the trace was replaced or its begin line removed",
                    k.display()
                ),
            }));
        }
        return Ok(Ok(Verified {
            spans: parsed.spans,
            auth: None,
        }));
    };
    let begin = &chain.begin;
    if let Some(pin) = pin
        && begin.key_sha256.as_deref() != Some(pin)
    {
        return Ok(Err(Forged {
            line: 1,
            reason: format!(
                "forged: the begin line names key sha256 {}, but the run's key was pinned as sha256 {pin}: the trace and its key were replaced",
                begin.key_sha256.as_deref().unwrap_or("none")
            ),
        }));
    }
    let Some(key_file) = key_file else {
        return Err(Error::data(
            trace,
            format!(
                "the trace was begun with a key (sha256 {}) but its key `{}` is not there: pass `--trace-key FILE`, or the descriptor holding it in {KEY_FD_ENV}",
                begin.key_sha256.as_deref().unwrap_or(""),
                key_path(trace).display()
            ),
        ));
    };
    let key = match (key, fd_key()) {
        (None, Some(k)) => k.clone(),
        _ => Key::read(&key_file)?,
    };
    if Some(key.sha256()) != begin.key_sha256 {
        return Ok(Err(Forged {
            line: 1,
            reason: format!(
                "forged: the begin line names key sha256 {}, the key `{}` has sha256 {}: the trace belongs to another run or its begin line was replaced",
                begin.key_sha256.as_deref().unwrap_or(""),
                key_file.display(),
                key.sha256()
            ),
        }));
    }
    if let Err(e) = chain.check_macs(|input, mac| key.verifies(input, mac)) {
        return Ok(Err(Forged {
            line: e.line,
            reason: e.reason.to_string(),
        }));
    }
    Ok(Ok(Verified {
        spans: parsed.spans,
        auth: Some(Authenticated {
            run: begin.run.clone(),
            agent: begin.agent.clone().unwrap_or_default(),
            key_sha256: key.sha256(),
            workspace: begin.workspace.clone().unwrap_or_default(),
            base: begin.base.clone().unwrap_or_default(),
            git_dir: begin.git_dir.clone().unwrap_or_default(),
            sealed: chain.end.is_some(),
            lines: chain.lines(),
        }),
    }))
}

/// Refuses to judge a begun run anywhere but in its own workspace, through
/// the git directory it began with, at the revision it began at: a
/// workspace whose `.git` was rewritten to point at another git directory,
/// or whose HEAD was moved to a commit holding the agent's changes, would
/// show a clean tree.
pub fn check_workspace(
    root: &Path,
    workspace: &str,
    git_dir: &str,
    base: &str,
) -> Result<crate::git::Repo> {
    let repo = crate::git::Repo::open(root)?;
    let same = |a: &Path, b: &str| {
        a.canonicalize()
            .ok()
            .zip(Path::new(b).canonicalize().ok())
            .is_some_and(|(a, b)| a == b)
    };
    if !same(&repo.root, workspace) {
        return Err(Error::Usage(format!(
            "the trace's run works in `{workspace}`, not in `{}`",
            repo.root.display()
        )));
    }
    if !same(repo.git_dir(), git_dir) {
        return Err(Error::Refused(format!(
            "the workspace `{workspace}` now takes its git directory from `{}`, but the run began with `{git_dir}`: its `.git` was replaced",
            repo.git_dir().display()
        )));
    }
    let head = repo.head().unwrap_or("no commit");
    if head != base {
        return Err(Error::Refused(format!(
            "the workspace `{workspace}` is at {head}, but the run began at {base}: HEAD was moved behind the adapter"
        )));
    }
    Ok(repo)
}

/// A repository-relative path (see `agent_ledger_trace::check_relative`),
/// or why not.
pub fn check_relative(p: &[u8]) -> std::result::Result<(), String> {
    agent_ledger_trace::check_relative(p).map_err(|e| e.to_string())
}
