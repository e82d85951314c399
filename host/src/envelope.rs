//! Envelopes around a diff. A `git format-patch` mail is recognised without
//! asking (git applies one as it is); SWE-bench's `<patch>` tags and one
//! fenced ```` ```diff ```` block are taken apart only when capture is asked
//! to (`--extract`), since without asking a wrapped body is not a patch.
//!
//! A missing closing delimiter is `unterminated_envelope`: the one signal
//! that catches an answer cut exactly on a hunk boundary when no finish
//! reason was kept.

use crate::record::Reason;
use crate::record::ReasonCode;

/// What `capture --extract` takes the diff out of (a receipt's `extract`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Extract {
    /// The text between a `<patch>` line and a `</patch>` line.
    PatchTags,
    /// One fenced code block whose info string is `diff` or `patch`.
    Fence,
}

impl Extract {
    pub fn as_str(self) -> &'static str {
        match self {
            Extract::PatchTags => "patch-tags",
            Extract::Fence => "fence",
        }
    }

    /// The inverse of [`Extract::as_str`].
    pub fn parse(s: &str) -> Option<Extract> {
        [Extract::PatchTags, Extract::Fence]
            .into_iter()
            .find(|e| e.as_str() == s)
    }
}

/// The diff taken out of its envelope.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unwrapped {
    pub patch: Vec<u8>,
    pub envelope: Option<crate::record::PatchEnvelope>,
    pub reasons: Vec<Reason>,
}

/// Takes the diff out of `text`: first the envelope `extract` asks for,
/// then a format-patch mail if the result is one.
pub fn unwrap(text: &[u8], extract: Option<Extract>) -> Unwrapped {
    let mut out = match extract {
        None => Unwrapped {
            patch: text.to_vec(),
            ..Unwrapped::default()
        },
        Some(Extract::PatchTags) => patch_tags(text),
        Some(Extract::Fence) => fence(text),
    };
    if let Some(diff) = mbox(&out.patch) {
        out.patch = diff;
        out.envelope = Some(crate::record::PatchEnvelope::with_mbox(out.envelope));
    }
    out
}

fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|&b| b == b'\n').collect()
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn reason(code: ReasonCode, msg: impl Into<String>) -> Reason {
    Reason::new(code, msg)
}

