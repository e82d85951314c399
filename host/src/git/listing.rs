//! A tree's every entry, as one `git ls-tree -r -z` printed it: parsed
//! once into offsets into that text, indexed by path and by directory, and
//! kept (`listing_cache`) in a form read back without parsing again.

use crate::exit::{Error, Result};
use std::hash::BuildHasher;

/// The listing's hashes are seeded at random per process, so that no tree
/// can be made whose paths all collide (each insert would then walk every
/// entry before it).
type Seeded = foldhash::fast::RandomState;

/// A gitlink's mode.
pub(super) const GITLINK: u32 = 0o160000;
pub(super) const SYMLINK: u32 = 0o120000;

/// One file, link or submodule of a tree.
#[derive(Debug, Clone, Copy)]
pub struct TreeEntry<'a> {
    /// Git's mode (`0o100644`, `0o100755`, `0o120000`, `0o160000`).
    pub mode: u32,
    /// The object id, hex.
    pub oid: &'a str,
}

/// Every entry of a tree, recursively, read with one `git ls-tree`. The
/// entries are ranges of `git ls-tree`'s output, kept whole: no entry
/// costs an allocation of its own (a large tree has hundreds of thousands).
#[derive(Debug, Default)]
pub struct Listing {
    pub(super) sha256: bool,
    /// `git ls-tree -r -z` output, as read, from `start` on (before it: the
    /// cache entry's tag and length, when read back from the cache).
    text: Vec<u8>,
    start: usize,
    /// Per entry: where its path starts and ends in `text`, its object id's
    /// start, and its mode.
    spans: Vec<Span>,
    /// Entry numbers, by the hash of their path (under `seed`).
    index: hashbrown::HashTable<u32>,
    seed: Seeded,
    /// Every directory that holds an entry, without a trailing slash.
    pub(super) dirs: std::collections::HashSet<Box<[u8]>, Seeded>,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    path: (u32, u32),
    oid: u32,
    mode: u32,
}

impl Listing {
    fn oid_len(&self) -> usize {
        if self.sha256 { 64 } else { 40 }
    }

    /// Entry `i`'s path.
    pub fn path(&self, i: usize) -> &[u8] {
        let (start, end) = self.spans[i].path;
        &self.text[start as usize..end as usize]
    }

    /// Entry `i`'s mode.
    pub(super) fn mode(&self, i: usize) -> u32 {
        self.spans[i].mode
    }

    /// Entry `i`.
    pub fn entry(&self, i: usize) -> TreeEntry<'_> {
        let span = self.spans[i];
        let oid = &self.text[span.oid as usize..span.oid as usize + self.oid_len()];
        TreeEntry {
            mode: span.mode,
            // Checked to be ASCII hex when parsed.
            oid: std::str::from_utf8(oid).unwrap_or_default(),
        }
    }

    /// The number of the entry at `path`.
    pub(super) fn find(&self, path: &[u8]) -> Option<usize> {
        self.index
            .find(self.seed.hash_one(path), |&i| self.path(i as usize) == path)
            .map(|&i| i as usize)
    }

    /// [`Listing::find`], trying first the entry after `last` (a walk in
    /// name order mostly finds each entry there).
    pub(super) fn find_after(&self, path: &[u8], last: Option<usize>) -> Option<usize> {
        let next = last.map_or(0, |l| l + 1);
        if next < self.spans.len() && self.path(next) == path {
            return Some(next);
        }
        self.find(path)
    }

    /// What `path` is in the tree (files, links and submodules only).
    pub fn get(&self, path: &[u8]) -> Option<TreeEntry<'_>> {
        self.find(path).map(|i| self.entry(i))
    }

    /// How many entries the tree holds.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

impl super::Repo {
    /// Every file, link and submodule of `tree_ish`, with its mode and id.
    pub fn listing(&self, tree_ish: &str) -> Result<Listing> {
        let started = std::time::Instant::now();
        let out = super::run(
            self.command().args([
                "ls-tree",
                "-r",
                "-z",
                "--full-tree",
                "--end-of-options",
                tree_ish,
            ]),
            "ls-tree",
        )?;
        let listed = started.elapsed();
        let parsed = parse_listing(out.stdout, self.empty_tree == super::EMPTY_TREE_SHA256)
            .map_err(|e| Error::Internal(format!("unexpected git ls-tree output: {e}")));
        crate::profile::phase(
            "listing",
            &[("ls-tree", listed), ("parse", started.elapsed() - listed)],
        );
        parsed
    }
}

