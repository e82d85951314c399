//! The working tree against a tree object, judged in process: one `git
//! ls-tree` of the base, then one parallel walk of the tree that hashes each
//! tracked file as git would (its blob id) and compares. No index is read
//! or written (the agent's is never trusted, and a private one built from
//! the base has no stat data, so `git status` on it re-reads every file in
//! one thread), no attribute or filter applies (bytes are hashed as they
//! are), and nothing is followed: every directory and file is opened by one
//! name relative to its parent's descriptor with `O_NOFOLLOW`.
//!
//! What counts as changed is what `git status --porcelain=v2 -uall
//! --ignored` on a private index from the base reports, except where git
//! would look away:
//! - a FIFO, socket or device is a change (git skips it);
//! - an unpopulated submodule's directory is walked, so a file put there is
//!   a change (git shows nothing for it).
//!
//! Git's own rules kept: entries named exactly `.git` are never listed; an
//! untracked directory holding one (another repository) is one entry,
//! `dir/`; a populated submodule (a base gitlink whose directory holds a
//! `.git`) is left to `git status`, which knows its commit and dirt
//! ([`Delta::Submodule`]).

use super::blob::BlobHasher;
use super::stat_cache::{Stat, StatCache};
use crate::exit::{Error, Result};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::collections::BTreeSet;
use std::ffi::{CStr, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// A gitlink's mode.
const GITLINK: u32 = 0o160000;
const SYMLINK: u32 = 0o120000;

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
    sha256: bool,
    /// `git ls-tree -r -z` output, as read.
    text: Vec<u8>,
    /// Per entry: where its path starts and ends in `text`, its object id's
    /// start, and its mode.
    spans: Vec<Span>,
    /// Entry numbers, by the hash of their path.
    index: hashbrown::HashTable<u32>,
    /// Every directory that holds an entry, without a trailing slash.
    dirs: FxHashSet<Box<[u8]>>,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    path: (u32, u32),
    oid: u32,
    mode: u32,
}

fn path_hash(path: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(path)
}

impl Listing {
    fn oid_len(&self) -> usize {
        if self.sha256 { 64 } else { 40 }
    }

    /// `git ls-tree -r -z`'s output this listing was parsed from.
    pub(super) fn text(&self) -> &[u8] {
        &self.text
    }

    /// Entry `i`'s path.
    pub fn path(&self, i: usize) -> &[u8] {
        let (start, end) = self.spans[i].path;
        &self.text[start as usize..end as usize]
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
    fn find(&self, path: &[u8]) -> Option<usize> {
        self.index
            .find(path_hash(path), |&i| self.path(i as usize) == path)
            .map(|&i| i as usize)
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
    // Sized once for the entries the text can hold (a record is at least
    // its mode, type, id, a tab and a name: about 50 bytes), so the index is
    // never rebuilt while it fills (each rebuild re-reads every path).
    let guess = text.len() / 48 + 1;
    let mut listing = Listing {
        sha256,
        text,
        spans: Vec::with_capacity(guess),
        index: hashbrown::HashTable::with_capacity(guess),
        ..Listing::default()
    };
    let oid_len = listing.oid_len();
    let mut at = 0usize;
    let text = std::mem::take(&mut listing.text);
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
        let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
        let meta = std::str::from_utf8(meta).map_err(|e| e.to_string())?;
        let mut fields = meta.split(' ');
        let (Some(mode), Some(_kind), Some(oid)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(format!("short record `{meta}`"));
        };
        if oid.len() != oid_len || !oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("object id `{oid}`"));
        }
        let mode = u32::from_str_radix(mode, 8).map_err(|e| format!("mode `{mode}`: {e}"))?;
        let mut end = path.len();
        while let Some(slash) = path[..end].iter().rposition(|&b| b == b'/') {
            if listing.dirs.contains(&path[..slash]) {
                break;
            }
            listing.dirs.insert(path[..slash].into());
            end = slash;
        }
        let i = u32::try_from(listing.spans.len()).map_err(|_| "too many entries")?;
        let path_start = start + tab + 1;
        let oid_start = start + (oid.as_ptr() as usize - rec.as_ptr() as usize);
        listing.spans.push(Span {
            path: (path_start as u32, (start + rec.len()) as u32),
            oid: oid_start as u32,
            mode,
        });
        let spans = &listing.spans;
        let hash = path_hash(path);
        listing.index.insert_unique(hash, i, |&j| {
            let (s, e) = spans[j as usize].path;
            path_hash(&text[s as usize..e as usize])
        });
    }
    listing.text = text;
    Ok(listing)
}

/// The working tree's changes against a listing.
pub enum Delta {
    /// Changed, added and deleted paths; `untracked`: the added ones (with
    /// `dir/` for another repository), for a caller that filters ignored
    /// files.
    Paths {
        changed: BTreeSet<Vec<u8>>,
        untracked: Vec<Vec<u8>>,
    },
    /// A submodule is checked out at this path: only `git status` can
    /// judge it.
    Submodule(Vec<u8>),
}

