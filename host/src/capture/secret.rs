//! Keeping the API key out of everything live capture stores.
//!
//! A server (or a model asked to repeat it) can send the key back in any
//! encoding the response carries: its literal bytes, a JSON string with
//! some characters `\u`-escaped (or `\/`), or split across the string
//! values of several SSE events, each harmless alone, that the extractor
//! joins into the patch. Three layers:
//!
//! 1. [`Masker`]: while the body streams to disk, every literal copy is
//!    overwritten with `*` before its bytes are written (a copy split
//!    across two reads included).
//! 2. [`mask_decoded`]: once the body is whole, every JSON string is
//!    decoded and the decoded values of each field name (`text`, `delta`,
//!    `content`, ...) are joined in order, as an extractor joins them; each
//!    copy found there has the raw bytes it was decoded from overwritten
//!    with `*` (an escape's bytes all of them), which keeps the JSON valid.
//! 3. The caller extracts from the masked body as the record will, and when
//!    the key is still in anything the extractor returns (an encoding the
//!    layers above do not know), stores the body with every byte masked:
//!    fail closed, the exchange still on record.
//!
//! Each copy found counts toward `api_key_echoed`.

use std::collections::BTreeMap;

/// Masks the key in a body as it grows, holding back the few bytes that
/// could still begin a copy split across two reads.
pub struct Masker<'k> {
    key: &'k [u8],
    /// How much of the body has been handed out to be written.
    flushed: usize,
    pub found: usize,
}

impl<'k> Masker<'k> {
    pub fn new(key: &'k [u8]) -> Self {
        Masker {
            key,
            flushed: 0,
            found: 0,
        }
    }

    /// Appends `chunk` to `body`, masks each whole copy of the key that
    /// could end in it, and returns the bytes that are now final.
    pub fn push<'b>(&mut self, body: &'b mut Vec<u8>, chunk: &[u8]) -> &'b [u8] {
        let hold = self.key.len().saturating_sub(1);
        let from = body.len().saturating_sub(hold);
        body.extend_from_slice(chunk);
        self.found += mask(&mut body[from..], self.key);
        let end = body.len().saturating_sub(hold).max(self.flushed);
        let out = &body[self.flushed..end];
        self.flushed = end;
        out
    }

    /// The bytes held back: no copy can begin in them any more.
    pub fn finish<'b>(&mut self, body: &'b [u8]) -> &'b [u8] {
        let out = &body[self.flushed..];
        self.flushed = body.len();
        out
    }
}

/// Overwrites each copy of `key` in `bytes` with `*`; returns how many.
pub fn mask(bytes: &mut [u8], key: &[u8]) -> usize {
    let mut found = 0;
    let mut i = 0;
    while !key.is_empty() && i + key.len() <= bytes.len() {
        if &bytes[i..i + key.len()] == key {
            bytes[i..i + key.len()].fill(b'*');
            found += 1;
            i += key.len();
        } else {
            i += 1;
        }
    }
    found
}

/// [`mask`] for text the server chose (a header, an error message).
pub fn mask_text(text: String, key: &str, found: &mut usize) -> String {
    let copies = if key.is_empty() {
        0
    } else {
        text.matches(key).count()
    };
    if copies == 0 {
        return text;
    }
    *found += copies;
    text.replace(key, &"*".repeat(key.len()))
}

/// One decoded byte of a JSON string and the raw bytes it came from.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

