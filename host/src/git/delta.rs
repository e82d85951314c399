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
use super::listing::{GITLINK, Listing, SYMLINK};
use super::stat_cache::{Stat, StatCache};
use crate::exit::{Error, Result};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::ffi::{CStr, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

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
    wanted: Option<&'a Wanted<'a>>,
}

/// Paths whose entries a caller wants as a span records them
/// (`agent_ledger_trace::entry`: a regular file's sha256 with its kind),
/// taken from the walk's own read of each such file it reads anyway (a
/// tracked file whose stat data is not known, or a new one): one read, not
/// two. A path the walk does not read so (absent, a link, one whose size
/// changed while it was read, one the stat cache vouched for) has no entry
/// here, and the caller reads it itself.
pub struct Wanted<'a> {
    /// Sorted, distinct.
    paths: &'a [&'a [u8]],
    held: Vec<std::sync::OnceLock<String>>,
}

impl<'a> Wanted<'a> {
    /// `paths`: sorted and distinct.
    pub fn new(paths: &'a [&'a [u8]]) -> Wanted<'a> {
        debug_assert!(paths.windows(2).all(|w| w[0] < w[1]));
        Wanted {
            paths,
            held: paths.iter().map(|_| std::sync::OnceLock::new()).collect(),
        }
    }

    fn slot(&self, path: &[u8]) -> Option<&std::sync::OnceLock<String>> {
        let i = self.paths.binary_search(&path).ok()?;
        self.held.get(i)
    }

    /// What the walk read at `path`.
    pub fn get(&self, path: &[u8]) -> Option<&str> {
        self.slot(path)?.get().map(String::as_str)
    }

    /// Records `path`'s entry: `meta` is the open file's, `read` how many
    /// bytes were hashed into `sha256`; kept only if that is its size.
    fn record(&self, path: &[u8], meta: &std::fs::Metadata, read: u64, sha256: sha2::Sha256) {
        use sha2::Digest;
        use std::os::unix::fs::MetadataExt;
        if read != meta.len() || !meta.is_file() {
            return;
        }
        if let Some(slot) = self.slot(path) {
            let kind = agent_ledger_trace::entry::Kind::of_file_mode(meta.mode());
            let hex = hex::encode(sha256.finalize());
            let _ = slot.set(agent_ledger_trace::entry::digest(kind, &hex));
        }
    }
}

