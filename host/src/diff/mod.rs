//! Judgement of a unified diff: is this the whole patch, and only the patch?
//!
//! The parser walks the diff the way `git apply` reads it and stops at the
//! first structural fault. Every hunk must carry exactly the line counts its
//! `@@ -a,b +c,d @@` header declares, so a diff cut anywhere inside a hunk is
//! caught even when nobody declared a length. Binary payloads are decoded and
//! inflated to their declared size.

mod paths;

pub use paths::header_paths;

use crate::record::Reason;
use std::io::Read;

/// Stable reason codes produced here.
pub mod code {
    pub const EMPTY_BODY: &str = "empty_body";
    pub const NOT_A_DIFF: &str = "not_a_diff";
    pub const MARKDOWN_FENCED: &str = "markdown_fenced";
    pub const JSON_PAYLOAD: &str = "json_payload";
    pub const CHAT_PREAMBLE: &str = "chat_preamble";
    pub const TRAILING_TEXT: &str = "trailing_text";
    pub const MALFORMED_FILE_HEADER: &str = "malformed_file_header";
    pub const MALFORMED_HUNK_HEADER: &str = "malformed_hunk_header";
    pub const HUNK_TRUNCATED: &str = "hunk_truncated";
    pub const HUNK_COUNT_MISMATCH: &str = "hunk_count_mismatch";
    pub const EMPTY_FILE_SECTION: &str = "empty_file_section";
    pub const BINARY_WITHOUT_DATA: &str = "binary_without_data";
    pub const BINARY_TRUNCATED: &str = "binary_truncated";
    pub const BINARY_TOO_LARGE: &str = "binary_too_large";
    pub const UNTERMINATED_LINE: &str = "unterminated_line";
}

/// The note left when a hunk is followed by one blank context line past
/// its counts.
pub const SURPLUS_BLANK_CONTEXT: &str = "surplus_blank_context";

/// What a valid diff contains.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub hunks: usize,
}

/// Everything the parser found in a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    pub summary: Summary,
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
        summary: Summary::default(),
        strip: 1,
        notes: Vec::new(),
        reasons: Vec::new(),
    };
    if patch.iter().all(|b| b.is_ascii_whitespace()) {
        analysis.reasons.push(Reason::new(
            code::EMPTY_BODY,
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
        summary: Summary::default(),
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
            code::UNTERMINATED_LINE,
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
pub fn validate(patch: &[u8]) -> Result<Summary, Reason> {
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
            code::JSON_PAYLOAD,
            "the body is a JSON document (an error payload?), not a diff",
        ));
    }
    let Some(at) = (first..lines.len()).find(|&i| is_file_start(lines, i)) else {
        return Start::Refused(Reason::new(
            code::NOT_A_DIFF,
            "the body contains no diff file header",
        ));
    };
    if is_fence(lines[first]) {
        return Start::Preamble(
            Reason::new(
                code::MARKDOWN_FENCED,
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
            code::CHAT_PREAMBLE,
            format!("{text} line(s) of text{blank} precede the first file header"),
        ),
        at,
        fenced,
    )
}

struct Parser<'a> {
    lines: &'a [&'a [u8]],
    i: usize,
    summary: Summary,
    reasons: Vec<Reason>,
    notes: Vec<Reason>,
    /// (line of the section, the strip level its names need).
    strips: Vec<(usize, u32)>,
    /// The body opened a markdown fence before the diff.
    fenced: bool,
    /// Bytes the binary blocks so far declare.
    binary_declared: u64,
}