pub(super) fn parse_listing(text: Vec<u8>, sha256: bool) -> std::result::Result<Listing, String> {
    if u32::try_from(text.len()).is_err() {
        return Err("more than 4 GiB of entries".into());
    }
    let oid_len = if sha256 { 64 } else { 40 };
    // A record is at least its mode, type, id, a tab and a name: about 50
    // bytes.
    let mut spans = Vec::with_capacity(text.len() / 48 + 1);
    let mut at = 0usize;
    for rec in text.split(|&b| b == 0) {
        let start = at;
        at += rec.len() + 1;
        if rec.is_empty() {
            continue;
        }
        let tab = rec
            .iter()
            .position(|&b| b == b'\t')
            .ok_or_else(|| format!("no tab in `{}`", String::from_utf8_lossy(rec)))?;
        let meta = std::str::from_utf8(&rec[..tab]).map_err(|e| e.to_string())?;
        let mut fields = meta.split(' ');
        let (Some(mode), Some(_kind), Some(oid)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(format!("short record `{meta}`"));
        };
        if oid.len() != oid_len || !oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("object id `{oid}`"));
        }
        let mode = u32::from_str_radix(mode, 8).map_err(|e| format!("mode `{mode}`: {e}"))?;
        spans.push(Span {
            path: ((start + tab + 1) as u32, (start + rec.len()) as u32),
            oid: (start + (oid.as_ptr() as usize - rec.as_ptr() as usize)) as u32,
            mode,
        });
    }
    let parts = Parts::index(&text, 0, spans, sha256)?;
    Ok(parts.listing(text))
}

/// The entry table of what [`Listing::encode`] wrote: read in one linear
/// pass, with every offset moved to where the text lies in the bytes read,
/// and nothing indexed yet. A caller that has not yet authenticated the
/// bytes reads this much beside the check, and indexes only what passed
/// (indexing crafted entries, the same path a million times, is quadratic).
pub(super) struct Table {
    start: usize,
    end: usize,
    spans: Vec<Span>,
}

impl Table {
    /// The table of the encoding found at `at` in `bytes`.
    pub(super) fn read(bytes: &[u8], at: usize) -> std::result::Result<Table, String> {
        let u32_at = |at: usize| -> std::result::Result<usize, String> {
            at.checked_add(4)
                .and_then(|to| bytes.get(at..to))
                .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")) as usize)
                .ok_or_else(|| "truncated".to_string())
        };
        let start = at.checked_add(4).ok_or("truncated")?;
        let end = start.checked_add(u32_at(at)?).ok_or("truncated")?;
        let n = u32_at(end)?;
        let table = &bytes[end + 4..];
        if Some(table.len()) != n.checked_mul(16) {
            return Err("length does not match its entries".into());
        }
        // Offsets are kept from the start of `bytes`, where the text stays.
        let moved = u32::try_from(start).map_err(|_| "too long")?;
        let word = |w: &[u8]| u32::from_le_bytes(w.try_into().expect("4 bytes"));
        let spans = table
            .chunks_exact(16)
            .map(|e| -> std::result::Result<Span, String> {
                let shift = |v: u32| v.checked_add(moved).ok_or("offset out of range");
                Ok(Span {
                    path: (shift(word(&e[0..4]))?, shift(word(&e[4..8]))?),
                    oid: shift(word(&e[8..12]))?,
                    mode: word(&e[12..16]),
                })
            })
            .collect::<std::result::Result<Vec<_>, String>>()?;
        Ok(Table { start, end, spans })
    }

    /// The table's entries (checked to lie in the text of `bytes`),
    /// indexed.
    pub(super) fn index(self, bytes: &[u8], sha256: bool) -> std::result::Result<Parts, String> {
        let text = bytes.get(..self.end).ok_or("truncated")?;
        Parts::index(text, self.start, self.spans, sha256)
    }
}

/// A listing's entries and indexes, before it holds its text.
pub(super) struct Parts {
    sha256: bool,
    start: usize,
    /// Where the text ends.
    end: usize,
    spans: Vec<Span>,
    index: hashbrown::HashTable<u32>,
    seed: Seeded,
    dirs: std::collections::HashSet<Box<[u8]>, Seeded>,
}

impl Parts {
    /// `spans` (each checked to lie in `text`, which starts at `start`),
    /// indexed by path and directory.
    fn index(
        text: &[u8],
        start: usize,
        spans: Vec<Span>,
        sha256: bool,
    ) -> std::result::Result<Parts, String> {
        let oid_len = if sha256 { 64 } else { 40 };
        let mut index = hashbrown::HashTable::with_capacity(spans.len());
        let seed = Seeded::default();
        let mut dirs = std::collections::HashSet::with_hasher(seed.clone());
        let mut parent: &[u8] = &[];
        for (i, span) in spans.iter().enumerate() {
            let (from, to) = (span.path.0 as usize, span.path.1 as usize);
            if from < start
                || from > to
                || to > text.len()
                || (span.oid as usize) < start
                || span.oid as usize + oid_len > text.len()
            {
                return Err(format!("entry {i} lies outside the listing"));
            }
            let path = &text[from..to];
            // Entries come sorted, so most share the last one's directory.
            let dir = path
                .iter()
                .rposition(|&b| b == b'/')
                .map_or(&path[..0], |slash| &path[..slash]);
            if dir != parent {
                let mut end = path.len();
                while let Some(slash) = path[..end].iter().rposition(|&b| b == b'/') {
                    if !dirs.insert(Box::<[u8]>::from(&path[..slash])) {
                        break;
                    }
                    end = slash;
                }
                parent = dir;
            }
            let i = u32::try_from(i).map_err(|_| "too many entries")?;
            // A tree names each path once (git fsck: duplicateEntries); one
            // that names a path twice could not be judged one way.
            match index.entry(
                seed.hash_one(path),
                |&j| {
                    let (s, e) = spans[j as usize].path;
                    &text[s as usize..e as usize] == path
                },
                |&j| {
                    let (s, e) = spans[j as usize].path;
                    seed.hash_one(&text[s as usize..e as usize])
                },
            ) {
                hashbrown::hash_table::Entry::Occupied(_) => {
                    return Err(format!(
                        "the tree names `{}` twice",
                        String::from_utf8_lossy(path)
                    ));
                }
                hashbrown::hash_table::Entry::Vacant(slot) => {
                    slot.insert(i);
                }
            }
        }
        Ok(Parts {
            sha256,
            start,
            end: text.len(),
            spans,
            index,
            seed,
            dirs,
        })
    }

