//! One line of a trace (schema 2; schema 1 lines, without the four fields
//! schema 2 added, are still read):
//!
//! ```json
//! {"schema":2,"event":"begin","run":"…","agent":"a1","key_sha256":"…","workspace":"/abs/ws","base":"<commit>","git_dir":"/abs/repo/.git/worktrees/ws","prev":null,"ts":"…","mac":"<hmac>"}
//! {"schema":2,"span":"…","event":"open","op":"write","path":"src/a.rs","before":"<sha256>|null","after":null,"status":"open","error":null,"ts":"2026-11-30T10:00:00.123456789Z","agent":"a1","run":"…","prev":"<sha256 of the line before>","mac":"<hmac>"}
//! {"schema":2,"span":"…","event":"close","op":"write","path":"src/a.rs","before":"…","after":"<sha256>","status":"closed","error":null,"ts":"…","agent":"a1","run":"…","prev":"…","mac":"…"}
//! {"schema":2,"event":"end","run":"…","lines":3,"prev":"…","ts":"…","mac":"…"}
//! ```
//!
//! A span line ([`Line`]) opens or closes a span; a seal line ([`Seal`])
//! begins or ends an authenticated run. A path that is not UTF-8 is written
//! as `path_hex` (its bytes in hex) instead of `path`.
//!
//! In an authenticated trace (line 1 is a begin line) every line carries the
//! run id, `prev` (the sha256 of the previous line's bytes, without its
//! newline) and `mac`: HMAC-SHA256, under the run's key, of [`MAC_DOMAIN`]
//! followed by the line's JSON with `mac` left out, as [`Line::mac_input`]
//! and [`Seal::mac_input`] write it. This crate checks the chain (it needs
//! no key); the host checks the MACs with the key.

use serde::{Deserialize, Serialize};

/// The trace line schema this crate writes.
pub const SCHEMA: u32 = 2;

/// The trace line schemas this crate reads: 1 (no `agent`, `run`, `prev`,
/// `mac`, no seal lines) and 2.
pub const SCHEMAS_READ: [u32; 2] = [1, 2];

/// What a MAC covers before the line's JSON: binds the MAC to this use.
pub const MAC_DOMAIN: &[u8] = b"agent-ledger trace line v2\n";

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
    /// What the path held before the call, as [`crate::entry`] writes it
    /// (the sha256 of a plain file's bytes; `100755:` or `120000:` and the
    /// sha256 for an executable file or a symlink's target); null when it
    /// did not exist. It must be what the span before it on the path left
    /// (or the base revision's entry, for the first): see
    /// [`crate::judge`].
    pub before: Option<String>,
    /// What the path held after the call, in the same form; null when
    /// absent or still open.
    pub after: Option<String>,
    pub status: Status,
    /// Why the call failed, for status `error`.
    pub error: Option<String>,
    /// When the line was written, RFC 3339 UTC.
    pub ts: String,
    /// Schema 2: the agent that made the call (`trace begin --agent`, or
    /// `--agent` on the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Schema 2, authenticated traces: the run id of the begin line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Schema 2, authenticated traces: sha256 (hex) of the previous line's
    /// bytes, without its newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
    /// Schema 2, authenticated traces: HMAC-SHA256 (hex) under the run's key
    /// of [`MAC_DOMAIN`] and this line's JSON without `mac`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// What a MAC covers: [`MAC_DOMAIN`], then the JSON of `value` (with its
/// `mac` already left out).
fn mac_input<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = MAC_DOMAIN.to_vec();
    // Serialising a struct of strings and numbers cannot fail.
    out.extend(serde_json::to_vec(value).unwrap_or_default());
    out
}

impl Line {
    /// The bytes this line's MAC covers.
    pub fn mac_input(&self) -> Vec<u8> {
        mac_input(&Line {
            mac: None,
            ..self.clone()
        })
    }

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
            agent: None,
            run: None,
            prev: None,
            mac: None,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SealEvent {
    Begin,
    End,
}

/// A begin or end line of an authenticated trace (schema 2). `trace begin`
/// writes the begin line as line 1; `trace end` seals the run with the end
/// line, after which nothing may follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Seal {
    /// Always 2.
    pub schema: u32,
    pub event: SealEvent,
    /// The run id: every later line names it.
    pub run: String,
    /// Begin: the agent the run belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Begin: sha256 (hex) of the run's key (the key itself is never
    /// written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_sha256: Option<String>,
    /// Begin: the absolute path of the workspace the paths are relative to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Begin: the commit the workspace was made at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Begin: the absolute path of the workspace's git directory (outside
    /// the workspace): reconcile refuses a workspace whose `.git` now
    /// points elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dir: Option<String>,
    /// End: how many lines come before this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    /// sha256 (hex) of the previous line; null on the begin line.
    pub prev: Option<String>,
    /// When the line was written, RFC 3339 UTC.
    pub ts: String,
    /// HMAC-SHA256 (hex) under the run's key of [`MAC_DOMAIN`] and this
    /// line's JSON without `mac`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

impl Seal {
    /// The bytes this line's MAC covers.
    pub fn mac_input(&self) -> Vec<u8> {
        mac_input(&Seal {
            mac: None,
            ..self.clone()
        })
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
            r#"{"schema":2,"span":"0123","event":"close","op":"delete","path":"src/a.rs","before":"aa","after":null,"status":"closed","error":null,"ts":"2026-11-30T10:00:00Z"}"#
        );
    }
}
