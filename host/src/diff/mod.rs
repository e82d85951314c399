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
    pub const UNTERMINATED_LINE: &str = "unterminated_line";
}

/// What a valid diff contains.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub hunks: usize,
}

/// Validates `patch` as a complete unified diff.
pub fn validate(patch: &[u8]) -> Result<Summary, Reason> {
    if patch.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(Reason::new(
            code::EMPTY_BODY,
            "the body is empty or only whitespace",
        ));
    }
    let lines: Vec<&[u8]> = patch.split_inclusive(|&b| b == b'\n').collect();
    check_start(&lines)?;
    let mut parser = Parser {
        lines: &lines,
        i: 0,
        summary: Summary::default(),
    };
    parser.sections()?;
    if !patch.ends_with(b"\n") {
        return Err(Reason::new(
            code::UNTERMINATED_LINE,
            format!(
                "line {} has no newline: the body was cut off mid-line",
                lines.len()
            ),
        ));
    }
    Ok(parser.summary)
}

fn is_file_start(line: &[u8]) -> bool {
    line.starts_with(b"diff --git ") || line.starts_with(b"--- ")
}

/// The first line must open a file section; name what came instead.
fn check_start(lines: &[&[u8]]) -> Result<(), Reason> {
    let first = lines[0];
    if is_file_start(first) {
        return Ok(());
    }
    let trimmed = first.trim_ascii_start();
    if trimmed.starts_with(b"```") || trimmed.starts_with(b"~~~") {
        return Err(Reason::new(
            code::MARKDOWN_FENCED,
            "the diff is wrapped in a markdown code fence",
        ));
    }
    if trimmed.starts_with(b"{") || trimmed.starts_with(b"[") {
        return Err(Reason::new(
            code::JSON_PAYLOAD,
            "the body is a JSON document (an error payload?), not a diff",
        ));
    }
    if let Some(n) = lines.iter().position(|l| is_file_start(l)) {
        return Err(Reason::new(
            code::CHAT_PREAMBLE,
            format!("{n} line(s) of text precede the first file header"),
        ));
    }
    Err(Reason::new(
        code::NOT_A_DIFF,
        "the body contains no diff file header",
    ))
}

struct Parser<'a> {
    lines: &'a [&'a [u8]],
    i: usize,
    summary: Summary,
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
    rename_from: bool,
    rename_to: bool,
    copy_from: bool,
    copy_to: bool,
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
        (self.rename_from && self.rename_to)
            || (self.copy_from && self.copy_to)
            || (self.old_mode && self.new_mode)
            || self.new_file
            || self.deleted_file
    }
}

fn is_zero_oid(id: &[u8]) -> bool {
    !id.is_empty() && id.iter().all(|&b| b == b'0')
}

fn is_empty_blob(id: &[u8]) -> bool {
    const EMPTY: &[u8] = b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    id.len() >= 7 && EMPTY.starts_with(id)
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

    fn sections(&mut self) -> Result<(), Reason> {
        while let Some(line) = self.peek() {
            if line.starts_with(b"diff --git ") {
                self.git_section()?;
            } else if line.starts_with(b"--- ") {
                let start = self.lineno();
                self.file_headers()?;
                if self.hunks()? == 0 {
                    return Err(Reason::new(
                        code::EMPTY_FILE_SECTION,
                        format!("line {start}: file section has no hunks"),
                    ));
                }
                self.summary.files += 1;
            } else if line.starts_with(b"@@") {
                return Err(self.err(
                    code::HUNK_COUNT_MISMATCH,
                    "hunk header follows a complete hunk, or a hunk has more lines than its header declares",
                ));
            } else if matches!(line.first(), Some(b' ' | b'+' | b'-')) {
                return Err(self.err(
                    code::HUNK_COUNT_MISMATCH,
                    format!(
                        "`{}` is beyond the line counts of the hunk before it",
                        show(line)
                    ),
                ));
            } else if self.lines[self.i..]
                .iter()
                .all(|l| l.trim_ascii().is_empty())
            {
                // Blank lines at the very end carry nothing and change nothing.
                break;
            } else {
                return Err(self.err(
                    code::TRAILING_TEXT,
                    format!("text after the diff: `{}`", show(line)),
                ));
            }
        }
        if self.summary.files == 0 {
            return Err(Reason::new(
                code::NOT_A_DIFF,
                "the body contains no file section",
            ));
        }
        Ok(())
    }

    fn git_section(&mut self) -> Result<(), Reason> {
        let start = self.lineno();
        let line = self.lines[self.i];
        let rest = &line[b"diff --git ".len()..];
        if !(rest.starts_with(b"a/") || rest.starts_with(b"\"a/"))
            || !contains(rest, b" b/") && !contains(rest, b" \"b/")
        {
            return Err(self.err(
                code::MALFORMED_FILE_HEADER,
                format!("`{}` is not `diff --git a/PATH b/PATH`", show(line)),
            ));
        }
        self.i += 1;
        let mut header = GitHeader::default();
        while let Some(line) = self.peek() {
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            if text.starts_with(b"rename from ") {
                header.rename_from = true;
            } else if text.starts_with(b"rename to ") {
                header.rename_to = true;
            } else if text.starts_with(b"copy from ") {
                header.copy_from = true;
            } else if text.starts_with(b"copy to ") {
                header.copy_to = true;
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

    /// `--- OLD` then `+++ NEW`.
    fn file_headers(&mut self) -> Result<(), Reason> {
        self.i += 1;
        match self.peek() {
            Some(line) if line.starts_with(b"+++ ") && line.len() > 5 => {
                self.i += 1;
                Ok(())
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

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Parses `@@ -a[,b] +c[,d] @@...`, returning (b, d).
fn parse_hunk_header(line: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(line).ok()?;
    let rest = text.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, rest) = rest.split_once(" @@")?;
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\n')) {
        return None;
    }
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
