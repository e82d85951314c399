//! The span-tree bijection: a delta (every changed path, as raw bytes; a
//! rename is its old path plus its new path) agrees with a trace when every
//! changed path is owned by a span, every owning span's path changed, and the
//! bytes now at each owned path are what its span recorded.
//!
//! A path is owned by the last span, in the order spans opened, that is a
//! closed write or delete: status `closed` (not `error`, not still open).
//! `read` spans never own a path.
//!
//! Spans on one path must chain (continuity): the first span on a path
//! records as `before` what the base revision holds there, and every later
//! one records as `before` what the span before it left (its close line's
//! `after`, for a closed or failed write or delete; a read leaves what it
//! found). A `before` that is not what the trace says was there means the
//! path changed between two tool calls, outside the trace: a [`Break`]. So
//! a span cannot adopt an untraced change by recording it as its `before`
//! (a no-op `trace exec --writes P -- true` after a shell redirect into P).
//! After a span that never closed, the next `before` is not judged (the
//! open span is a failure of its own).
//!
//! Judging is two phases so the caller can read files its own way (the host
//! hashes in parallel, the guest reads `/patched` and `/base`): [`judge`]
//! needs no I/O and returns the [`Owned`] paths and each path's first span;
//! the caller reads each entry (see [`crate::entry`]) and [`Owned::check`]
//! turns it into a [`HashMiss`] or nothing.

use crate::line::{Op, Status};
use crate::parse::Span;
use std::collections::{BTreeMap, BTreeSet};
use unicode_normalization::UnicodeNormalization;

/// What the spans and the delta say before any file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement<'a> {
    /// Spans never closed, in the order they opened.
    pub open: Vec<&'a Span>,
    /// Changed paths that no closed write/delete span owns, sorted.
    pub ghosts: Vec<&'a [u8]>,
    /// The owning span of each path the delta does not contain, sorted by
    /// path.
    pub phantoms: Vec<&'a Span>,
    /// Changed paths and their owning span, sorted by path: hash each and
    /// [`Owned::check`] it.
    pub owned: Vec<Owned<'a>>,
    /// Closed write/delete spans counted (every one, not only the owners).
    pub mutating_spans: usize,
    /// Paths in the delta.
    pub changed: usize,
    /// Groups of two or more paths (from the spans and the delta, sorted)
    /// that differ only in case or Unicode normalisation: one file on
    /// macOS and Windows, so which of them the agent wrote is ambiguous.
    pub aliases: Vec<Vec<&'a [u8]>>,
    /// When the closed write/delete spans name more than one agent (a span
    /// without an agent counts as the agent `None`): each agent and the
    /// paths its spans wrote, sorted. Empty when one agent wrote them all.
    pub agents: Vec<(Option<&'a str>, Vec<&'a [u8]>)>,
    /// The first span on each path, with the `before` it recorded as
    /// `expected`, sorted by path: [`Owned::check`] each against what the
    /// base revision holds at the path; a miss is a break in continuity.
    pub firsts: Vec<Owned<'a>>,
    /// Later spans whose `before` is not what the span before them on the
    /// same path left, in trace order.
    pub breaks: Vec<Break<'a>>,
}

/// A span whose `before` is not what the trace says the path held: the
/// path changed outside the trace between two tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break<'a> {
    pub path: &'a [u8],
    /// The span whose `before` does not chain.
    pub span: &'a Span,
    /// The span before it on the path (`None`: the base revision, when the
    /// caller reports a [`HashMiss`] of [`Judgement::firsts`] as a break).
    pub previous: Option<&'a Span>,
    /// What the previous span left there (`None`: absent).
    pub expected: Option<&'a str>,
    /// What this span found there (`None`: absent).
    pub found: Option<&'a str>,
}

/// The form two paths share when they are one file on a case-insensitive,
/// normalisation-insensitive file system: NFD, lower case, NFC (bytes that
/// are not UTF-8: ASCII lower case only).
pub fn fold(path: &[u8]) -> Vec<u8> {
    // NFD and NFC leave ASCII as it is, and its Unicode lower case is its
    // ASCII lower case: the usual path skips both passes.
    if path.is_ascii() {
        return path.to_ascii_lowercase();
    }
    match std::str::from_utf8(path) {
        Ok(s) => fold_unicode(s),
        Err(_) => path.to_ascii_lowercase(),
    }
}

fn fold_unicode(s: &str) -> Vec<u8> {
    s.nfd()
        .collect::<String>()
        .to_lowercase()
        .nfc()
        .collect::<String>()
        .into_bytes()
}

#[cfg(test)]
#[test]
fn ascii_folds_as_unicode_does() {
    let every: String = (0u8..128).map(char::from).collect();
    assert_eq!(fold(every.as_bytes()), fold_unicode(&every));
    for s in ["Src/Main.RS", "README", "a-B_c.D", ""] {
        assert_eq!(fold(s.as_bytes()), fold_unicode(s), "{s}");
    }
}

