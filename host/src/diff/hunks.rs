//! What the parser reads inside a file's section: strip levels from the
//! names, hunk headers, and the base85 lines of a binary payload.

use super::paths;

/// The strip level `git apply` needs for each pair of names; `None` when
/// the names say nothing (one side is `/dev/null`, or they differ in more
/// than a prefix).
pub(super) fn strip_from_names(old: Option<&[u8]>, new: Option<&[u8]>) -> Option<u32> {
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
pub(super) fn strip_for_move(rest: &[u8], from: &[u8], to: &[u8]) -> Option<u32> {
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
pub(super) fn parse_hunk_header(line: &[u8]) -> Option<(u64, u64)> {
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

pub(super) const BASE85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Decodes one git base85 line (`<len char><5*k chars>\n`), appending bytes.
pub(super) fn decode_base85_line(line: &[u8], out: &mut Vec<u8>) -> Option<()> {
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
