//! A whole trace into spans. A malformed line is an error naming its
//! 1-based number: nothing is guessed, skipped or repaired, because every
//! leniency here is a way to dress an untraced change as a traced one.

use crate::line::{Event, Line, Op, SCHEMA, SCHEMAS_READ, Seal, SealEvent, Status};
use sha2::{Digest, Sha256};
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
    /// The agent the open line names (schema 2), if any.
    pub agent: Option<String>,
    /// The open line's `ts` and `before`.
    pub opened_at: String,
    pub before: Option<String>,
    /// The close line; its op, path and agent are the open line's.
    pub close: Option<Line>,
}

/// A whole trace: its spans and, when line 1 is a begin line, its chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    pub spans: Vec<Span>,
    /// `None`: no begin line, so nothing binds the lines together (an
    /// unauthenticated trace, judged as schema 1 traces always were).
    pub chain: Option<Chain>,
}

/// The chain of an authenticated trace, already checked: every line names
/// the begin line's run, carries a MAC, and its `prev` is the sha256 of the
/// line before it. The MACs are for the caller to check with the key
/// ([`Chain::check_macs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    pub begin: Seal,
    /// 1-based number of the end line; `None` while the run is not sealed.
    pub end: Option<usize>,
    /// Every line: its number, what its MAC covers, and the MAC (hex).
    pub signed: Vec<Signed>,
    /// sha256 (hex) of the last line: the `prev` of the next one.
    pub last: String,
}

/// One line of an authenticated trace, for its MAC check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// 1-based line number.
    pub line: usize,
    /// The bytes the MAC covers.
    pub input: Vec<u8>,
    /// The MAC the line carries (hex).
    pub mac: String,
}

impl Chain {
    /// Checks every line's MAC with `verify(input, mac_hex)`; the first line
    /// whose MAC does not verify is a [`Malformed::Mac`] error naming it.
    pub fn check_macs(&self, verify: impl Fn(&[u8], &str) -> bool) -> Result<(), ParseError> {
        for s in &self.signed {
            if !verify(&s.input, &s.mac) {
                return Err(ParseError {
                    line: s.line,
                    reason: Malformed::Mac,
                });
            }
        }
        Ok(())
    }

    /// The number of lines, the end line included.
    pub fn lines(&self) -> usize {
        self.signed.len()
    }
}

/// sha256 (hex) of a line's bytes: what the next line's `prev` names.
pub fn line_sha256(raw: &[u8]) -> String {
    hex::encode(Sha256::digest(raw))
}

/// Why a trace does not parse: the line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub reason: Malformed,
}

impl ParseError {
    /// Whether the line breaks the authentication of the trace (a forged,
    /// edited, removed, reordered or foreign line) rather than its shape.
    pub fn is_forgery(&self) -> bool {
        matches!(
            self.reason,
            Malformed::BeginNotFirst
                | Malformed::NoBegin
                | Malformed::Unsigned
                | Malformed::OtherRun { .. }
                | Malformed::Chain
                | Malformed::AfterEnd(_)
                | Malformed::EmptyLine
                | Malformed::EndCount { .. }
                | Malformed::Mac
        )
    }
}

