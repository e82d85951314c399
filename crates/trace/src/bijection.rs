//! The span-tree bijection: a delta (every changed path, as raw bytes; a
//! rename is its old path plus its new path) agrees with a trace when every
//! changed path is owned by a span, every owning span's path changed, and the
//! bytes now at each owned path are what its span recorded.
//!
//! A path is owned by the last span, in the order spans opened, that is a
//! closed write or delete: status `closed` (not `error`, not still open).
//! `read` spans never own a path.
//!
//! Judging is two phases so the caller can read files its own way (the host
//! hashes in parallel, the guest reads `/patched`): [`judge`] needs no I/O and
//! returns the [`Owned`] paths; the caller hashes each and [`Owned::check`]
//! turns the hash into a [`HashMiss`] or nothing.

use crate::line::{Op, Status};
use crate::parse::Span;
use std::collections::{BTreeMap, BTreeSet};

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
    for span in spans {
        match &span.close {
            None => open.push(span),
            Some(close) if close.status == Status::Closed && span.op.mutates() => {
                owner.insert(&span.path, span);
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
    Judgement {
        open,
        ghosts,
        phantoms,
        owned,
        mutating_spans,
        changed: delta.len(),
    }
}