/// Every JSON string in `body`, decoded, grouped by the field it is the
/// value of (object keys themselves under `""`, values with no key under
/// `"[]"`): per field, the decoded bytes of its values joined in order and,
/// when `spans`, where each decoded byte came from.
fn decoded_fields(body: &[u8], spans: bool) -> BTreeMap<Vec<u8>, (Vec<u8>, Vec<Span>)> {
    let mut fields: BTreeMap<Vec<u8>, (Vec<u8>, Vec<Span>)> = BTreeMap::new();
    let mut field: Vec<u8> = b"[]".to_vec();
    let mut i = 0;
    while i < body.len() {
        if body[i] != b'"' {
            // A newline outside a string ends an SSE line: what follows
            // is another event, with no key pending.
            if body[i] == b'\n' {
                field = b"[]".to_vec();
            }
            i += 1;
            continue;
        }
        let (decoded, raw, next) = string_at(body, i + 1, spans);
        i = next;
        let mut j = i;
        while j < body.len() && matches!(body[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        let is_key = body.get(j) == Some(&b':');
        let slot = fields
            .entry(if is_key { Vec::new() } else { field.clone() })
            .or_default();
        slot.0.extend_from_slice(&decoded);
        slot.1.extend_from_slice(&raw);
        if is_key {
            field = decoded;
        }
    }
    fields
}

/// The JSON string whose contents start at `at`: its decoded bytes, their
/// raw spans (when `spans`), and where scanning goes on. A raw newline ends
/// a string (JSON has none; SSE lines end there).
fn string_at(body: &[u8], mut at: usize, spans: bool) -> (Vec<u8>, Vec<Span>, usize) {
    let mut out = Vec::new();
    let mut raw = Vec::new();
    let mut push = |out: &mut Vec<u8>, bytes: &[u8], start: usize, end: usize| {
        out.extend_from_slice(bytes);
        if spans {
            raw.extend(std::iter::repeat_n(
                Span {
                    start: start as u32,
                    end: end as u32,
                },
                bytes.len(),
            ));
        }
    };
    while at < body.len() {
        match body[at] {
            b'"' => return (out, raw, at + 1),
            b'\n' => return (out, raw, at),
            b'\\' => {
                let start = at;
                let (ch, len) = escape_at(body, at);
                let mut utf8 = [0u8; 4];
                match ch {
                    Some(c) => push(
                        &mut out,
                        c.encode_utf8(&mut utf8).as_bytes(),
                        start,
                        start + len,
                    ),
                    None => push(&mut out, &body[start..start + len], start, start + len),
                }
                at += len;
            }
            b => {
                push(&mut out, &[b], at, at + 1);
                at += 1;
            }
        }
    }
    (out, raw, at)
}

/// The escape at `at` (a backslash): the character it stands for (`None`
/// when it is not a valid escape) and how many raw bytes it takes.
fn escape_at(body: &[u8], at: usize) -> (Option<char>, usize) {
    let simple = |c: u8| match c {
        b'"' => Some('"'),
        b'\\' => Some('\\'),
        b'/' => Some('/'),
        b'b' => Some('\u{8}'),
        b'f' => Some('\u{c}'),
        b'n' => Some('\n'),
        b'r' => Some('\r'),
        b't' => Some('\t'),
        _ => None,
    };
    let Some(&next) = body.get(at + 1) else {
        return (None, 1);
    };
    if next != b'u' {
        return (simple(next), 2);
    }
    let unit = |from: usize| -> Option<u32> {
        let hex = body.get(from..from + 4)?;
        u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let Some(first) = unit(at + 2) else {
        return (None, 2);
    };
    if (0xD800..0xDC00).contains(&first)
        && body.get(at + 6..at + 8) == Some(b"\\u")
        && let Some(second) = unit(at + 8).filter(|u| (0xDC00..0xE000).contains(u))
    {
        let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return (char::from_u32(c), 12);
    }
    (char::from_u32(first), 6)
}

/// Finds every copy of `key` in the decoded strings of `body` (each
/// field's values joined in order, so a copy split across SSE events is
/// one copy) and overwrites the raw bytes each copy came from with `*`.
/// Returns how many copies it masked. Literal copies should be masked
/// first ([`mask`]): they are not counted twice, being `*` by then.
pub fn mask_decoded(body: &mut [u8], key: &[u8]) -> usize {
    if key.is_empty() {
        return 0;
    }
    let found = |text: &[u8]| text.windows(key.len()).any(|w| w == key);
    // The cheap pass first: most bodies hold no copy at all.
    if !decoded_fields(body, false)
        .values()
        .any(|(text, _)| found(text))
    {
        return 0;
    }
    let mut copies = 0;
    for (text, spans) in decoded_fields(body, true).into_values() {
        let mut i = 0;
        while i + key.len() <= text.len() {
            if &text[i..i + key.len()] == key {
                for s in &spans[i..i + key.len()] {
                    body[s.start as usize..s.end as usize].fill(b'*');
                }
                copies += 1;
                i += key.len();
            } else {
                i += 1;
            }
        }
    }
    copies
}

/// Whether `key` is still in anything the extractor finds in `body` read
/// as `format` (the patch and its paths as git unquotes them, the model,
/// the completion id, the reasons' messages, an error payload's message):
/// an encoding the masks above do not know.
pub fn still_in(format: crate::provider::BodyFormat, body: &[u8], key: &[u8]) -> bool {
    if key.is_empty() {
        return false;
    }
    let has = |bytes: &[u8]| bytes.windows(key.len()).any(|w| w == key);
    let found = crate::provider::extract(format, body);
    has(&found.patch)
        // The diff's paths as git (and replay) unquote them: `"\163\153..."`
        // spells the key in octal escapes that only decoding shows.
        || crate::diff::header_paths(&found.patch, 0).iter().any(|p| has(p))
        || found.model.as_deref().is_some_and(|m| has(m.as_bytes()))
        || found
            .completion_id
            .as_deref()
            .is_some_and(|m| has(m.as_bytes()))
        || found.reasons.iter().any(|r| has(r.message.as_bytes()))
        || crate::provider::error_message(body).is_some_and(|m| has(m.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"sk-test-0123456789abcdef";

    #[test]
    fn a_key_split_across_reads_is_masked_before_it_is_written() {
        let key = b"sk-abc123";
        let body = b"data: {\"error\":\"bad key sk-abc123, again sk-abc123\"}\n\nsk-abc12";
        let want = b"data: {\"error\":\"bad key *********, again *********\"}\n\nsk-abc12";
        for size in 1..=body.len() {
            let mut masker = Masker::new(key);
            let mut stored = Vec::new();
            let mut written = Vec::new();
            for chunk in body.chunks(size) {
                written.extend_from_slice(masker.push(&mut stored, chunk));
                // Nothing handed out to be written is a copy of the key.
                assert!(!written.windows(key.len()).any(|w| w == key), "{size}");
            }
            written.extend_from_slice(masker.finish(&stored));
            assert_eq!(written, want, "chunks of {size}");
            assert_eq!(stored, want, "chunks of {size}");
            assert_eq!(masker.found, 2, "chunks of {size}");
        }
    }

    #[test]
    fn a_key_spelled_in_a_git_quoted_path_is_found_after_unquoting() {
        let octal: String = KEY.iter().map(|b| format!("\\{b:03o}")).collect();
        let body = format!(
            "diff --git \"a/{octal}\" \"b/{octal}\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/{octal}\"\n@@ -0,0 +1 @@\n+x\n"
        );
        assert!(!body.as_bytes().windows(KEY.len()).any(|w| w == KEY));
        assert!(still_in(
            crate::provider::BodyFormat::Raw,
            body.as_bytes(),
            KEY
        ));
        assert!(!still_in(
            crate::provider::BodyFormat::Raw,
            b"diff --git a/x b/x\n",
            KEY
        ));
    }

    #[test]
    fn an_escaped_copy_is_masked_and_the_json_stays_valid() {
        let mut body =
            br#"{"id":"x","content":[{"type":"text","text":"key: \u0073k-test\u002d0123456789abcdef\/"}]}"#
                .to_vec();
        assert_eq!(mask(&mut body, KEY), 0);
        assert_eq!(mask_decoded(&mut body, KEY), 1);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("key: *"), "{text}");
        assert!(!text.contains("sk-test"), "{text}");
        assert!(text.ends_with('/'), "{text}");
    }

    #[test]
    fn a_copy_split_across_sse_events_is_masked_in_each() {
        let mut body = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"the key is sk-test-01\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"23456789abcdef, done\"}}\n\n".to_vec();
        assert_eq!(mask_decoded(&mut body, KEY), 1);
        let text = String::from_utf8(body).unwrap();
        let (first, second) = ("*".repeat(10), "*".repeat(14));
        assert!(text.contains(&format!("the key is {first}\"")), "{text}");
        assert!(text.contains(&format!("\"{second}, done\"")), "{text}");
    }

    #[test]
    fn a_body_without_the_key_is_left_alone() {
        let body = br#"{"text":"sk-test-0123456789abcde","other":"f"}"#.to_vec();
        let mut masked = body.clone();
        assert_eq!(mask_decoded(&mut masked, KEY), 0);
        assert_eq!(masked, body);
    }

    #[test]
    fn a_surrogate_pair_escape_decodes_to_one_character() {
        assert_eq!(escape_at(br"\ud83d\ude00", 0), (Some('\u{1F600}'), 12));
        assert_eq!(escape_at(br"\u00zz", 0), (None, 2));
        assert_eq!(escape_at(br"\q", 0), (None, 2));
    }
}
