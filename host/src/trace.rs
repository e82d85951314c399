//! The tool-call trace, host side: appending lines to the file, span ids and
//! timestamps. The line format, the parse into spans and the rules that judge
//! them live in `agent-ledger-trace`, shared with the `span_bijection` guest
//! component; this module re-exports them so there is one trace API.
//!
//! Appends take an exclusive lock on the file and write each line with one
//! `write` call, then sync, so concurrent writers never tear a line.

use crate::exit::{Error, Result};
pub use agent_ledger_trace::{Event, Line, Op, SCHEMA, Span, Status};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

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

/// Appends one line: exclusive lock, one write, fsync. A line without a
/// `ts` (as `Line::new` makes it: the shared crate has no clock) is stamped
/// with the time of the append.
pub fn append(trace: &Path, line: &Line) -> Result<()> {
    let stamped;
    let line = if line.ts.is_empty() {
        stamped = Line {
            ts: crate::clock::timestamp(),
            ..line.clone()
        };
        &stamped
    } else {
        line
    };
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

/// Parses a whole trace read from `path`; a malformed line is an error
/// naming the file and the line's number.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Span>> {
    agent_ledger_trace::parse(bytes).map_err(|e| Error::data(path, e.to_string()))
}

/// A repository-relative path (see `agent_ledger_trace::check_relative`),
/// or why not.
pub fn check_relative(p: &[u8]) -> std::result::Result<(), String> {
    agent_ledger_trace::check_relative(p).map_err(|e| e.to_string())
}
