//! What a path holds now, as a span records it
//! (`agent_ledger_trace::entry`): read through a capability on the tree,
//! taken from the walk's own read (`git::Wanted`), or read from a
//! snapshot's tree object.

use super::{Judged, display_path};
use crate::exit::{Error, Result};
use rayon::prelude::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub fn abs(repo: &Path, path: &[u8]) -> PathBuf {
    repo.join(OsStr::from_bytes(path))
}

/// What `path` in `repo` holds, as a span records it
/// (`agent_ledger_trace::entry`): the sha256 of a file's bytes or a
/// symlink's target, with its kind; `None` when absent or a directory. Read
/// as [`entry_in`] reads it.
pub fn hash_at(repo: &Path, path: &[u8]) -> Result<Option<String>> {
    entry_in(&open_tree(repo)?, repo, path)
}

/// `root` opened as a capability: nothing read or written through it
/// leaves it, whatever symlink is swapped in along a path.
pub fn open_tree(root: &Path) -> Result<cap_std::fs::Dir> {
    cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority())
        .map_err(|e| Error::read(root, e))
}

/// What `path` holds in the tree `dir` (opened on `root`): through the
/// capability, so no symlink leads out of the tree (an escaping one is an
/// error), the last component is never followed, and a file is opened
/// without blocking and must be a regular file (a FIFO swapped in cannot
/// stall the caller).
pub fn entry_in(dir: &cap_std::fs::Dir, root: &Path, path: &[u8]) -> Result<Option<String>> {
    use agent_ledger_trace::entry::{Kind, digest};
    use std::os::unix::fs::PermissionsExt;
    let rel = Path::new(OsStr::from_bytes(path));
    let p = root.join(rel);
    // The usual path is a regular file: opened at once (its last component
    // never followed, no blocking), then one fstat says what it is.
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    crate::paths::leaf_only(&mut options);
    match dir.open_with(rel, &options) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A symlink (or a loop along the way): looked at below.
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {}
        Err(e) => return Err(Error::read(&p, e)),
        Ok(file) => {
            let file = file.into_std();
            let meta = file.metadata().map_err(|e| Error::read(&p, e))?;
            if meta.is_dir() {
                return Ok(None);
            }
            if !meta.is_file() {
                return Err(Error::data(&p, "not a regular file"));
            }
            let (h, _) = crate::digest::sha256_open_file(&file, meta.len())
                .map_err(|e| Error::read(&p, e))?;
            return Ok(Some(digest(
                Kind::of_file_mode(meta.permissions().mode()),
                &h,
            )));
        }
    }
    match dir.symlink_metadata(rel) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::read(&p, e)),
        Ok(m) if m.file_type().is_symlink() => {
            let target = dir
                .read_link_contents(rel)
                .map_err(|e| Error::read(&p, e))?;
            Ok(Some(digest(
                Kind::Symlink,
                &crate::digest::sha256_hex(target.as_os_str().as_bytes()),
            )))
        }
        Ok(m) if m.is_dir() => Ok(None),
        Ok(_) => {
            let file = open_regular(dir, root, path, false)?;
            let mode = file
                .metadata()
                .map_err(|e| Error::read(&p, e))?
                .permissions()
                .mode();
            let (h, _) = crate::digest::sha256_reader(file).map_err(|e| Error::read(&p, e))?;
            Ok(Some(digest(Kind::of_file_mode(mode), &h)))
        }
    }
}

/// Opens `path` in the tree `dir` (opened on `root`) without following its
/// last component and without blocking; anything but a regular file is an
/// error. `write`: opened to be rewritten (created if absent, truncated
/// only once it is known to be a regular file).
pub fn open_regular(
    dir: &cap_std::fs::Dir,
    root: &Path,
    path: &[u8],
    write: bool,
) -> Result<std::fs::File> {
    let rel = Path::new(OsStr::from_bytes(path));
    let p = root.join(rel);
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(!write).write(write).create(write);
    crate::paths::leaf_only(&mut options);
    let file = dir
        .open_with(rel, &options)
        .map_err(|e| {
            if write {
                Error::write(&p, e)
            } else {
                Error::read(&p, e)
            }
        })?
        .into_std();
    let meta = file.metadata().map_err(|e| Error::read(&p, e))?;
    if !meta.is_file() {
        return Err(Error::data(&p, "not a regular file"));
    }
    if write {
        file.set_len(0).map_err(|e| Error::write(&p, e))?;
    }
    Ok(file)
}

/// What each of `paths` holds in the judged tree, as a span records it:
/// what the working tree's walk read (`wanted`), else read now (the working
/// tree in parallel, a snapshot from its tree object).
pub(super) fn held_now(
    tree: Judged<'_>,
    repo: &Path,
    paths: &[&[u8]],
    wanted: &crate::git::Wanted<'_>,
) -> Result<std::collections::BTreeMap<Vec<u8>, Result<Option<String>>>> {
    match tree {
        Judged::Worktree => {
            let mut held = std::collections::BTreeMap::new();
            let mut unread = Vec::new();
            for &p in paths {
                match wanted.get(p) {
                    Some(entry) => {
                        held.insert(p.to_vec(), Ok(Some(entry.to_string())));
                    }
                    None => unread.push(p),
                }
            }
            if !unread.is_empty() {
                let dir = open_tree(repo)?;
                held.extend(
                    unread
                        .par_iter()
                        .map(|p| (p.to_vec(), entry_in(&dir, repo, p)))
                        .collect::<Vec<_>>(),
                );
            }
            Ok(held)
        }
        Judged::Snapshot { git, tree } => {
            // A path no tree can hold is an error once owned, as a path the
            // working tree cannot open is.
            let (nameable, not): (Vec<&[u8]>, Vec<&[u8]>) =
                paths.iter().partition(|p| crate::git::Repo::nameable(p));
            let mut held: std::collections::BTreeMap<_, _> = git
                .entries_at(tree, &nameable)?
                .into_iter()
                .map(|(p, held)| (p, Ok(held)))
                .collect();
            for p in not {
                held.insert(
                    p.to_vec(),
                    Err(Error::data(
                        Path::new(&display_path(p)),
                        crate::git::Repo::UNNAMEABLE,
                    )),
                );
            }
            Ok(held)
        }
    }
}