/// Groups of distinct paths that [`fold`] to one.
fn aliases<'a>(paths: impl Iterator<Item = &'a [u8]>) -> Vec<Vec<&'a [u8]>> {
    let mut by_fold: BTreeMap<Vec<u8>, BTreeSet<&'a [u8]>> = BTreeMap::new();
    for p in paths {
        by_fold.entry(fold(p)).or_default().insert(p);
    }
    by_fold
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|g| g.into_iter().collect())
        .collect()
}

/// A changed path, the span that owns it and what it must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owned<'a> {
    pub path: &'a [u8],
    pub span: &'a Span,
    /// The sha256 the path must hold; `None`: it must be absent (always, for
    /// a delete).
    pub expected: Option<&'a str>,
}

/// An owned path that does not hold what its span recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashMiss<'a> {
    pub path: &'a [u8],
    pub span: &'a Span,
    /// What the span says should be there (`None`: absent).
    pub expected: Option<&'a str>,
    /// What is there (`None`: absent).
    pub actual: Option<String>,
}

impl<'a> Owned<'a> {
    /// Judges the sha256 of what is at the path now (`None`: absent).
    pub fn check(&self, actual: Option<String>) -> Option<HashMiss<'a>> {
        (actual.as_deref() != self.expected).then_some(HashMiss {
            path: self.path,
            span: self.span,
            expected: self.expected,
            actual,
        })
    }
}

/// Judges `spans` (as [`parse`](crate::parse) returns them) against `delta`.
pub fn judge<'a>(spans: &'a [Span], delta: &'a BTreeSet<Vec<u8>>) -> Judgement<'a> {
    let mut open = Vec::new();
    let mut mutating_spans = 0;
    let mut owner: BTreeMap<&[u8], &Span> = BTreeMap::new();
    let mut by_agent: BTreeMap<Option<&str>, BTreeSet<&[u8]>> = BTreeMap::new();
    for span in spans {
        match &span.close {
            None => open.push(span),
            Some(close) if close.status == Status::Closed && span.op.mutates() => {
                owner.insert(&span.path, span);
                by_agent
                    .entry(span.agent.as_deref())
                    .or_default()
                    .insert(&span.path);
                mutating_spans += 1;
            }
            Some(_) => {}
        }
    }
    let ghosts = delta
        .iter()
        .map(Vec::as_slice)
        .filter(|p| !owner.contains_key(p))
        .collect();
    let mut phantoms = Vec::new();
    let mut owned = Vec::new();
    for (path, span) in owner {
        if !delta.contains(path) {
            phantoms.push(span);
            continue;
        }
        let expected = match span.op {
            Op::Delete => None,
            _ => span.close.as_ref().and_then(|c| c.after.as_deref()),
        };
        owned.push(Owned {
            path,
            span,
            expected,
        });
    }
    let agents = if by_agent.len() > 1 {
        by_agent
            .into_iter()
            .map(|(a, paths)| (a, paths.into_iter().collect()))
            .collect()
    } else {
        Vec::new()
    };
    let (firsts, breaks) = continuity(spans);
    let aliases = aliases(
        spans
            .iter()
            .map(|s| s.path.as_slice())
            .chain(delta.iter().map(Vec::as_slice)),
    );
    Judgement {
        open,
        ghosts,
        phantoms,
        owned,
        mutating_spans,
        changed: delta.len(),
        aliases,
        agents,
        firsts,
        breaks,
    }
}

/// What a path holds after `span`, as the trace says: `None` when the span
/// never closed (nothing is known until the next span looks).
fn left_by(span: &Span) -> Option<Option<&str>> {
    let close = span.close.as_ref()?;
    Some(match span.op {
        Op::Read => span.before.as_deref(),
        Op::Write | Op::Delete => close.after.as_deref(),
    })
}

/// Each path's first span, and every later span whose `before` does not
/// chain to what the span before it left.
fn continuity(spans: &[Span]) -> (Vec<Owned<'_>>, Vec<Break<'_>>) {
    // Per path: the last span and what it left (`None`: unknown).
    let mut last: BTreeMap<&[u8], (&Span, Option<Option<&str>>)> = BTreeMap::new();
    let mut firsts = BTreeMap::new();
    let mut breaks = Vec::new();
    for span in spans {
        let found = span.before.as_deref();
        match last.get(span.path.as_slice()) {
            None => {
                firsts.insert(
                    span.path.as_slice(),
                    Owned {
                        path: &span.path,
                        span,
                        expected: found,
                    },
                );
            }
            Some(&(previous, Some(expected))) if expected != found => breaks.push(Break {
                path: &span.path,
                span,
                previous: Some(previous),
                expected,
                found,
            }),
            Some(_) => {}
        }
        last.insert(&span.path, (span, left_by(span)));
    }
    (firsts.into_values().collect(), breaks)
}
