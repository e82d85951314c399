//! Judgement of a unified diff: is this the whole patch, and only the patch?
//!
//! The parser walks the diff the way `git apply` reads it and stops at the
//! first structural fault. Every hunk must carry exactly the line counts its
//! `@@ -a,b +c,d @@` header declares, so a diff cut anywhere inside a hunk is
//! caught even when nobody declared a length. Binary payloads are decoded and
//! inflated to their declared size.

mod hunks;
mod parser;
mod paths;

use crate::record::ReasonCode;
use parser::Parser;
pub use paths::header_paths;

use crate::record::Reason;
use std::io::Read;

/// What a valid diff contains.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DiffSummary {
    pub files: usize,
    pub hunks: usize,
}

/// Everything the parser found in a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    pub summary: DiffSummary,
    /// How many leading path components `git apply -p` must strip: 1 for
    /// `a/`/`b/` (or any other one-component prefix pair), 0 for
    /// `--no-prefix` diffs.
    pub strip: u32,
    /// Harmless irregularities that lose nothing (`surplus_blank_context`).
    pub notes: Vec<Reason>,
    /// Every fault found; empty when the diff is complete.
    pub reasons: Vec<Reason>,
}

/// Past this many faults the parser stops: the body is incomplete anyway.
const MAX_REASONS: usize = 32;

/// The most bytes the `GIT binary patch` blocks of one patch may declare,
/// all together: a small literal can declare a huge file, which replay
/// would write and hash (a 1.7 MB body declared 300 MiB).
pub const BINARY_DECLARED_CAP: u64 = 64 << 20;

/// Analyses `patch` as a unified diff: every fault (not just the first),
/// the strip level it needs, and harmless irregularities.
pub fn analyze(patch: &[u8]) -> Analysis {
    let mut analysis = Analysis {
        summary: DiffSummary::default(),
        strip: 1,
        notes: Vec::new(),
        reasons: Vec::new(),
    };
    if patch.iter().all(|b| b.is_ascii_whitespace()) {
        analysis.reasons.push(Reason::new(
            ReasonCode::EmptyBody,
            "the body is empty or only whitespace",
        ));
        return analysis;
    }
    let lines: Vec<&[u8]> = patch.split_inclusive(|&b| b == b'\n').collect();
    // Blank or whitespace-only lines (LF or CRLF) before the first header
    // are not a preamble: git skips them, and so do we.
    let first = lines
        .iter()
        .position(|l| !l.trim_ascii().is_empty())
        .unwrap_or(0);
    let mut parser = Parser {
        lines: &lines,
        i: first,
        summary: DiffSummary::default(),
        reasons: Vec::new(),
        notes: Vec::new(),
        strips: Vec::new(),
        fenced: false,
        binary_declared: 0,
    };
    match check_start(&lines, first) {
        Start::Diff => {}
        Start::Preamble(reason, at, fenced) => {
            parser.reasons.push(reason);
            parser.i = at;
            parser.fenced = fenced;
        }
        Start::Refused(reason) => {
            analysis.reasons.push(reason);
            return analysis;
        }
    }
    parser.sections();
    analysis.strip = parser.strip_level();
    if !patch.ends_with(b"\n") && !whole_index_line(lines[lines.len() - 1]) {
        parser.reasons.push(Reason::new(
            ReasonCode::UnterminatedLine,
            format!(
                "line {} has no newline: the body was cut off mid-line",
                lines.len()
            ),
        ));
    }
    analysis.summary = parser.summary;
    analysis.notes = parser.notes;
    analysis.reasons = parser.reasons;
    analysis
}

/// True for an `index OLD..NEW[ MODE]` line that cannot be a cut one: both
/// ids as long as each other (git abbreviates both alike) and a whole mode.
/// git applies a diff whose last line is such a header without a newline.
fn whole_index_line(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"index ") else {
        return false;
    };
    let mut parts = rest.split(|&b| b == b' ');
    let ids = parts.next().unwrap_or(b"");
    let mode_ok = match parts.next() {
        None => true,
        Some(mode) => mode.len() == 6 && mode.iter().all(|b| (b'0'..=b'7').contains(b)),
    };
    let hex = |s: &[u8]| s.len() >= 7 && s.iter().all(u8::is_ascii_hexdigit);
    match ids.iter().position(|&b| b == b'.') {
        Some(i) if ids.get(i + 1) == Some(&b'.') => {
            let (old, new) = (&ids[..i], &ids[i + 2..]);
            mode_ok && parts.next().is_none() && hex(old) && hex(new) && old.len() == new.len()
        }
        _ => false,
    }
}

/// Validates `patch` as a complete unified diff; the error is the first
/// fault (see [`analyze`] for all of them).
pub fn validate(patch: &[u8]) -> Result<DiffSummary, Reason> {
    let mut analysis = analyze(patch);
    if analysis.reasons.is_empty() {
        Ok(analysis.summary)
    } else {
        Err(analysis.reasons.swap_remove(0))
    }
}

fn is_file_start(lines: &[&[u8]], i: usize) -> bool {
    let Some(line) = lines.get(i) else {
        return false;
    };
    line.starts_with(b"diff --git ")
        || line.starts_with(b"--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with(b"+++ "))
}

fn is_fence(line: &[u8]) -> bool {
    let t = line.trim_ascii_start();
    t.starts_with(b"```") || t.starts_with(b"~~~")
}

enum Start {
    Diff,
    /// Text before the first header: reported, and parsing goes on from the
    /// header at the given line index (true when the text opened a fence).
    Preamble(Reason, usize, bool),
    /// Nothing to parse.
    Refused(Reason),
}

/// The first non-blank line must open a file section; name what came
/// instead.
fn check_start(lines: &[&[u8]], first: usize) -> Start {
    if is_file_start(lines, first) || lines[first].starts_with(b"--- ") {
        return Start::Diff;
    }
    let trimmed = lines[first].trim_ascii_start();
    if trimmed.starts_with(b"{") || trimmed.starts_with(b"[") {
        return Start::Refused(Reason::new(
            ReasonCode::JsonPayload,
            "the body is a JSON document (an error payload?), not a diff",
        ));
    }
    let Some(at) = (first..lines.len()).find(|&i| is_file_start(lines, i)) else {
        return Start::Refused(Reason::new(
            ReasonCode::NotADiff,
            "the body contains no diff file header",
        ));
    };
    if is_fence(lines[first]) {
        return Start::Preamble(
            Reason::new(
                ReasonCode::MarkdownFenced,
                "the diff is wrapped in a markdown code fence",
            ),
            at,
            true,
        );
    }
    // Prose, then a fence around the diff: the closing fence is part of
    // this one fault, not trailing text.
    let fenced = lines[first..at].iter().any(|l| is_fence(l));
    let text = lines[first..at]
        .iter()
        .filter(|l| !l.trim_ascii().is_empty())
        .count();
    let blank = at - first - text;
    let blank = if blank == 0 {
        String::new()
    } else {
        format!(" (and {blank} blank line(s))")
    };
    Start::Preamble(
        Reason::new(
            ReasonCode::ChatPreamble,
            format!("{text} line(s) of text{blank} precede the first file header"),
        ),
        at,
        fenced,
    )
}

#[cfg(test)]
mod tests;