/// Compares the working tree at `root` with `listing`; `cache`: what an
/// earlier walk of this tree against this listing learnt (a file whose
/// stat data it recorded is not read), and where this walk records;
/// `wanted`: paths whose entries the caller wants from the files the walk
/// reads.
pub fn worktree_delta(
    root: &Path,
    listing: &Listing,
    cache: Option<&StatCache>,
    wanted: Option<&Wanted<'_>>,
) -> Result<Delta> {
    let walk = Walk {
        root,
        listing,
        cache,
        wanted,
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

/// A directory entry's name (`names[at..end]`, with its NUL), its kind if
/// the directory said, and its first bytes as a number to sort by.
struct Item {
    key: u64,
    at: usize,
    end: usize,
    kind: Option<Kind>,
}

/// The first eight bytes of `name` (NUL-terminated), big-endian: names
/// ordered by it and then by their bytes are in byte order.
fn sort_key(name: &[u8]) -> u64 {
    let mut key = [0u8; 8];
    let n = name.len().saturating_sub(1).min(8);
    key[..n].copy_from_slice(&name[..n]);
    u64::from_be_bytes(key)
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

impl Walk<'_> {
    fn path(&self, rel: &[u8]) -> std::path::PathBuf {
        self.root.join(OsStr::from_bytes(rel))
    }

    /// Walks the directory `fd` (at `rel`; `tracked`: the base holds
    /// something below it).
    fn dir(&self, fd: OwnedFd, rel: &[u8], tracked: bool) -> Result<Found> {
        let mut dir =
            nix::dir::Dir::from(fd).map_err(|e| Error::read(&self.path(rel), e.into()))?;
        // Every name, NUL-terminated, in one buffer: a large tree's walk
        // allocates per directory, not per entry.
        let mut names: Vec<u8> = Vec::new();
        let mut items: Vec<Item> = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|e| Error::read(&self.path(rel), e.into()))?;
            let name = entry.file_name().to_bytes_with_nul();
            if matches!(name, b".\0" | b"..\0" | b".git\0") {
                continue;
            }
            let kind = entry.file_type().map(|t| match t {
                nix::dir::Type::Directory => Kind::Dir,
                nix::dir::Type::File => Kind::File,
                nix::dir::Type::Symlink => Kind::Link,
                _ => Kind::Other,
            });
            items.push(Item {
                key: sort_key(name),
                at: names.len(),
                end: names.len() + name.len(),
                kind,
            });
            names.extend_from_slice(name);
        }
        // In name order, which is the listing's order for a directory's
        // files: most lookups then find their entry right after the last
        // one (`Listing::find_after`), in memory just read.
        items.sort_unstable_by(|a, b| {
            a.key
                .cmp(&b.key)
                .then_with(|| names[a.at..a.end].cmp(&names[b.at..b.end]))
        });
        let dirfd = dir.as_raw_fd();
        // `rel/` (nothing at the top), to which each name is appended.
        let mut prefix = rel.to_vec();
        if !prefix.is_empty() {
            prefix.push(b'/');
        }
        items
            .par_iter()
            .map_init(
                || (prefix.clone(), None),
                |(path, last), item| {
                    let name = CStr::from_bytes_with_nul(&names[item.at..item.end])
                        .map_err(|_| Error::Internal("a name with a NUL".into()))?;
                    path.truncate(prefix.len());
                    path.extend_from_slice(name.to_bytes());
                    self.entry(dirfd, path, name, item.kind, tracked, last)
                },
            )
            .try_reduce(Found::default, |a, b| Ok(a.merge(b)))
    }

    /// The entry `cname` of `dirfd`, at `path` in the tree.
    fn entry(
        &self,
        dirfd: RawFd,
        path: &[u8],
        cname: &CStr,
        kind: Option<Kind>,
        tracked: bool,
        last: &mut Option<usize>,
    ) -> Result<Found> {
        let mut found = Found::default();
        let kind = match kind {
            Some(k) => k,
            None => match nix::sys::stat::fstatat(Some(dirfd), cname, AtFlags::AT_SYMLINK_NOFOLLOW)
            {
                Ok(st) => kind_of_mode(st.st_mode),
                // Gone since it was listed: not what the base holds.
                Err(Errno::ENOENT) => {
                    found.changed.push(path.to_vec());
                    return Ok(found);
                }
                Err(e) => return Err(Error::read(&self.path(path), e.into())),
            },
        };
        let index = if tracked {
            self.listing.find_after(path, *last)
        } else {
            None
        };
        if let Some(i) = index {
            self.seen[i].store(true, Ordering::Relaxed);
            *last = Some(i);
        }
        if kind == Kind::Dir {
            let sub_tracked = tracked && self.listing.dirs.contains(path);
            let fd = match open_at(dirfd, cname, OFlag::O_DIRECTORY) {
                Ok(fd) => fd,
                Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => {
                    found.changed.push(path.to_vec());
                    return Ok(found);
                }
                Err(e) => return Err(Error::read(&self.path(path), e.into())),
            };
            let repo = holds_dot_git(&fd);
            if let Some(mode) = index.map(|i| self.listing.mode(i)) {
                if mode == GITLINK {
                    if repo {
                        found.submodule = Some(path.to_vec());
                        return Ok(found);
                    }
                    // Unpopulated: whatever is in it is a change.
                    return self.dir(fd, path, false);
                }
                // A file became a directory: the file is gone (not marked
                // seen would say so too) and everything in it is new.
                found.changed.push(path.to_vec());
            }
            if repo && !sub_tracked {
                let mut p = path.to_vec();
                p.push(b'/');
                found.untracked.push(p);
                return Ok(found);
            }
            return self.dir(fd, path, sub_tracked);
        }
        let Some(i) = index else {
            if kind == Kind::File {
                self.hash_new(dirfd, cname, path);
            }
            found.untracked.push(path.to_vec());
            return Ok(found);
        };
        if let (Some(cache), Kind::File) = (self.cache, kind)
            && let Some(known) = cache.known(i)
            && let Ok(st) =
                nix::sys::stat::fstatat(Some(dirfd), cname, AtFlags::AT_SYMLINK_NOFOLLOW)
            && Stat::of_stat(&st) == known
        {
            cache.confirm(i, known);
            return Ok(found);
        }
        if !self.same(dirfd, cname, path, kind, i)? {
            found.changed.push(path.to_vec());
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
                let wanted = self.wanted.filter(|w| w.slot(path).is_some());
                let mut entry = wanted.map(|_| <sha2::Sha256 as sha2::Digest>::new());
                let read = hasher
                    .read_from(file, meta.len(), entry.as_mut())
                    .map_err(|e| Error::read(&self.path(path), e))?;
                if let (Some(w), Some(sha256)) = (wanted, entry) {
                    w.record(path, &meta, read, sha256);
                }
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

impl Walk<'_> {
    /// A new file's entry, when the caller wants it: opened without
    /// following or blocking. Anything but a regular file read whole, and
    /// any error, is left to the caller (which reports an error only for a
    /// path it owns).
    fn hash_new(&self, dirfd: RawFd, name: &CStr, path: &[u8]) {
        let Some(wanted) = self.wanted.filter(|w| w.slot(path).is_some()) else {
            return;
        };
        let Ok(fd) = open_at(dirfd, name, OFlag::O_NONBLOCK) else {
            return;
        };
        let file = std::fs::File::from(fd);
        let Ok(meta) = file.metadata() else {
            return;
        };
        if !meta.is_file() {
            return;
        }
        let mut sha256 = <sha2::Sha256 as sha2::Digest>::new();
        if let Ok(read) = super::blob::read_all(file, meta.len(), |chunk| {
            sha2::Digest::update(&mut sha256, chunk)
        }) {
            wanted.record(path, &meta, read, sha256);
        }
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
