//! A whole trace into spans. A malformed line is an error naming its
//! 1-based number: nothing is guessed, skipped or repaired, because every
//! leniency here is a way to dress an untraced change as a traced one.

use crate::line::{Event, Line, Op, SCHEMA, Status};
use std::collections::HashMap;
use std::fmt;

/// A span: its open line and, once closed, its close line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub id: String,
    pub op: Op,
    /// The path's exact bytes, checked by [`check_relative`].
    pub path: Vec<u8>,
    /// 1-based number of the open line.
    pub open_line: usize,
    /// The close line; its op and path are the open line's.
    pub close: Option<Line>,
}

/// Why a trace does not parse: the line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub reason: Malformed,
}

/// What is wrong with a trace line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    /// Not JSON, or not a [`Line`] (a field missing, unknown or repeated).
    NotALine(String),
    /// A schema this build does not read.
    Schema(u32),
    /// Both or neither of `path` and `path_hex`.
    PathFields,
    /// `path_hex` is not hex.
    PathHex,
    Path(PathError),
    /// An open line whose status is not `open`.
    OpenStatus,
    /// The span id was opened before.
    OpenedTwice(String),
    /// A close line for a span id never opened (before this line).
    NeverOpened(String),
    /// The span id was closed before.
    ClosedTwice(String),
    /// A close line whose status is `open`.
    CloseStatus,
    /// A close line whose op or path differs from its open line's.
    CloseMismatch(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::NotALine(e) => write!(f, "not a trace line: {e}"),
            Malformed::Schema(s) => write!(
                f,
                "field `schema` is {s}; this build reads trace schema {SCHEMA}"
            ),
            Malformed::PathFields => f.write_str("needs exactly one of `path` and `path_hex`"),
            Malformed::PathHex => f.write_str("field `path_hex` is not hex"),
            Malformed::Path(e) => e.fmt(f),
            Malformed::OpenStatus => f.write_str("an open line must have status `open`"),
            Malformed::OpenedTwice(id) => write!(f, "span `{id}` is opened twice"),
            Malformed::NeverOpened(id) => write!(f, "span `{id}` closes but never opened"),
            Malformed::ClosedTwice(id) => write!(f, "span `{id}` is closed twice"),
            Malformed::CloseStatus => {
                f.write_str("a close line must have status `closed` or `error`")
            }
            Malformed::CloseMismatch(id) => write!(
                f,
                "span `{id}` closes with another op or path than it opened with"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole trace (JSONL; empty lines are skipped) into its spans, in
/// the order they opened.
pub fn parse(bytes: &[u8]) -> Result<Vec<Span>, ParseError> {
    let mut spans: Vec<Span> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (n, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        if raw.is_empty() {
            continue;
        }
        let bad = |reason| ParseError {
            line: n + 1,
            reason,
        };
        let line: Line =
            serde_json::from_slice(raw).map_err(|e| bad(Malformed::NotALine(e.to_string())))?;
        if line.schema != SCHEMA {
            return Err(bad(Malformed::Schema(line.schema)));
        }
        let path = match (&line.path, &line.path_hex) {
            (Some(p), None) => p.as_bytes().to_vec(),
            (None, Some(h)) => hex::decode(h).map_err(|_| bad(Malformed::PathHex))?,
            _ => return Err(bad(Malformed::PathFields)),
        };
        check_relative(&path).map_err(|e| bad(Malformed::Path(e)))?;
        match line.event {
            Event::Open => {
                if line.status != Status::Open {
                    return Err(bad(Malformed::OpenStatus));
                }
                if index.insert(line.span.clone(), spans.len()).is_some() {
                    return Err(bad(Malformed::OpenedTwice(line.span)));
                }
                spans.push(Span {
                    id: line.span,
                    op: line.op,
                    path,
                    open_line: n + 1,
                    close: None,
                });
            }
            Event::Close => {
                let Some(&i) = index.get(&line.span) else {
                    return Err(bad(Malformed::NeverOpened(line.span)));
                };
                let span = &mut spans[i];
                if span.close.is_some() {
                    return Err(bad(Malformed::ClosedTwice(line.span)));
                }
                if line.status == Status::Open {
                    return Err(bad(Malformed::CloseStatus));
                }
                if span.op != line.op || span.path != path {
                    return Err(bad(Malformed::CloseMismatch(line.span)));
                }
                span.close = Some(line);
            }
        }
    }
    Ok(spans)
}

/// Why a path is not repository-relative; each names the path as shown
/// (lossy UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// Empty or absolute.
    NotRelative(String),
    /// An empty, `.` or `..` component.
    BadComponent(String),
    /// A `.git` component, in any case.
    InsideGit(String),
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::NotRelative(p) => {
                write!(f, "path `{p}` is not a repository-relative path")
            }
            PathError::BadComponent(p) => {
                write!(f, "path `{p}` has an empty, `.` or `..` component")
            }
            PathError::InsideGit(p) => write!(f, "path `{p}` is inside `.git`"),
        }
    }
}

impl std::error::Error for PathError {}

/// A repository-relative path: not empty, not absolute, no empty, `.` or
/// `..` components, not inside `.git`.
pub fn check_relative(p: &[u8]) -> Result<(), PathError> {
    let shown = || String::from_utf8_lossy(p).into_owned();
    if p.is_empty() || p.starts_with(b"/") {
        return Err(PathError::NotRelative(shown()));
    }
    for c in p.split(|&b| b == b'/') {
        if c.is_empty() || c == b"." || c == b".." {
            return Err(PathError::BadComponent(shown()));
        }
        if c.eq_ignore_ascii_case(b".git") {
            return Err(PathError::InsideGit(shown()));
        }
    }
    Ok(())
}
