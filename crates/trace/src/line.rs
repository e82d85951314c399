//! One line of a trace (schema 1):
//!
//! ```json
//! {"schema":1,"span":"…","event":"open","op":"write","path":"src/a.rs","before":"<sha256>|null","after":null,"status":"open","error":null,"ts":"2026-11-30T10:00:00.123456789Z"}
//! {"schema":1,"span":"…","event":"close","op":"write","path":"src/a.rs","before":"…","after":"<sha256>","status":"closed","error":null,"ts":"…"}
//! ```
//!
//! A path that is not UTF-8 is written as `path_hex` (its bytes in hex)
//! instead of `path`.

use serde::{Deserialize, Serialize};

/// The trace line schema this crate reads and writes.
pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Write,
    Delete,
    Read,
}

impl Op {
    /// The name the trace uses: `write`, `delete` or `read`.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Delete => "delete",
            Op::Read => "read",
        }
    }

    /// Whether a span of this op can own a changed path.
    pub fn mutates(self) -> bool {
        matches!(self, Op::Write | Op::Delete)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Closed,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Event {
    Open,
    Close,
}

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
    /// A line for `path`, with status `open` for an open event and `closed`
    /// for a close. `ts` is left empty: this crate has no clock, so the
    /// writer stamps the line when it appends it.
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
            status: match event {
                Event::Open => Status::Open,
                Event::Close => Status::Closed,
            },
            error: None,
            ts: String::new(),
        }
    }

    /// The path's exact bytes; `None` unless exactly one of `path` and
    /// `path_hex` is set and `path_hex` is hex.
    pub fn path_bytes(&self) -> Option<Vec<u8>> {
        match (&self.path, &self.path_hex) {
            (Some(p), None) => Some(p.as_bytes().to_vec()),
            (None, Some(h)) => hex::decode(h).ok(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_utf8_path_round_trips_through_path_hex() {
        let line = Line::new("s", Event::Open, Op::Write, b"bad\xffbyte");
        assert_eq!(line.path, None);
        assert_eq!(line.path_hex.as_deref(), Some("626164ff62797465"));
        let text = serde_json::to_string(&line).unwrap();
        let back: Line = serde_json::from_str(&text).unwrap();
        assert_eq!(back.path_bytes().unwrap(), b"bad\xffbyte");
    }

    #[test]
    fn the_line_format_is_stable() {
        let mut line = Line::new("0123", Event::Close, Op::Delete, b"src/a.rs");
        line.before = Some("aa".into());
        line.ts = "2026-11-30T10:00:00Z".into();
        assert_eq!(
            serde_json::to_string(&line).unwrap(),
            r#"{"schema":1,"span":"0123","event":"close","op":"delete","path":"src/a.rs","before":"aa","after":null,"status":"closed","error":null,"ts":"2026-11-30T10:00:00Z"}"#
        );
    }
}