    /// What [`Listing::encode`] wrote, found at `at` in `bytes`; an error
    /// for anything else. Reads `bytes` where they lie: [`Parts::listing`]
    /// then takes them whole, so a large listing is never moved.
    #[cfg(test)]
    pub(super) fn decode(
        bytes: &[u8],
        at: usize,
        sha256: bool,
    ) -> std::result::Result<Parts, String> {
        Table::read(bytes, at)?.index(bytes, sha256)
    }

    /// The listing of `text`, the bytes these parts were read from.
    pub(super) fn listing(self, mut text: Vec<u8>) -> Listing {
        text.truncate(self.end);
        Listing {
            sha256: self.sha256,
            text,
            start: self.start,
            spans: self.spans,
            index: self.index,
            seed: self.seed,
            dirs: self.dirs,
        }
    }
}

impl Listing {
    /// The listing as bytes [`Table::read`] reads back without parsing
    /// `git ls-tree`'s text again: the text, then each entry's offsets and
    /// mode.
    pub(super) fn encode(&self) -> Vec<u8> {
        let text = &self.text[self.start..];
        let mut out = Vec::with_capacity(8 + text.len() + self.spans.len() * 16);
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text);
        out.extend_from_slice(&(self.spans.len() as u32).to_le_bytes());
        let start = self.start as u32;
        for s in &self.spans {
            for v in [s.path.0 - start, s.path.1 - start, s.oid - start, s.mode] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// What [`Listing::encode`] wrote; an error for anything else.
    #[cfg(test)]
    fn decode(bytes: Vec<u8>, sha256: bool) -> std::result::Result<Listing, String> {
        Ok(Parts::decode(&bytes, 0, sha256)?.listing(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_knows_its_directories() {
        let raw = b"100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\ta/b/c.txt\x00160000 commit 1111111111111111111111111111111111111111\tsub\x00120000 blob 2222222222222222222222222222222222222222\ttop link\0";
        let l = parse_listing(raw.to_vec(), false).unwrap();
        assert_eq!(l.len(), 3);
        assert!(l.dirs.contains(&b"a"[..]) && l.dirs.contains(&b"a/b"[..]));
        assert!(!l.dirs.contains(&b"sub"[..]));
        assert_eq!(l.get(b"sub").unwrap().mode, GITLINK);
        assert_eq!(l.get(b"top link").unwrap().mode, SYMLINK);
        assert_eq!(
            l.get(b"a/b/c.txt").unwrap().oid,
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(l.path(2), b"top link");
        assert!(l.get(b"a/b").is_none() && l.get(b"top").is_none());
        assert!(parse_listing(b"100644 blob abc\tx\0".to_vec(), false).is_err());
        // The cached form reads back as the same listing, and a damaged one
        // is refused rather than indexed out of bounds.
        let back = Listing::decode(l.encode(), false).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back.path(2), b"top link");
        assert!(back.dirs.contains(&b"a/b"[..]) && back.get(b"sub").is_some());
        // Read where it lies after a cache entry's tag, it is the same
        // listing, and encodes as it did.
        let mut tagged = vec![0xAA; 32];
        tagged.extend(l.encode());
        let at = Parts::decode(&tagged, 32, false).unwrap().listing(tagged);
        assert_eq!(at.path(0), b"a/b/c.txt");
        assert_eq!(at.get(b"top link").unwrap().mode, SYMLINK);
        assert_eq!(at.encode(), l.encode());
        assert_eq!(at.find_after(b"sub", Some(0)), Some(1));
        assert_eq!(at.find_after(b"a/b/c.txt", Some(1)), Some(0));
        assert_eq!(at.find_after(b"a/b", Some(0)), None);
        let mut bad = l.encode();
        let last = bad.len() - 16;
        bad[last..last + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Listing::decode(bad, false).is_err());
        assert!(Listing::decode(l.encode()[..20].to_vec(), false).is_err());
        assert!(parse_listing(b"100644 blob abc".to_vec(), false).is_err());
        // A tree that names a path twice is refused, not read one way.
        let twice = b"100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\ta\x00100644 blob ce013625030ba8dba906f756967f9e9ca394464a\ta\x00";
        let err = parse_listing(twice.to_vec(), false).unwrap_err();
        assert_eq!(err, "the tree names `a` twice");
    }
}