/// What is wrong with a trace line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    /// Not JSON, or not a [`Line`] (a field missing, unknown or repeated).
    NotALine(String),
    /// A schema this build does not read.
    Schema(u32),
    /// A schema 1 line with a field schema 2 added.
    NotInSchema1(&'static str),
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
    /// A close line whose op, path or agent differs from its open line's.
    CloseMismatch(String),
    /// A begin or end line without a field it needs, or with one it must
    /// not have.
    SealField(&'static str),
    /// A begin line that is not line 1.
    BeginNotFirst,
    /// A line with `run`, `prev` or `mac`, or an end line, in a trace with
    /// no begin line.
    NoBegin,
    /// A line without `run`, `prev` or `mac` in an authenticated trace.
    Unsigned,
    /// A line of another run.
    OtherRun {
        found: String,
        run: String,
    },
    /// `prev` is not the sha256 of the line before.
    Chain,
    /// A line after the end line (its number).
    AfterEnd(usize),
    /// An empty line inside an authenticated trace.
    EmptyLine,
    /// An end line whose `lines` is not the number of lines before it.
    EndCount {
        said: u64,
        actual: usize,
    },
    /// The line's MAC does not verify under the run's key.
    Mac,
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
                "field `schema` is {s}; this build reads trace schemas 1 and {SCHEMA}"
            ),
            Malformed::NotInSchema1(field) => {
                write!(f, "field `{field}` is not in trace schema 1")
            }
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
                "span `{id}` closes with another op, path or agent than it opened with"
            ),
            Malformed::SealField(field) => write!(
                f,
                "field `{field}` is missing or does not belong on this begin or end line"
            ),
            Malformed::BeginNotFirst => f.write_str(
                "forged: a begin line that is not line 1 (a second run begun inside this one)",
            ),
            Malformed::NoBegin => f.write_str(
                "forged: a line of an authenticated trace (with `run`, `prev` or `mac`, or an end line) in a trace whose line 1 is not a begin line: its begin line was removed, or the line comes from another run",
            ),
            Malformed::Unsigned => f.write_str(
                "forged: the trace was begun with a key but this line has no `run`, `prev` or `mac`: it was not written by the adapter",
            ),
            Malformed::OtherRun { found, run } => write!(
                f,
                "forged: the line belongs to run `{found}`, not to this trace's run `{run}`"
            ),
            Malformed::Chain => f.write_str(
                "forged: field `prev` is not the sha256 of the line before it: a line was removed, reordered, inserted or edited",
            ),
            Malformed::AfterEnd(n) => write!(
                f,
                "forged: the line follows the end line (line {n}) that sealed the run"
            ),
            Malformed::EmptyLine => f.write_str("forged: an empty line inside an authenticated trace"),
            Malformed::EndCount { said, actual } => write!(
                f,
                "forged: the end line says {said} line(s) came before it, there are {actual}"
            ),
            Malformed::Mac => f.write_str(
                "forged: its MAC does not verify under this run's key (the line was written or edited by hand, or comes from another run)",
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole trace into its spans, in the order they opened (see
/// [`parse_trace`]).
pub fn parse(bytes: &[u8]) -> Result<Vec<Span>, ParseError> {
    parse_trace(bytes).map(|t| t.spans)
}

/// The fields schema 2 added to a span line, for a schema 1 line.
fn schema2_field(line: &Line) -> Option<&'static str> {
    if line.agent.is_some() {
        Some("agent")
    } else if line.run.is_some() {
        Some("run")
    } else if line.prev.is_some() {
        Some("prev")
    } else if line.mac.is_some() {
        Some("mac")
    } else {
        None
    }
}

/// One parsed line.
enum Parsed {
    Span(Line),
    Seal(Seal),
}

fn parse_line(raw: &[u8]) -> Result<Parsed, Malformed> {
    // A span line, the usual one, straight into its type; anything else (a
    // begin or end line, a malformed one) takes the path below, which
    // decides and words it as it always has.
    if let Ok(line) = serde_json::from_slice::<Line>(raw) {
        return Ok(Parsed::Span(line));
    }
    let value: serde_json::Value =
        serde_json::from_slice(raw).map_err(|e| Malformed::NotALine(e.to_string()))?;
    // `Value` keeps the last of two equal keys (the typed read above
    // refuses them): such a line is refused here too, not read one way.
    serde_json::from_slice::<crate::UniqueKeys>(raw)
        .map_err(|e| Malformed::NotALine(format!("ambiguous JSON: {e}")))?;
    let seal = matches!(
        value.get("event").and_then(|e| e.as_str()),
        Some("begin" | "end")
    );
    let parsed = if seal {
        Parsed::Seal(serde_json::from_value(value).map_err(|e| Malformed::NotALine(e.to_string()))?)
    } else {
        Parsed::Span(serde_json::from_value(value).map_err(|e| Malformed::NotALine(e.to_string()))?)
    };
    Ok(parsed)
}

/// Checks a begin or end line's own fields.
fn check_seal(seal: &Seal) -> Result<(), Malformed> {
    if seal.schema != SCHEMA {
        return Err(Malformed::Schema(seal.schema));
    }
    let begin = seal.event == SealEvent::Begin;
    for (field, present, wanted) in [
        ("agent", seal.agent.is_some(), begin),
        ("key_sha256", seal.key_sha256.is_some(), begin),
        ("workspace", seal.workspace.is_some(), begin),
        ("base", seal.base.is_some(), begin),
        ("git_dir", seal.git_dir.is_some(), begin),
        ("lines", seal.lines.is_some(), !begin),
        ("prev", seal.prev.is_some(), !begin),
        ("mac", seal.mac.is_some(), true),
    ] {
        if present != wanted {
            return Err(Malformed::SealField(field));
        }
    }
    Ok(())
}

/// Parses a whole trace (JSONL). In a trace without a begin line, empty
/// lines are skipped; in an authenticated one (line 1 is a begin line) every
/// line must chain to the one before it (see [`Chain`]).
pub fn parse_trace(bytes: &[u8]) -> Result<Trace, ParseError> {
    let mut spans: Vec<Span> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut chain: Option<Chain> = None;
    let mut raw_lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // The newline that ends the last line leaves an empty last piece.
    if raw_lines.last().is_some_and(|l| l.is_empty()) {
        raw_lines.pop();
    }
    for (n, raw) in raw_lines.into_iter().enumerate() {
        let bad = |reason| ParseError {
            line: n + 1,
            reason,
        };
        if let Some(c) = &chain
            && let Some(end) = c.end
        {
            return Err(bad(Malformed::AfterEnd(end)));
        }
        if raw.is_empty() {
            if chain.is_some() {
                return Err(bad(Malformed::EmptyLine));
            }
            continue;
        }
        let parsed = parse_line(raw).map_err(bad)?;
        // The chain: line 1 a begin line, every other line bound to it.
        let (schema, run, prev, mac) = match &parsed {
            Parsed::Span(l) => (l.schema, &l.run, &l.prev, &l.mac),
            Parsed::Seal(s) => {
                check_seal(s).map_err(bad)?;
                (s.schema, &Some(s.run.clone()), &s.prev, &s.mac)
            }
        };
        if !SCHEMAS_READ.contains(&schema) {
            return Err(bad(Malformed::Schema(schema)));
        }
        match (&parsed, &mut chain) {
            (Parsed::Seal(s), None) if s.event == SealEvent::Begin => {
                if n != 0 {
                    return Err(bad(Malformed::BeginNotFirst));
                }
                chain = Some(Chain {
                    begin: s.clone(),
                    end: None,
                    signed: Vec::new(),
                    last: String::new(),
                });
            }
            (Parsed::Seal(s), Some(_)) if s.event == SealEvent::Begin => {
                return Err(bad(Malformed::BeginNotFirst));
            }
            (Parsed::Seal(_), None) => return Err(bad(Malformed::NoBegin)),
            (Parsed::Span(_), None) => {
                if run.is_some() || prev.is_some() || mac.is_some() {
                    return Err(bad(Malformed::NoBegin));
                }
            }
            (_, Some(c)) => {
                let (Some(run), Some(prev), Some(_)) = (run, prev, mac) else {
                    return Err(bad(Malformed::Unsigned));
                };
                if *run != c.begin.run {
                    return Err(bad(Malformed::OtherRun {
                        found: run.clone(),
                        run: c.begin.run.clone(),
                    }));
                }
                if *prev != c.last {
                    return Err(bad(Malformed::Chain));
                }
            }
        }
        if let Some(c) = &mut chain {
            if schema != SCHEMA {
                return Err(bad(Malformed::Unsigned));
            }
            // What the MAC covers, made only for a signed line.
            let input = match &parsed {
                Parsed::Span(l) => l.mac_input(),
                Parsed::Seal(s) => s.mac_input(),
            };
            c.signed.push(Signed {
                line: n + 1,
                input,
                mac: mac.clone().unwrap_or_default(),
            });
            c.last = line_sha256(raw);
        }
        let line = match parsed {
            Parsed::Seal(s) => {
                if s.event == SealEvent::End
                    && let Some(c) = &mut chain
                {
                    let said = s.lines.unwrap_or_default();
                    if said != n as u64 {
                        return Err(bad(Malformed::EndCount { said, actual: n }));
                    }
                    c.end = Some(n + 1);
                }
                continue;
            }
            Parsed::Span(line) => line,
        };
        if line.schema == 1
            && let Some(field) = schema2_field(&line)
        {
            return Err(bad(Malformed::NotInSchema1(field)));
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
                    agent: line.agent,
                    opened_at: line.ts,
                    before: line.before,
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
                if span.op != line.op || span.path != path || span.agent != line.agent {
                    return Err(bad(Malformed::CloseMismatch(line.span)));
                }
                span.close = Some(line);
            }
        }
    }
    Ok(Trace { spans, chain })
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
