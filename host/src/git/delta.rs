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
            && Stat::of_stat(&st) == known
        {
            cache.confirm(i, known);
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