/// `<patch>` and `</patch>`, each at the start of a line. A diff line never
/// starts with `<`, so a tag inside the diff cannot be mistaken for these.
fn patch_tags(text: &[u8]) -> Unwrapped {
    let lines = lines(text);
    let opens: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_ascii_start().starts_with(b"<patch>"))
        .collect();
    let Some(&open) = opens.first() else {
        return Unwrapped {
            envelope: None,
            patch: Vec::new(),
            reasons: vec![reason(
                ReasonCode::MissingEnvelope,
                "`--extract patch-tags`: no line starts with `<patch>`",
            )],
        };
    };
    let mut out = Unwrapped {
        envelope: Some(crate::record::PatchEnvelope::PatchTags),
        ..Unwrapped::default()
    };
    if opens.len() > 1 {
        out.reasons.push(reason(
            ReasonCode::AmbiguousEnvelope,
            format!(
                "`--extract patch-tags`: {} `<patch>` tags (lines {}); which one is the patch?",
                opens.len(),
                opens
                    .iter()
                    .map(|i| (i + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    // Text after `<patch>` on its own line belongs to the patch.
    let first = lines[open].trim_ascii_start();
    let after = &first[b"<patch>".len()..];
    if !after.trim_ascii().is_empty() {
        out.patch.extend_from_slice(after);
    }
    let close =
        (open + 1..lines.len()).find(|&i| lines[i].trim_ascii_start().starts_with(b"</patch>"));
    let end = close.unwrap_or(lines.len());
    for line in &lines[open + 1..end] {
        out.patch.extend_from_slice(line);
    }
    if close.is_none() {
        out.reasons.push(reason(
            ReasonCode::UnterminatedEnvelope,
            format!(
                "`<patch>` at line {} is never closed by `</patch>`: the answer was cut off",
                open + 1
            ),
        ));
    }
    out
}

/// The opening fence's character and length, when `line` opens a `diff`
/// or `patch` block.
fn diff_fence(line: &[u8]) -> Option<(u8, usize)> {
    let t = trim_eol(line);
    let c = *t.first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = t.iter().take_while(|&&b| b == c).count();
    if n < 3 {
        return None;
    }
    let info = t[n..].trim_ascii();
    let word = info
        .split(|b| b.is_ascii_whitespace())
        .next()
        .unwrap_or(b"");
    (word == b"diff" || word == b"patch").then_some((c, n))
}

/// A closing fence for an opening of `c` x `n`: at the start of the line
/// (a diff line never starts with a fence character), at least as long.
fn closes(line: &[u8], (c, n): (u8, usize)) -> bool {
    let t = trim_eol(line);
    let m = t.iter().take_while(|&&b| b == c).count();
    m >= n && t[m..].trim_ascii().is_empty()
}

/// Exactly one fenced `diff` block.
fn fence(text: &[u8]) -> Unwrapped {
    let lines = lines(text);
    // (opening line, fence, closing line).
    let mut blocks: Vec<(usize, (u8, usize), Option<usize>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(f) = diff_fence(lines[i]) {
            let close = (i + 1..lines.len()).find(|&j| closes(lines[j], f));
            blocks.push((i, f, close));
            i = close.map_or(lines.len(), |c| c + 1);
        } else {
            i += 1;
        }
    }
    let Some(&(open, _, close)) = blocks.first() else {
        return Unwrapped {
            envelope: None,
            patch: Vec::new(),
            reasons: vec![reason(
                ReasonCode::MissingEnvelope,
                "`--extract fence`: no fenced block opens with ```diff",
            )],
        };
    };
    let mut out = Unwrapped {
        envelope: Some(crate::record::PatchEnvelope::Fence),
        ..Unwrapped::default()
    };
    if blocks.len() > 1 {
        out.reasons.push(reason(
            ReasonCode::AmbiguousEnvelope,
            format!(
                "`--extract fence`: {} fenced diff blocks (lines {}); which one is the patch?",
                blocks.len(),
                blocks
                    .iter()
                    .map(|b| (b.0 + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let end = close.unwrap_or(lines.len());
    for line in &lines[open + 1..end] {
        out.patch.extend_from_slice(line);
    }
    if close.is_none() {
        out.reasons.push(reason(
            ReasonCode::UnterminatedEnvelope,
            format!(
                "the fence opened at line {} is never closed: the answer was cut off",
                open + 1
            ),
        ));
    }
    out
}

/// `From <40 hex> ...`: the first line of each mail `git format-patch`
/// writes.
fn is_mail_start(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"From ") else {
        return false;
    };
    rest.len() > 41 && rest[..40].iter().all(u8::is_ascii_hexdigit) && rest[40] == b' '
}

/// The diffs of a `git format-patch` mail (or series), without the headers,
/// message, diffstat and signature; `None` when `text` is not one. Leading
/// blank lines are allowed, as before a diff.
fn mbox(text: &[u8]) -> Option<Vec<u8>> {
    let lines = lines(text);
    let first = lines.iter().position(|l| !l.trim_ascii().is_empty())?;
    if !is_mail_start(lines[first]) {
        return None;
    }
    let starts: Vec<usize> = (first..lines.len())
        .filter(|&i| is_mail_start(lines[i]))
        .collect();
    let mut diff = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let mail = &lines[start..end];
        // Headers end at the first empty line.
        let body = mail
            .iter()
            .position(|l| trim_eol(l).is_empty())
            .map_or(mail.len(), |i| i + 1);
        // The message ends at `---`; the diffstat runs to the first header.
        let sep = (body..mail.len())
            .find(|&i| trim_eol(mail[i]) == b"---")
            .unwrap_or(body);
        let Some(from) = (sep..mail.len()).find(|&i| mail[i].starts_with(b"diff --git ")) else {
            continue;
        };
        // The signature `-- ` is followed by one version line and blanks.
        let to = (from..mail.len())
            .rev()
            .find(|&i| {
                mail[i] == b"-- \n"
                    && mail[i + 1..]
                        .iter()
                        .filter(|l| !l.trim_ascii().is_empty())
                        .count()
                        <= 1
            })
            .unwrap_or(mail.len());
        for line in &mail[from..to] {
            diff.extend_from_slice(line);
        }
    }
    Some(diff)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";

    #[test]
    fn patch_tags_take_the_inside_and_name_a_missing_close() {
        let text = format!("Here it is:\n<patch>\n{DIFF}</patch>\nThanks");
        let u = unwrap(text.as_bytes(), Some(Extract::PatchTags));
        assert_eq!(u.patch, DIFF.as_bytes());
        assert_eq!(u.envelope, Some(crate::record::PatchEnvelope::PatchTags));
        assert!(u.reasons.is_empty());

        let cut = format!("<patch>\n{DIFF}");
        let u = unwrap(cut.as_bytes(), Some(Extract::PatchTags));
        assert_eq!(u.patch, DIFF.as_bytes());
        assert_eq!(u.reasons[0].code, ReasonCode::UnterminatedEnvelope);

        let u = unwrap(DIFF.as_bytes(), Some(Extract::PatchTags));
        assert_eq!(u.reasons[0].code, ReasonCode::MissingEnvelope);
    }

    #[test]
    fn a_tag_inside_the_diff_does_not_close_it() {
        let inner = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+</patch>\n";
        let text = format!("<patch>\n{inner}</patch>\n");
        let u = unwrap(text.as_bytes(), Some(Extract::PatchTags));
        assert_eq!(u.patch, inner.as_bytes());
    }

    #[test]
    fn one_fence_is_taken_two_are_ambiguous() {
        let text = format!("Sure.\n```diff\n{DIFF}```\n");
        let u = unwrap(text.as_bytes(), Some(Extract::Fence));
        assert_eq!(u.patch, DIFF.as_bytes());
        assert!(u.reasons.is_empty());
        let two = format!("```diff\n{DIFF}```\nand\n```diff\n{DIFF}```\n");
        let u = unwrap(two.as_bytes(), Some(Extract::Fence));
        assert_eq!(u.reasons[0].code, ReasonCode::AmbiguousEnvelope);
        let open = format!("```diff\n{DIFF}");
        let u = unwrap(open.as_bytes(), Some(Extract::Fence));
        assert_eq!(u.reasons[0].code, ReasonCode::UnterminatedEnvelope);
        // A fence in a context line is indented by the diff's own prefix.
        let inner =
            "diff --git a/R.md b/R.md\n--- a/R.md\n+++ b/R.md\n@@ -1,2 +1,2 @@\n ```\n-a\n+b\n";
        let text = format!("````diff\n{inner}````\n");
        assert_eq!(
            unwrap(text.as_bytes(), Some(Extract::Fence)).patch,
            inner.as_bytes()
        );
    }

    #[test]
    fn format_patch_mail_is_unwrapped() {
        let mail = format!(
            "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n\
             From: A <a@b>\nSubject: [PATCH] x\n\nWhy.\n---\n x | 2 +-\n 1 file changed\n\n{DIFF}-- \n2.47.3\n\n"
        );
        let u = unwrap(mail.as_bytes(), None);
        assert_eq!(u.patch, DIFF.as_bytes());
        assert_eq!(u.envelope, Some(crate::record::PatchEnvelope::Mbox));
        // Prose that merely starts with "From" is not a mail.
        assert_eq!(unwrap(b"From here on:\n", None).envelope, None);
    }
}