/// What a walk found below one directory.
#[derive(Default)]
struct Found {
    changed: Vec<Vec<u8>>,
    untracked: Vec<Vec<u8>>,
    submodule: Option<Vec<u8>>,
}

impl Found {
    fn merge(mut self, other: Found) -> Found {
        self.changed.extend(other.changed);
        self.untracked.extend(other.untracked);
        self.submodule = self.submodule.or(other.submodule);
        self
    }
}

struct Walk<'a> {
    root: &'a Path,
    listing: &'a Listing,
    seen: Vec<AtomicBool>,
    cache: Option<&'a StatCache>,
}

/// Compares the working tree at `root` with `listing`; `cache`: what an
/// earlier walk of this tree against this listing learnt (a file whose
/// stat data it recorded is not read), and where this walk records.
pub fn worktree_delta(root: &Path, listing: &Listing, cache: Option<&StatCache>) -> Result<Delta> {
    let walk = Walk {
        root,
        listing,
        cache,
        seen: (0..listing.len()).map(|_| AtomicBool::new(false)).collect(),
    };
    let top = nix::fcntl::open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::read(root, e.into()))?;
    // SAFETY: `open` returned a descriptor nothing else owns.
    let top = unsafe { OwnedFd::from_raw_fd(top) };
    let found = walk.dir(top, &[], true)?;
    if let Some(sub) = found.submodule {
        return Ok(Delta::Submodule(sub));
    }
    let mut changed: BTreeSet<Vec<u8>> = found.changed.into_iter().collect();
    // Tracked entries the walk never met are gone.
    for (i, seen) in walk.seen.iter().enumerate() {
        if !seen.load(Ordering::Relaxed) {
            changed.insert(listing.path(i).to_vec());
        }
    }
    changed.extend(found.untracked.iter().cloned());
    Ok(Delta::Paths {
        changed,
        untracked: found.untracked,
    })
}

/// What kind a directory entry is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Link,
    /// A FIFO, socket or device.
    Other,
}

fn kind_of_mode(mode: u32) -> Kind {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFLNK => Kind::Link,
        _ => Kind::Other,
    }
}

