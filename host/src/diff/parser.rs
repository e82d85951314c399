//! The diff parser: walks the lines the way `git apply` reads them and
//! stops at the first structural fault.

use super::hunks::*;
use super::*;
use crate::record::ReasonCode;

pub(super) struct Parser<'a> {
    pub(super) lines: &'a [&'a [u8]],
    pub(super) i: usize,
    pub(super) summary: DiffSummary,
    pub(super) reasons: Vec<Reason>,
    pub(super) notes: Vec<Reason>,
    /// (line of the section, the strip level its names need).
    pub(super) strips: Vec<(usize, u32)>,
    /// The body opened a markdown fence before the diff.
    pub(super) fenced: bool,
    /// Bytes the binary blocks so far declare.
    pub(super) binary_declared: u64,
}

pub(super) fn show(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    let s = s.trim_end_matches('\n');
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

#[derive(Default)]
pub(super) struct GitHeader {
    pub(super) rename_from: Option<Vec<u8>>,
    pub(super) rename_to: Option<Vec<u8>>,
    pub(super) copy_from: Option<Vec<u8>>,
    pub(super) copy_to: Option<Vec<u8>>,
    pub(super) old_mode: bool,
    pub(super) new_mode: bool,
    pub(super) new_file: bool,
    pub(super) deleted_file: bool,
    /// `index A..B`: the blob ids on either side.
    pub(super) index: Option<(Vec<u8>, Vec<u8>)>,
}

impl GitHeader {
    /// True when the header alone is a complete change (no content to carry).
    pub(super) fn complete_without_content(&self) -> bool {
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
    pub(super) fn moved(&self) -> Option<(&[u8], &[u8])> {
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

pub(super) fn is_zero_oid(id: &[u8]) -> bool {
    !id.is_empty() && id.iter().all(|&b| b == b'0')
}

pub(super) fn is_empty_blob(id: &[u8]) -> bool {
    const EMPTY: &[u8] = b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    id.len() >= 7 && EMPTY.starts_with(id)
}

/// A name from a `rename from`/`copy to`-style line, unquoted.
pub(super) fn header_value(rest: &[u8]) -> Vec<u8> {
    if rest.starts_with(b"\"") {
        paths::unquote(rest).0
    } else {
        rest.to_vec()
    }
}

impl<'a> Parser<'a> {
    pub(super) fn peek(&self) -> Option<&'a [u8]> {
        self.lines.get(self.i).copied()
    }

    pub(super) fn lineno(&self) -> usize {
        self.i + 1
    }

    pub(super) fn err(&self, code: ReasonCode, msg: impl Into<String>) -> Reason {
        Reason::new(code, format!("line {}: {}", self.lineno(), msg.into()))
    }

    /// After a fault: skip to the next file header, so every later fault is
    /// reported too.
    pub(super) fn recover(&mut self) {
        self.i += 1;
        while self.i < self.lines.len() && !is_file_start(self.lines, self.i) {
            self.i += 1;
        }
    }

    pub(super) fn sections(&mut self) {
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
                    ReasonCode::HunkCountMismatch,
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
                        ReasonCode::HunkCountMismatch,
                        "a blank line, then hunk lines beyond the line counts of the hunk before it",
                    ))
                } else {
                    self.i += blank;
                    Err(self.err(
                        ReasonCode::TrailingText,
                        format!(
                            "text after the diff: `{}`",
                            show(next.copied().unwrap_or(b""))
                        ),
                    ))
                }
            } else if matches!(line.first(), Some(b' ' | b'+' | b'-')) {
                Err(self.err(
                    ReasonCode::HunkCountMismatch,
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
                    ReasonCode::TrailingText,
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
                ReasonCode::NotADiff,
                "the body contains no file section",
            ));
        }
    }

    /// How many whitespace-only lines start at `from`.
    pub(super) fn blank_run(&self, from: usize) -> usize {
        self.lines[from.min(self.lines.len())..]
            .iter()
            .take_while(|l| l.trim_ascii().is_empty())
            .count()
    }

    pub(super) fn rest_is_blank(&self, from: usize) -> bool {
        self.lines[from.min(self.lines.len())..]
            .iter()
            .all(|l| l.trim_ascii().is_empty())
    }

    /// A section without `diff --git`: `--- OLD`, `+++ NEW`, hunks.
    pub(super) fn plain_section(&mut self) -> Result<(), Reason> {
        let start = self.lineno();
        let (old, new) = self.file_headers()?;
        if let Some(p) = strip_from_names(old.as_deref(), new.as_deref()) {
            self.strips.push((start, p));
        }
        if self.hunks()? == 0 {
            return Err(Reason::new(
                ReasonCode::EmptyFileSection,
                format!("line {start}: file section has no hunks"),
            ));
        }
        self.summary.files += 1;
        Ok(())
    }

    pub(super) fn git_section(&mut self) -> Result<(), Reason> {
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
                ReasonCode::MalformedFileHeader,
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
                    ReasonCode::BinaryWithoutData,
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
                        ReasonCode::EmptyFileSection,
                        format!("line {start}: file section has no hunks"),
                    ));
                }
            }
            _ => {
                if !header.complete_without_content() {
                    return Err(Reason::new(
                        ReasonCode::EmptyFileSection,
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
    pub(super) fn strip_level(&mut self) -> u32 {
        let Some(&(first_line, first)) = self.strips.first() else {
            return 1;
        };
        if let Some(&(line, other)) = self.strips.iter().find(|(_, p)| *p != first) {
            self.reasons.push(Reason::new(
                ReasonCode::MalformedFileHeader,
                format!(
                    "the file headers need different strip levels (line {first_line}: -p{first}, line {line}: -p{other}); one `git apply` cannot apply them"
                ),
            ));
        }
        first
    }

    /// `--- OLD` then `+++ NEW`; returns both names (`None` for
    /// `/dev/null`).
    pub(super) fn file_headers(&mut self) -> Result<(Name, Name), Reason> {
        let old = paths::file_header_name(&self.lines[self.i][4..]);
        self.i += 1;
        match self.peek() {
            Some(line) if line.starts_with(b"+++ ") && line.len() > 5 => {
                self.i += 1;
                Ok((old, paths::file_header_name(&line[4..])))
            }
            Some(line) => Err(self.err(
                ReasonCode::MalformedFileHeader,
                format!("expected `+++ NEW` after `---`, found `{}`", show(line)),
            )),
            None => Err(self.err(
                ReasonCode::MalformedFileHeader,
                "the body ends after `---` with no `+++` line",
            )),
        }
    }

    /// Consumes hunks; returns how many.
    pub(super) fn hunks(&mut self) -> Result<usize, Reason> {
        let mut n = 0;
        while let Some(line) = self.peek() {
            if !line.starts_with(b"@@") {
                break;
            }
            let (mut old, mut new) = parse_hunk_header(line).ok_or_else(|| {
                self.err(
                    ReasonCode::MalformedHunkHeader,
                    format!("`{}` is not `@@ -a,b +c,d @@`", show(line)),
                )
            })?;
            let header_line = self.lineno();
            self.i += 1;
            while old > 0 || new > 0 {
                let Some(line) = self.peek() else {
                    return Err(Reason::new(
                        ReasonCode::HunkTruncated,
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
                            ReasonCode::HunkCountMismatch,
                            format!(
                                "hunk at line {header_line} still expects {old} old and {new} new line(s), found `{}`",
                                show(line)
                            ),
                        ));
                    }
                };
                if o > old || w > new {
                    return Err(self.err(
                        ReasonCode::HunkCountMismatch,
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
                    ReasonCode::SurplusBlankContext,
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
    pub(super) fn binary(&mut self, start: usize) -> Result<(), Reason> {
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
                        ReasonCode::BinaryTruncated,
                        format!("bad binary block size `{}`", show(line)),
                    )
                })?;
            let block_line = self.lineno();
            self.binary_declared = self.binary_declared.saturating_add(size);
            if self.binary_declared > BINARY_DECLARED_CAP {
                return Err(Reason::new(
                    ReasonCode::BinaryTooLarge,
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
                        ReasonCode::BinaryTruncated,
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
                        ReasonCode::BinaryTruncated,
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
                    ReasonCode::BinaryTruncated,
                    format!(
                        "line {block_line}: binary block does not inflate to its declared {size} bytes"
                    ),
                ));
            }
            blocks += 1;
        }
        if blocks == 0 {
            return Err(Reason::new(
                ReasonCode::BinaryTruncated,
                format!("line {start}: `GIT binary patch` has no literal or delta block"),
            ));
        }
        Ok(())
    }
}

/// A name from a `---`/`+++` line; `None` for `/dev/null`.
pub(super) type Name = Option<Vec<u8>>;