fn show(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    let s = s.trim_end_matches('\n');
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

#[derive(Default)]
struct GitHeader {
    rename_from: Option<Vec<u8>>,
    rename_to: Option<Vec<u8>>,
    copy_from: Option<Vec<u8>>,
    copy_to: Option<Vec<u8>>,
    old_mode: bool,
    new_mode: bool,
    new_file: bool,
    deleted_file: bool,
    /// `index A..B`: the blob ids on either side.
    index: Option<(Vec<u8>, Vec<u8>)>,
}

impl GitHeader {
    /// True when the header alone is a complete change (no content to carry).
    fn complete_without_content(&self) -> bool {
        if let Some((old, new)) = &self.index {
            // An index line with two different blobs means content changed,
            // unless one side is absent and the other is the empty blob.
            let content = old != new
                && !(is_zero_oid(old) && is_empty_blob(new))
                && !(is_empty_blob(old) && is_zero_oid(new));
            if content {
                return false;
            }
        }
        (self.rename_from.is_some() && self.rename_to.is_some())
            || (self.copy_from.is_some() && self.copy_to.is_some())
            || (self.old_mode && self.new_mode)
            || self.new_file
            || self.deleted_file
    }

    /// The unprefixed (source, destination) names of a rename or copy.
    fn moved(&self) -> Option<(&[u8], &[u8])> {
        match (
            &self.rename_from,
            &self.rename_to,
            &self.copy_from,
            &self.copy_to,
        ) {
            (Some(f), Some(t), _, _) | (_, _, Some(f), Some(t)) => Some((f, t)),
            _ => None,
        }
    }
}

fn is_zero_oid(id: &[u8]) -> bool {
    !id.is_empty() && id.iter().all(|&b| b == b'0')
}

fn is_empty_blob(id: &[u8]) -> bool {
    const EMPTY: &[u8] = b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    id.len() >= 7 && EMPTY.starts_with(id)
}

/// A name from a `rename from`/`copy to`-style line, unquoted.
fn header_value(rest: &[u8]) -> Vec<u8> {
    if rest.starts_with(b"\"") {
        paths::unquote(rest).0
    } else {
        rest.to_vec()
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a [u8]> {
        self.lines.get(self.i).copied()
    }

    fn lineno(&self) -> usize {
        self.i + 1
    }

    fn err(&self, code: &str, msg: impl Into<String>) -> Reason {
        Reason::new(code, format!("line {}: {}", self.lineno(), msg.into()))
    }

    /// After a fault: skip to the next file header, so every later fault is
    /// reported too.
    fn recover(&mut self) {
        self.i += 1;
        while self.i < self.lines.len() && !is_file_start(self.lines, self.i) {
            self.i += 1;
        }
    }

    fn sections(&mut self) {
        while let Some(line) = self.peek() {
            if self.reasons.len() >= MAX_REASONS {
                return;
            }
            let result = if line.starts_with(b"diff --git ") {
                self.git_section()
            } else if line.starts_with(b"--- ") {
                self.plain_section()
            } else if line.starts_with(b"@@") {
                Err(self.err(
                    code::HUNK_COUNT_MISMATCH,
                    "hunk header follows a complete hunk, or a hunk has more lines than its header declares",
                ))
            } else if line.trim_ascii().is_empty() {
                // Blank lines between sections or at the end carry nothing
                // (git skips them); before a hunk line they are a mismatch.
                let blank = self.blank_run(self.i);
                let next = self.lines.get(self.i + blank);
                if next.is_none() || is_file_start(self.lines, self.i + blank) {
                    self.i += blank;
                    continue;
                }
                if next.is_some_and(|l| {
                    l.starts_with(b"@@") || matches!(l.first(), Some(b' ' | b'+' | b'-'))
                }) {
                    Err(self.err(
                        code::HUNK_COUNT_MISMATCH,
                        "a blank line, then hunk lines beyond the line counts of the hunk before it",
                    ))
                } else {
                    self.i += blank;
                    Err(self.err(
                        code::TRAILING_TEXT,
                        format!(
                            "text after the diff: `{}`",
                            show(next.copied().unwrap_or(b""))
                        ),
                    ))
                }
            } else if matches!(line.first(), Some(b' ' | b'+' | b'-')) {
                Err(self.err(
                    code::HUNK_COUNT_MISMATCH,
                    format!(
                        "`{}` is beyond the line counts of the hunk before it",
                        show(line)
                    ),
                ))
            } else if self.fenced && is_fence(line) && self.rest_is_blank(self.i + 1) {
                // The closing fence of a fenced diff: already reported.
                break;
            } else {
                Err(self.err(
                    code::TRAILING_TEXT,
                    format!("text after the diff: `{}`", show(line)),
                ))
            };
            if let Err(reason) = result {
                self.reasons.push(reason);
                self.recover();
            }
        }
        if self.summary.files == 0 && self.reasons.is_empty() {
            self.reasons.push(Reason::new(
                code::NOT_A_DIFF,
                "the body contains no file section",
            ));
        }
    }

    /// How many whitespace-only lines start at `from`.
    fn blank_run(&self, from: usize) -> usize {
        self.lines[from.min(self.lines.len())..]
            .iter()
            .take_while(|l| l.trim_ascii().is_empty())
            .count()
    }

    fn rest_is_blank(&self, from: usize) -> bool {
        self.lines[from.min(self.lines.len())..]
            .iter()
            .all(|l| l.trim_ascii().is_empty())
    }

    /// A section without `diff --git`: `--- OLD`, `+++ NEW`, hunks.
    fn plain_section(&mut self) -> Result<(), Reason> {
        let start = self.lineno();
        let (old, new) = self.file_headers()?;
        if let Some(p) = strip_from_names(old.as_deref(), new.as_deref()) {
            self.strips.push((start, p));
        }
        if self.hunks()? == 0 {
            return Err(Reason::new(
                code::EMPTY_FILE_SECTION,
                format!("line {start}: file section has no hunks"),
            ));
        }
        self.summary.files += 1;
        Ok(())
    }

    fn git_section(&mut self) -> Result<(), Reason> {
        let start = self.lineno();
        let line = self.lines[self.i];
        let rest = line[b"diff --git ".len()..].trim_ascii_end();
        self.i += 1;
        let mut header = GitHeader::default();
        while let Some(line) = self.peek() {
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if let Some(v) = text.strip_prefix(b"rename from ") {
                header.rename_from = Some(header_value(v));
            } else if let Some(v) = text.strip_prefix(b"rename to ") {
                header.rename_to = Some(header_value(v));
            } else if let Some(v) = text.strip_prefix(b"copy from ") {
                header.copy_from = Some(header_value(v));
            } else if let Some(v) = text.strip_prefix(b"copy to ") {
                header.copy_to = Some(header_value(v));
            } else if text.starts_with(b"old mode ") {
                header.old_mode = true;
            } else if text.starts_with(b"new mode ") {
                header.new_mode = true;
            } else if text.starts_with(b"new file mode ") {
                header.new_file = true;
            } else if text.starts_with(b"deleted file mode ") {
                header.deleted_file = true;
            } else if text.starts_with(b"similarity index ")
                || text.starts_with(b"dissimilarity index ")
            {
            } else if let Some(ids) = text.strip_prefix(b"index ") {
                let ids = ids.split(|&b| b == b' ').next().unwrap_or(b"");
                let mut parts = ids.splitn(2, |&b| b == b'.');
                let old = parts.next().unwrap_or(b"").to_vec();
                let new = parts
                    .next()
                    .map(|p| p.strip_prefix(b".").unwrap_or(p))
                    .unwrap_or(b"")
                    .to_vec();
                header.index = Some((old, new));
            } else {
                break;
            }
            self.i += 1;
        }
        // The strip level this section's names need: from the rename or
        // copy lines (which are never prefixed), else from `diff --git`.
        let strip = match header.moved() {
            Some((from, to)) => strip_for_move(rest, from, to),
            None => paths::split_same_name(rest).map(|(p, _)| p),
        };
        let Some(strip) = strip else {
            return Err(Reason::new(
                code::MALFORMED_FILE_HEADER,
                format!(
                    "line {start}: `{}` does not name the same path twice behind a prefix (`diff --git a/PATH b/PATH`, or with --no-prefix `diff --git PATH PATH`)",
                    show(line)
                ),
            ));
        };
        self.strips.push((start, strip));
        match self.peek() {
            Some(line) if line.starts_with(b"Binary files ") => {
                return Err(self.err(
                    code::BINARY_WITHOUT_DATA,
                    "`Binary files ... differ` carries no binary data; the patch cannot be applied",
                ));
            }
            Some(b"GIT binary patch\n") => {
                self.i += 1;
                self.binary(start)?;
            }
            Some(line) if line.starts_with(b"--- ") => {
                self.file_headers()?;
                if self.hunks()? == 0 {
                    return Err(Reason::new(
                        code::EMPTY_FILE_SECTION,
                        format!("line {start}: file section has no hunks"),
                    ));
                }
            }
            _ => {
                if !header.complete_without_content() {
                    return Err(Reason::new(
                        code::EMPTY_FILE_SECTION,
                        format!(
                            "line {start}: file section has neither hunks nor a complete rename, copy, mode or binary payload"
                        ),
                    ));
                }
            }
        }
        self.summary.files += 1;
        Ok(())
    }

    /// The one strip level every section agrees on; 1 (git's default) when
    /// no section says. Sections that need different levels cannot be
    /// applied by one `git apply -p`: a fault.
    fn strip_level(&mut self) -> u32 {
        let Some(&(first_line, first)) = self.strips.first() else {
            return 1;
        };
        if let Some(&(line, other)) = self.strips.iter().find(|(_, p)| *p != first) {
            self.reasons.push(Reason::new(
                code::MALFORMED_FILE_HEADER,
                format!(
                    "the file headers need different strip levels (line {first_line}: -p{first}, line {line}: -p{other}); one `git apply` cannot apply them"
                ),
            ));
        }
        first
    }

    /// `--- OLD` then `+++ NEW`; returns both names (`None` for
    /// `/dev/null`).
    fn file_headers(&mut self) -> Result<(Name, Name), Reason> {
        let old = paths::file_header_name(&self.lines[self.i][4..]);
        self.i += 1;
        match self.peek() {
            Some(line) if line.starts_with(b"+++ ") && line.len() > 5 => {
                self.i += 1;
                Ok((old, paths::file_header_name(&line[4..])))
            }
            Some(line) => Err(self.err(
                code::MALFORMED_FILE_HEADER,
                format!("expected `+++ NEW` after `---`, found `{}`", show(line)),
            )),
            None => Err(self.err(
                code::MALFORMED_FILE_HEADER,
                "the body ends after `---` with no `+++` line",
            )),
        }
    }

    /// Consumes hunks; returns how many.
    fn hunks(&mut self) -> Result<usize, Reason> {
        let mut n = 0;
        while let Some(line) = self.peek() {
            if !line.starts_with(b"@@") {
                break;
            }
            let (mut old, mut new) = parse_hunk_header(line).ok_or_else(|| {
                self.err(
                    code::MALFORMED_HUNK_HEADER,
                    format!("`{}` is not `@@ -a,b +c,d @@`", show(line)),
                )
            })?;
            let header_line = self.lineno();
            self.i += 1;
            while old > 0 || new > 0 {
                let Some(line) = self.peek() else {
                    return Err(Reason::new(
                        code::HUNK_TRUNCATED,
                        format!(
                            "line {header_line}: hunk ends early: {old} old and {new} new line(s) missing at the end of the body"
                        ),
                    ));
                };
                let (o, w) = match line.first() {
                    Some(b' ') | Some(b'\n') => (1, 1),
                    Some(b'-') => (1, 0),
                    Some(b'+') => (0, 1),
                    Some(b'\\') => (0, 0),
                    _ => {
                        return Err(self.err(
                            code::HUNK_COUNT_MISMATCH,
                            format!(
                                "hunk at line {header_line} still expects {old} old and {new} new line(s), found `{}`",
                                show(line)
                            ),
                        ));
                    }
                };
                if o > old || w > new {
                    return Err(self.err(
                        code::HUNK_COUNT_MISMATCH,
                        format!(
                            "hunk at line {header_line} has more lines than its header declares"
                        ),
                    ));
                }
                old -= o;
                new -= w;
                self.i += 1;
            }
            // "\ No newline at end of file" may follow the last line.
            while self.peek().is_some_and(|l| l.starts_with(b"\\")) {
                self.i += 1;
            }
            // Blank context lines past the counts, right before the next
            // file or the end, lose nothing (git ignores them); many models
            // write one. Anything else past the counts stays a mismatch.
            let blank = self.blank_run(self.i);
            if blank > 0
                && (is_file_start(self.lines, self.i + blank) || self.i + blank == self.lines.len())
            {
                self.notes.push(self.err(
                    SURPLUS_BLANK_CONTEXT,
                    format!(
                        "{blank} blank context line(s) past the counts of the hunk at line {header_line} (git apply ignores them)"
                    ),
                ));
                self.i += blank;
            }
            n += 1;
            self.summary.hunks += 1;
        }
        Ok(n)
    }

    /// One or more `literal N` / `delta N` blocks, each ending in a blank line.
    fn binary(&mut self, start: usize) -> Result<(), Reason> {
        let mut blocks = 0;
        while let Some(line) = self.peek() {
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            let size = if let Some(n) = text.strip_prefix(b"literal ") {
                n
            } else if let Some(n) = text.strip_prefix(b"delta ") {
                n
            } else {
                break;
            };
            let size: u64 = std::str::from_utf8(size)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| {
                    self.err(
                        code::BINARY_TRUNCATED,
                        format!("bad binary block size `{}`", show(line)),
                    )
                })?;
            let block_line = self.lineno();
            self.binary_declared = self.binary_declared.saturating_add(size);
            if self.binary_declared > BINARY_DECLARED_CAP {
                return Err(Reason::new(
                    code::BINARY_TOO_LARGE,
                    format!(
                        "line {block_line}: binary blocks declare {} bytes in all, past the cap of {} MiB",
                        self.binary_declared,
                        BINARY_DECLARED_CAP >> 20
                    ),
                ));
            }
            self.i += 1;
            let mut data = Vec::new();
            loop {
                let Some(line) = self.peek() else {
                    return Err(Reason::new(
                        code::BINARY_TRUNCATED,
                        format!(
                            "line {block_line}: binary block is cut off (no blank line ends it)"
                        ),
                    ));
                };
                self.i += 1;
                if line == b"\n" {
                    break;
                }
                decode_base85_line(line, &mut data).ok_or_else(|| {
                    Reason::new(
                        code::BINARY_TRUNCATED,
                        format!("line {}: malformed or cut-off binary data line", self.i),
                    )
                })?;
            }
            // Counted, never kept: a small literal that declares 50 MB must
            // not make capture hold 50 MB.
            let inflated = std::io::copy(
                &mut flate2::read::ZlibDecoder::new(&data[..]).take(size.saturating_add(1)),
                &mut std::io::sink(),
            );
            if !matches!(inflated, Ok(n) if n == size) {
                return Err(Reason::new(
                    code::BINARY_TRUNCATED,
                    format!(
                        "line {block_line}: binary block does not inflate to its declared {size} bytes"
                    ),
                ));
            }
            blocks += 1;
        }
        if blocks == 0 {
            return Err(Reason::new(
                code::BINARY_TRUNCATED,
                format!("line {start}: `GIT binary patch` has no literal or delta block"),
            ));
        }
        Ok(())
    }
}

/// A name from a `---`/`+++` line; `None` for `/dev/null`.
type Name = Option<Vec<u8>>;

/// The strip level `git apply` needs for each pair of names; `None` when
/// the names say nothing (one side is `/dev/null`, or they differ in more
/// than a prefix).
fn strip_from_names(old: Option<&[u8]>, new: Option<&[u8]>) -> Option<u32> {
    let (old, new) = (old?, new?);
    if old == new {
        return Some(0);
    }
    (1..=16).find(|&p| match (paths::strip(old, p), paths::strip(new, p)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    })
}

/// The strip level of a rename or copy: `diff --git PA+FROM PB+TO` where
/// the prefixes are whole components, as many on both sides.
fn strip_for_move(rest: &[u8], from: &[u8], to: &[u8]) -> Option<u32> {
    let (a, b) = paths::split_candidates(rest)
        .into_iter()
        .find(|(a, b)| a.ends_with(from) && b.ends_with(to))?;
    let pa = a.strip_suffix(from)?;
    let pb = b.strip_suffix(to)?;
    let components = |p: &[u8]| -> Option<u32> {
        if p.is_empty() {
            return Some(0);
        }
        if !p.ends_with(b"/") || p.starts_with(b"/") || p.contains(&0) {
            return None;
        }
        Some(p.iter().filter(|&&c| c == b'/').count() as u32)
    };
    let (na, nb) = (components(pa)?, components(pb)?);
    (na == nb).then_some(na)
}

/// Parses `@@ -a[,b] +c[,d] @@...`, returning (b, d).
fn parse_hunk_header(line: &[u8]) -> Option<(u64, u64)> {
    // The section heading after the second `@@` is free text in the file's
    // own encoding; only the ranges must be ASCII.
    let rest = line.strip_prefix(b"@@ -")?;
    let end = rest.windows(3).position(|w| w == b" @@")?;
    let after = &rest[end + 3..];
    if !(after.is_empty() || matches!(after[0], b' ' | b'\n' | b'\r' | b'\t')) {
        return None;
    }
    let ranges = std::str::from_utf8(&rest[..end]).ok()?;
    let (old, new) = ranges.split_once(" +")?;
    fn range(s: &str) -> Option<u64> {
        let (start, count) = match s.split_once(',') {
            Some((a, b)) => (a, b),
            None => (s, "1"),
        };
        start.parse::<u64>().ok()?;
        count.parse().ok()
    }
    Some((range(old)?, range(new)?))
}

const BASE85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Decodes one git base85 line (`<len char><5*k chars>\n`), appending bytes.
fn decode_base85_line(line: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let line = line.strip_suffix(b"\n")?;
    let (&len_char, body) = line.split_first()?;
    let len = match len_char {
        b'A'..=b'Z' => (len_char - b'A' + 1) as usize,
        b'a'..=b'z' => (len_char - b'a' + 27) as usize,
        _ => return None,
    };
    if body.len() != len.div_ceil(4) * 5 {
        return None;
    }
    let mut decoded = Vec::with_capacity(body.len() / 5 * 4);
    for chunk in body.chunks(5) {
        let mut acc: u64 = 0;
        for &c in chunk {
            let d = BASE85.iter().position(|&b| b == c)? as u64;
            acc = acc * 85 + d;
        }
        if acc > u64::from(u32::MAX) {
            return None;
        }
        decoded.extend_from_slice(&(acc as u32).to_be_bytes());
    }
    out.extend_from_slice(&decoded[..len]);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_header_defaults_count_to_one() {
        assert_eq!(parse_hunk_header(b"@@ -3 +3 @@\n"), Some((1, 1)));
        assert_eq!(parse_hunk_header(b"@@ -1,0 +1,2 @@ fn x\n"), Some((0, 2)));
        assert_eq!(parse_hunk_header(b"@@ -1,x +1 @@\n"), None);
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;

    const HUNK: &str = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";

    #[test]
    fn crlf_headers_and_a_non_utf8_heading_parse() {
        let crlf = "diff --git a/x b/x\r\n--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n";
        let a = analyze(crlf.as_bytes());
        assert!(a.reasons.is_empty(), "{:?}", a.reasons);
        let mut latin1 = b"--- a/x\n+++ b/x\n@@ -1 +1 @@ caf\xe9\n-a\n+b\n".to_vec();
        assert!(analyze(&latin1).reasons.is_empty());
        latin1[22] = b'x'; // `@@ -1 +x @@`
        assert_eq!(
            analyze(&latin1).reasons[0].code,
            code::MALFORMED_HUNK_HEADER
        );
    }

    #[test]
    fn blank_lines_past_the_counts_are_noted_before_a_header_and_refused_before_a_hunk() {
        let two = format!("{HUNK} \n\n{HUNK}");
        let a = analyze(two.as_bytes());
        assert!(a.reasons.is_empty(), "{:?}", a.reasons);
        assert_eq!(a.notes.len(), 1);
        assert!(a.notes[0].message.contains("2 blank"), "{:?}", a.notes);
        let before_hunk = format!("{HUNK}\n@@ -5 +5 @@\n-x\n+y\n");
        assert_eq!(
            analyze(before_hunk.as_bytes()).reasons[0].code,
            code::HUNK_COUNT_MISMATCH
        );
        let before_change = format!("{HUNK}\n+lost\n");
        assert_eq!(
            analyze(before_change.as_bytes()).reasons[0].code,
            code::HUNK_COUNT_MISMATCH
        );
    }

    #[test]
    fn only_a_whole_index_line_may_end_without_a_newline() {
        let head = "diff --git a/e b/e\nnew file mode 100644\n";
        for (last, ok) in [
            ("index 0000000000..e69de29bb2", true),
            ("index 0000000000..e69de29bb2 100644", true),
            ("index 0000000000..e69de29", false),
            ("index 0000000000..e69de29bb2 1006", false),
            ("new file mode 100644", false),
        ] {
            let text = format!("{head}{last}");
            let a = analyze(text.as_bytes());
            assert_eq!(a.reasons.is_empty(), ok, "{last}: {:?}", a.reasons);
        }
    }

    #[test]
    fn every_fault_is_listed() {
        let text = format!("{HUNK}-extra\n{HUNK}@@ -1 +1,x @@\n");
        let codes: Vec<_> = analyze(text.as_bytes())
            .reasons
            .into_iter()
            .map(|r| r.code)
            .collect();
        assert_eq!(
            codes,
            [code::HUNK_COUNT_MISMATCH, code::MALFORMED_HUNK_HEADER]
        );
    }
}
