//! Completion ids in captured output: the trace a model call leaves.
//!
//! Providers name every completion: OpenAI chat `chatcmpl-…`, OpenAI
//! Responses `resp_…`, Anthropic `msg_…`. If a property's or the test
//! command's output shows one other than the captured completion's, the
//! replay talked to a model (`endpoint_coupled`). The prefixes alone are
//! common words in code (`msg_len`), so an id needs a long run of id
//! characters after its prefix and no word character before it.

use std::collections::BTreeSet;

/// (prefix, the fewest id characters that must follow it).
const KINDS: &[(&[u8], usize)] = &[(b"chatcmpl-", 20), (b"resp_", 24), (b"msg_", 20)];

/// Ids longer than this are cut here (they are still reported).
const MAX_ID: usize = 128;

fn is_id_char(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_word_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Every completion id in `bytes`, added to `out`.
pub fn scan(bytes: &[u8], out: &mut BTreeSet<String>) {
    scan_to(bytes, out, true)
}

/// As [`scan`]; unless `at_end`, an id that runs to the end of `bytes` may
/// go on in the next chunk and is left for then.
fn scan_to(bytes: &[u8], out: &mut BTreeSet<String>, at_end: bool) {
    for (prefix, min) in KINDS {
        let mut from = 0;
        while let Some(at) = find(&bytes[from..], prefix).map(|i| i + from) {
            from = at + 1;
            if at > 0 && is_word_char(bytes[at - 1]) {
                continue;
            }
            let body = &bytes[at + prefix.len()..];
            let n = body.iter().take_while(|&&b| is_id_char(b)).count();
            if !at_end && n == body.len() {
                continue;
            }
            if n >= *min {
                let end = at + prefix.len() + n.min(MAX_ID);
                out.insert(String::from_utf8_lossy(&bytes[at..end]).into_owned());
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// [`scan`] over a stream read in chunks: an id split across two chunks is
/// still found.
#[derive(Debug, Default)]
pub struct Scanner {
    tail: Vec<u8>,
    pub found: BTreeSet<String>,
}

impl Scanner {
    pub fn feed(&mut self, chunk: &[u8]) {
        let keep = MAX_ID + 16;
        self.tail.extend_from_slice(chunk);
        scan_to(&self.tail, &mut self.found, false);
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
    }
}

impl Scanner {
    /// The ids found, once the stream has ended.
    pub fn finish(mut self) -> BTreeSet<String> {
        scan_to(&self.tail, &mut self.found, true);
        self.found
    }
}

/// The ids in `found` other than `captured`, the completion the transcript
/// receipt names: each is a model call the replay made. An id the
/// captured one merely starts with (a cut print of it) is not another call.
pub fn foreign<'a>(found: &'a [String], captured: Option<&str>) -> Vec<&'a str> {
    found
        .iter()
        .map(String::as_str)
        .filter(|id| captured.is_none_or(|c| !c.starts_with(id) && !id.starts_with(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str) -> Vec<String> {
        let mut out = BTreeSet::new();
        scan(text.as_bytes(), &mut out);
        out.into_iter().collect()
    }

    #[test]
    fn finds_each_provider_id_and_ignores_words() {
        assert_eq!(
            ids("got chatcmpl-9x8Yk2mQpL4rT7vW1zA3bC5dE6f from the api"),
            ["chatcmpl-9x8Yk2mQpL4rT7vW1zA3bC5dE6f"]
        );
        assert_eq!(
            ids(r#"{"id":"resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"}"#),
            ["resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"]
        );
        assert_eq!(
            ids("id=msg_01XFDUDYJgAACzvnptvVoYEL"),
            ["msg_01XFDUDYJgAACzvnptvVoYEL"]
        );
        assert!(
            ids("msg_len = 3; self.msg_count; resp_code=200; my_resp_0123456789012345678901234567")
                .is_empty()
        );
    }

    #[test]
    fn an_id_split_across_chunks_is_found() {
        let mut s = Scanner::default();
        s.feed(b"log: chatcmpl-AAAAAAAAAA");
        s.feed(b"BBBBBBBBBB");
        s.feed(b"CC");
        let found = s.finish();
        assert_eq!(
            found.into_iter().collect::<Vec<_>>(),
            ["chatcmpl-AAAAAAAAAABBBBBBBBBBCC"]
        );
    }

    #[test]
    fn only_ids_other_than_the_captured_one_are_foreign() {
        let found = vec![
            "chatcmpl-AAAAAAAAAAAAAAAAAAAAAAAA".to_string(),
            "chatcmpl-BBBBBBBBBBBBBBBBBBBBBBBB".to_string(),
        ];
        assert_eq!(
            foreign(&found, Some("chatcmpl-AAAAAAAAAAAAAAAAAAAAAAAA")),
            ["chatcmpl-BBBBBBBBBBBBBBBBBBBBBBBB"]
        );
        assert_eq!(foreign(&found, None).len(), 2);
    }
}
