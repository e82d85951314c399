//! The tool-call trace: JSONL, one line when a span opens and one when it
//! closes, appended and never rewritten, so a crash leaves an open span
//! rather than a corrupt file.
//!
//! Line format (schema 1), every field documented in `docs` of the README:
//!
//! ```json
//! {"schema":1,"span":"…","event":"open","op":"write","path":"src/a.rs","before":"<sha256>|null","after":null,"status":"open","error":null,"ts":"2026-11-30T10:00:00.123456789Z"}
//! {"schema":1,"span":"…","event":"close","op":"write","path":"src/a.rs","before":"…","after":"<sha256>","status":"closed","error":null,"ts":"…"}
//! ```
//!
//! A path that is not UTF-8 is written as `path_hex` (its bytes in hex)
//! instead of `path`. Appends take an exclusive lock on the file and write
//! each line with one `write` call, then sync, so concurrent writers never
//! tear a line.

use crate::exit::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Write,
    Delete,
    Read,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Closed,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    Open,
    Close,
}

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// Trace line schema version.
    pub schema: u32,
    /// Span id: unique within the trace; an open and a close line share it.
    pub span: String,
    pub event: Event,
    pub op: Op,
    /// Repository-relative POSIX path, when it is UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The path's bytes in hex, when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
    /// sha256 of the file before the call; null when it did not exist.
    pub before: Option<String>,
    /// sha256 of the file after the call; null when absent or still open.
    pub after: Option<String>,
    pub status: Status,
    /// Why the call failed, for status `error`.
    pub error: Option<String>,
    /// When the line was written, RFC 3339 UTC.
    pub ts: String,
}

impl Line {
    pub fn new(span: &str, event: Event, op: Op, path: &[u8]) -> Line {
        let (utf8, hex) = match std::str::from_utf8(path) {
            Ok(s) => (Some(s.to_string()), None),
            Err(_) => (None, Some(hex::encode(path))),
        };
        Line {
            schema: SCHEMA,
            span: span.to_string(),
            event,
            op,
            path: utf8,
            path_hex: hex,
            before: None,
            after: None,
            status: if event == Event::Open {
                Status::Open
            } else {
                Status::Closed
            },
            error: None,
            ts: now(),
        }
    }

    /// The path's exact bytes.
    pub fn path_bytes(&self) -> Option<Vec<u8>> {
        match (&self.path, &self.path_hex) {
            (Some(p), None) => Some(p.as_bytes().to_vec()),
            (None, Some(h)) => hex::decode(h).ok(),
            _ => None,
        }
    }
}

/// The current time as trace lines record it (RFC 3339 UTC).
pub fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A span id unique across processes: pid, time and a counter, hashed.
pub fn new_span_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    crate::digest::sha256_hex(seed.as_bytes())[..16].to_string()
}

/// Appends one line: exclusive lock, one write, fsync.
pub fn append(trace: &Path, line: &Line) -> Result<()> {
    let mut text = serde_json::to_string(line)
        .map_err(|e| Error::Internal(format!("cannot encode a trace line: {e}")))?;
    text.push('\n');
    if let Some(dir) = trace.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(trace)
        .map_err(|e| Error::write(trace, e))?;
    file.lock().map_err(|e| Error::write(trace, e))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_data());
    let _ = file.unlock();
    written.map_err(|e| Error::write(trace, e))
}

/// A span: its open line and, once closed, its close line.
#[derive(Debug, Clone)]
pub struct Span {
    pub id: String,
    pub op: Op,
    pub path: Vec<u8>,
    pub open_line: usize,
    pub close: Option<Line>,
}

/// Parses a whole trace. A malformed line is an error naming its number:
/// nothing is guessed.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Span>> {
    let mut spans: Vec<Span> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for (n, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let lineno = n + 1;
        if raw.is_empty() {
            continue;
        }
        let bad = |msg: String| Error::data(path, format!("line {lineno}: {msg}"));
        let line: Line =
            serde_json::from_slice(raw).map_err(|e| bad(format!("not a trace line: {e}")))?;
        if line.schema != SCHEMA {
            return Err(bad(format!(
                "field `schema` is {}; this build reads trace schema {SCHEMA}",
                line.schema
            )));
        }
        let p = line
            .path_bytes()
            .ok_or_else(|| bad("needs exactly one of `path` and `path_hex`".into()))?;
        check_relative(&p).map_err(bad)?;
        match line.event {
            Event::Open => {
                if line.status != Status::Open {
                    return Err(bad("an open line must have status `open`".into()));
                }
                if index.insert(line.span.clone(), spans.len()).is_some() {
                    return Err(bad(format!("span `{}` is opened twice", line.span)));
                }
                spans.push(Span {
                    id: line.span.clone(),
                    op: line.op,
                    path: p,
                    open_line: lineno,
                    close: None,
                });
            }
            Event::Close => {
                let Some(&i) = index.get(&line.span) else {
                    return Err(bad(format!("span `{}` closes but never opened", line.span)));
                };
                let span = &mut spans[i];
                if span.close.is_some() {
                    return Err(bad(format!("span `{}` is closed twice", line.span)));
                }
                if line.status == Status::Open {
                    return Err(bad(
                        "a close line must have status `closed` or `error`".into()
                    ));
                }
                if span.op != line.op || span.path != p {
                    return Err(bad(format!(
                        "span `{}` closes with another op or path than it opened with",
                        line.span
                    )));
                }
                span.close = Some(line);
            }
        }
    }
    Ok(spans)
}

/// A repository-relative path: not empty, not absolute, no `.` or `..`
/// components, not inside `.git`.
pub fn check_relative(p: &[u8]) -> std::result::Result<(), String> {
    let shown = String::from_utf8_lossy(p);
    if p.is_empty() || p.starts_with(b"/") {
        return Err(format!("path `{shown}` is not a repository-relative path"));
    }
    for c in p.split(|&b| b == b'/') {
        if c.is_empty() || c == b"." || c == b".." {
            return Err(format!(
                "path `{shown}` has an empty, `.` or `..` component"
            ));
        }
        if c.eq_ignore_ascii_case(b".git") {
            return Err(format!("path `{shown}` is inside `.git`"));
        }
    }
    Ok(())
}