fn join(rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(rel.len() + 1 + name.len());
    if !rel.is_empty() {
        p.extend_from_slice(rel);
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

impl Walk<'_> {
    fn path(&self, rel: &[u8]) -> std::path::PathBuf {
        self.root.join(OsStr::from_bytes(rel))
    }

    /// Walks the directory `fd` (at `rel`; `tracked`: the base holds
    /// something below it).
    fn dir(&self, fd: OwnedFd, rel: &[u8], tracked: bool) -> Result<Found> {
        let mut dir =
            nix::dir::Dir::from(fd).map_err(|e| Error::read(&self.path(rel), e.into()))?;
        let mut names: Vec<(std::ffi::CString, Option<Kind>)> = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|e| Error::read(&self.path(rel), e.into()))?;
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b".." | b".git") {
                continue;
            }
            let kind = entry.file_type().map(|t| match t {
                nix::dir::Type::Directory => Kind::Dir,
                nix::dir::Type::File => Kind::File,
                nix::dir::Type::Symlink => Kind::Link,
                _ => Kind::Other,
            });
            names.push((name.to_owned(), kind));
        }
        let dirfd = dir.as_raw_fd();
        names
            .par_iter()
            .map(|(name, kind)| self.entry(dirfd, rel, name, *kind, tracked))
            .try_reduce(Found::default, |a, b| Ok(a.merge(b)))
    }

    fn entry(
        &self,
        dirfd: RawFd,
        rel: &[u8],
        cname: &CStr,
        kind: Option<Kind>,
        tracked: bool,
    ) -> Result<Found> {
        let path = join(rel, cname.to_bytes());
        let mut found = Found::default();
        let kind = match kind {
            Some(k) => k,
            None => match nix::sys::stat::fstatat(Some(dirfd), cname, AtFlags::AT_SYMLINK_NOFOLLOW)
            {
                Ok(st) => kind_of_mode(st.st_mode),
                // Gone since it was listed: not what the base holds.
                Err(Errno::ENOENT) => {
                    found.changed.push(path);
                    return Ok(found);
                }
                Err(e) => return Err(Error::read(&self.path(&path), e.into())),
            },
        };
        let index = if tracked {
            self.listing.find(path.as_slice())
        } else {
            None
        };
        if let Some(i) = index {
            self.seen[i].store(true, Ordering::Relaxed);
        }
        let base = index.map(|i| self.listing.entry(i));
        if kind == Kind::Dir {
            let sub_tracked = tracked && self.listing.dirs.contains(path.as_slice());
            let fd = match open_at(dirfd, cname, OFlag::O_DIRECTORY) {
                Ok(fd) => fd,
                Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => {
                    found.changed.push(path);
                    return Ok(found);
                }
                Err(e) => return Err(Error::read(&self.path(&path), e.into())),
            };
            let repo = holds_dot_git(&fd);
            if let Some(b) = base {
                if b.mode == GITLINK {
                    if repo {
                        found.submodule = Some(path);
                        return Ok(found);
                    }
                    // Unpopulated: whatever is in it is a change.
                    return self.dir(fd, &path, false);
                }
                // A file became a directory: the file is gone (not marked
                // seen would say so too) and everything in it is new.
                found.changed.push(path.clone());
            }
            if repo && !sub_tracked {
                let mut p = path;
                p.push(b'/');
                found.untracked.push(p);
                return Ok(found);
            }
            return self.dir(fd, &path, sub_tracked);
        }
        let Some(i) = index else {
            found.untracked.push(path);
            return Ok(found);
        };
        if let (Some(cache), Kind::File) = (self.cache, kind)
            && let Some(known) = cache.known(i)
            && let Ok(st) =
                nix::sys::stat::fstatat(Some(dirfd), cname, AtFlags::AT_SYMLINK_NOFOLLOW)
            && Stat::of_stat(&st) == *known
        {
            cache.confirm(i, *known);
            return Ok(found);
        }
        if !self.same(dirfd, cname, &path, kind, i)? {
            found.changed.push(path);
        }
        Ok(found)
    }

    /// Whether the entry `name` of `dirfd` (of `kind`) is the listing's
    /// entry `i`; a file that is has its stat data confirmed in the cache.
    fn same(&self, dirfd: RawFd, name: &CStr, path: &[u8], kind: Kind, i: usize) -> Result<bool> {
        let base = self.listing.entry(i);
        let mut confirm = None;
        let mut hasher = BlobHasher::new(self.listing.sha256);
        match (kind, base.mode) {
            (Kind::Link, SYMLINK) => {
                let target = match nix::fcntl::readlinkat(Some(dirfd), name) {
                    Ok(t) => t,
                    Err(Errno::ENOENT | Errno::EINVAL) => return Ok(false),
                    Err(e) => return Err(Error::read(&self.path(path), e.into())),
                };
                let target = target.as_bytes();
                hasher.header(target.len() as u64);
                hasher.update(target);
            }
            (Kind::File, mode) if mode & 0o170000 == 0o100000 => {
                let fd = match open_at(dirfd, name, OFlag::O_NONBLOCK) {
                    Ok(fd) => fd,
                    Err(Errno::ENOENT | Errno::ELOOP) => return Ok(false),
                    Err(e) => return Err(Error::read(&self.path(path), e.into())),
                };
                let file = std::fs::File::from(fd);
                let meta = file
                    .metadata()
                    .map_err(|e| Error::read(&self.path(path), e))?;
                use std::os::unix::fs::MetadataExt;
                if !meta.is_file() || (meta.mode() & 0o100 != 0) != (mode == 0o100755) {
                    return Ok(false);
                }
                hasher.header(meta.len());
                let read = hasher
                    .read_from(file, meta.len())
                    .map_err(|e| Error::read(&self.path(path), e))?;
                // Changed while it was read: not the base's, whatever it was.
                if read != meta.len() {
                    return Ok(false);
                }
                confirm = Some(Stat::of_metadata(&meta));
            }
            _ => return Ok(false),
        }
        let same = hasher.finish() == base.oid;
        if let (true, Some(cache), Some(stat)) = (same, self.cache, confirm) {
            cache.confirm(i, stat);
        }
        Ok(same)
    }
}

/// Opens `name` in `dirfd` for reading without following it.
fn open_at(dirfd: RawFd, name: &CStr, extra: OFlag) -> nix::Result<OwnedFd> {
    let fd = nix::fcntl::openat(
        Some(dirfd),
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | extra,
        Mode::empty(),
    )?;
    // SAFETY: `openat` returned a descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the directory `fd` holds another repository as git decides it:
/// a `.git` directory with a `HEAD`, or a `.git` file naming one
/// (`gitdir: `). Any other `.git` entry is not listed, and the directory is
/// walked.
fn holds_dot_git(fd: &OwnedFd) -> bool {
    let at = Some(fd.as_raw_fd());
    match nix::sys::stat::fstatat(at, c".git", AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) if kind_of_mode(st.st_mode) == Kind::Dir => {
            nix::sys::stat::fstatat(at, c".git/HEAD", AtFlags::AT_SYMLINK_NOFOLLOW).is_ok()
        }
        Ok(st) if kind_of_mode(st.st_mode) == Kind::File => {
            use std::io::Read;
            let Ok(file) = open_at(fd.as_raw_fd(), c".git", OFlag::O_NONBLOCK) else {
                return false;
            };
            let mut head = [0u8; 8];
            std::fs::File::from(file).read_exact(&mut head).is_ok() && &head == b"gitdir: "
        }
        _ => false,
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
        assert!(parse_listing(b"100644 blob abc".to_vec(), false).is_err());
    }
}
