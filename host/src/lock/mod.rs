//! The fixture lock: every file under the fixture roots, hashed before any
//! property runs, and the comparison that turns drift into
//! `fixture_mismatch`.
//!
//! Files are hashed in parallel (rayon) with SHA-NI where the CPU has it.
//! Symlinks are recorded as links (their target text) and never followed, so
//! a link cannot pull content from outside the root into the lock; every
//! read goes through a cap-std `Dir` on the repository, so neither can a
//! root reached through a link.

use crate::digest::{sha256_hex, sha256_open_file};
use crate::exit::{Error, Result};
use crate::record::{Drift, FixtureLock, LockEntry};
use cap_std::fs::Dir;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// Normalises a configured root to a repository-relative POSIX path, refusing
/// anything that could leave the repository.
pub fn normalize_root(root: &str) -> Result<String> {
    let path = Path::new(root);
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) if p.eq_ignore_ascii_case(".git") => {
                return Err(Error::Usage(format!(
                    "fixture root `{root}` is inside `.git`: the repository's own metadata is never a fixture"
                )));
            }
            Component::Normal(p) => parts.push(
                p.to_str()
                    .ok_or_else(|| Error::Usage(format!("fixture root `{root}` is not UTF-8")))?
                    .to_string(),
            ),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Error::Usage(format!(
                    "fixture root `{root}` must be a relative path inside the repository"
                )));
            }
        }
    }
    Ok(parts.join("/"))
}

/// What a scan of the roots found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Entries sorted bytewise by path, without duplicates.
    pub entries: Vec<LockEntry>,
    /// Roots that do not exist or hold no file.
    pub empty_roots: Vec<String>,
}

/// Time spent walking and hashing, summed over threads, for the profile.
#[derive(Default)]
struct Spent {
    walk_ns: std::sync::atomic::AtomicU64,
    hash_ns: std::sync::atomic::AtomicU64,
}

impl Spent {
    fn add(counter: &std::sync::atomic::AtomicU64, since: std::time::Instant) {
        counter.fetch_add(
            since.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

/// Walks and hashes `roots` (normalised, relative to `repo`).
///
/// The tree may be a patched, untrusted one: every read goes through a
/// cap-std [`Dir`] opened on `repo`, which no `..` or link can walk out of.
/// A root reached through a link out of the tree is an error naming it,
/// never an empty root.
///
/// One parallel walk hashes each file as it meets it (rayon: whichever
/// thread is free takes the next directory or file), so walking a large
/// tree overlaps hashing it, and each file is opened by its one name in
/// its directory.
pub fn scan(repo: &Path, roots: &[String]) -> Result<Scan> {
    let started = std::time::Instant::now();
    let spent = Spent::default();
    let top = Dir::open_ambient_dir(repo, cap_std::ambient_authority())
        .map_err(|e| Error::read(repo, e))?;
    let mut entries: Vec<LockEntry> = Vec::new();
    let mut empty_roots = Vec::new();
    for root in roots {
        let found = if root.is_empty() {
            walk(&top, repo, "", &spent)?
        } else {
            match top.symlink_metadata(root) {
                Ok(meta) => {
                    let ft = meta.file_type();
                    if ft.is_dir() {
                        let dir = top
                            .open_dir(root)
                            .map_err(|e| Error::read(&repo.join(root), e))?;
                        walk(&dir, repo, root, &spent)?
                    } else {
                        // A root that is one file: hashed in the directory
                        // that holds it.
                        let (parent, name) = match root.rsplit_once('/') {
                            Some((p, n)) => (Some(p), n),
                            None => (None, root.as_str()),
                        };
                        let dir = match parent {
                            Some(p) => {
                                top.open_dir(p).map_err(|e| Error::read(&repo.join(p), e))?
                            }
                            None => top.try_clone().map_err(|e| Error::read(repo, e))?,
                        };
                        vec![hash_entry(&dir, repo, name, root, ft, &spent)?]
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(Error::read(&repo.join(root), e)),
            }
        };
        if found.is_empty() {
            empty_roots.push(root.clone());
        }
        entries.extend(found);
    }
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    entries.dedup_by(|a, b| a.path == b.path);
    let ms = |c: &std::sync::atomic::AtomicU64| {
        std::time::Duration::from_nanos(c.load(std::sync::atomic::Ordering::Relaxed))
    };
    crate::profile::phase(
        "lock",
        &[
            ("wall", started.elapsed()),
            ("walk-cpu", ms(&spent.walk_ns)),
            ("hash-cpu", ms(&spent.hash_ns)),
        ],
    );
    Ok(Scan {
        entries,
        empty_roots,
    })
}

fn rel_join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// The most components a fixture path may have. The walk descends one
/// directory handle (and one stack frame) per level, in parallel, so a
/// hostile tree nested thousands deep would exhaust a thread's stack (an
/// abort, not a verdict); git's own `core.maxTreeDepth` is 2048.
pub const MAX_DEPTH: usize = 256;

/// Everything under `dir` (at `rel` in `repo`), hashed, following no link.
fn walk(dir: &Dir, repo: &Path, rel: &str, spent: &Spent) -> Result<Vec<LockEntry>> {
    use rayon::prelude::*;
    let listed = std::time::Instant::now();
    let at = || repo.join(rel);
    let depth = if rel.is_empty() {
        0
    } else {
        rel.split('/').count()
    };
    let mut items: Vec<(String, cap_std::fs::FileType)> = Vec::new();
    for item in dir.entries().map_err(|e| Error::read(&at(), e))? {
        let item = item.map_err(|e| Error::read(&at(), e))?;
        let name = item.file_name();
        // The repository's own metadata is never a fixture.
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let path = || at().join(&name);
        if depth >= MAX_DEPTH {
            return Err(Error::data(
                &path(),
                format!(
                    "fixture path is more than {MAX_DEPTH} components deep, past what a lock walks"
                ),
            ));
        }
        let Some(text) = name.to_str() else {
            return Err(Error::data(
                &path(),
                "fixture path is not UTF-8 and cannot be recorded",
            ));
        };
        if text.contains('\n') {
            return Err(Error::data(
                &path(),
                "fixture path contains a newline, which dirHash cannot represent",
            ));
        }
        let ft = item.file_type().map_err(|e| Error::read(&path(), e))?;
        items.push((text.to_string(), ft));
    }
    // In path order (a directory as its name and a `/`), so that each
    // directory's entries come back sorted and the scan's final sort of the
    // whole list is one pass over it.
    items.sort_unstable_by(|(a, at), (b, bt)| {
        (a.bytes().chain(at.is_dir().then_some(b'/')))
            .cmp(b.bytes().chain(bt.is_dir().then_some(b'/')))
    });
    Spent::add(&spent.walk_ns, listed);
    let found = items
        .par_iter()
        .with_max_len(1)
        .map(|(name, ft)| {
            let rel = rel_join(rel, name);
            if ft.is_dir() {
                let opened = std::time::Instant::now();
                let sub = dir
                    .open_dir(name)
                    .map_err(|e| Error::read(&repo.join(&rel), e))?;
                Spent::add(&spent.walk_ns, opened);
                walk(&sub, repo, &rel, spent).map(Found::Many)
            } else {
                hash_entry(dir, repo, name, &rel, *ft, spent).map(Found::One)
            }
        })
        .collect::<Result<Vec<Found>>>()?;
    let mut entries = Vec::with_capacity(
        found
            .iter()
            .map(|f| match f {
                Found::One(_) => 1,
                Found::Many(v) => v.len(),
            })
            .sum(),
    );
    for f in found {
        match f {
            Found::One(e) => entries.push(e),
            Found::Many(v) => entries.extend(v),
        }
    }
    Ok(entries)
}

/// What one item of a directory holds: its own entry, or a directory's.
enum Found {
    One(LockEntry),
    Many(Vec<LockEntry>),
}

/// The entry for `name` in `dir` (at `rel` in `repo`): a file or a
/// symlink; anything else is refused.
fn hash_entry(
    dir: &Dir,
    repo: &Path,
    name: &str,
    rel: &str,
    ft: cap_std::fs::FileType,
    spent: &Spent,
) -> Result<LockEntry> {
    let started = std::time::Instant::now();
    let abs = || repo.join(rel);
    let entry = if ft.is_symlink() {
        let target = dir
            .read_link_contents(name)
            .map_err(|e| Error::read(&abs(), e))?;
        let bytes = target.as_os_str().as_bytes();
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Error::data(&abs(), "symlink target is not UTF-8"))?;
        LockEntry {
            path: rel.to_string(),
            kind: crate::record::EntryKind::Symlink,
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            target: Some(text.to_string()),
            executable: false,
        }
    } else if ft.is_file() {
        use std::os::unix::fs::PermissionsExt;
        // The name was a file when listed; opened without following a link
        // or waiting on a FIFO swapped in since, and checked again.
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        crate::paths::leaf_only(&mut options);
        let file = dir
            .open_with(name, &options)
            .map_err(|e| Error::read(&abs(), e))?
            .into_std();
        let meta = file.metadata().map_err(|e| Error::read(&abs(), e))?;
        if !meta.is_file() {
            return Err(Error::data(&abs(), "not a regular file"));
        }
        let mode = meta.permissions().mode();
        let (sha256, size) =
            sha256_open_file(&file, meta.len()).map_err(|e| Error::read(&abs(), e))?;
        LockEntry {
            path: rel.to_string(),
            kind: crate::record::EntryKind::File,
            size,
            sha256,
            target: None,
            // As git decides it: the owner's execute bit.
            executable: mode & 0o100 != 0,
        }
    } else {
        return Err(Error::data(
            &abs(),
            "fixture root holds a special file (fifo, socket or device)",
        ));
    };
    Spent::add(&spent.hash_ns, started);
    Ok(entry)
}

/// in-toto `dirHash`: sha256 of `"<sha256>  <path>\n"` for every regular file,
/// sorted bytewise by path. Equal to
/// `find . -type f | cut -c3- | LC_ALL=C sort | xargs -r sha256sum | sha256sum`.
pub fn dir_hash(entries: &[LockEntry]) -> String {
    let mut text = String::new();
    for e in entries
        .iter()
        .filter(|e| e.kind == crate::record::EntryKind::File)
    {
        text.push_str(&e.sha256);
        text.push_str("  ");
        text.push_str(&e.path);
        text.push('\n');
    }
    sha256_hex(text.as_bytes())
}

/// The one way a lock record is made: `entries` (sorted, as `scan` returns
/// them) under `roots`, building on the transcript `transcript_sha256`.
pub fn build(
    run: &crate::ledger::RunId,
    transcript_sha256: &str,
    base_revision: Option<&str>,
    roots: Vec<String>,
    entries: Vec<LockEntry>,
) -> FixtureLock {
    FixtureLock {
        schema: crate::record::SCHEMA,
        record: "fixture_lock".into(),
        run_id: run.to_string(),
        transcript_sha256: transcript_sha256.to_string(),
        base_revision: base_revision.map(str::to_string),
        roots,
        count: entries.len() as u64,
        dir_hash: dir_hash(&entries),
        files: entries,
        evaluation: None,
        none: None,
    }
}

/// Checks a lock record is internally consistent: sorted unique paths, the
/// count, and the dirHash. A lock with a row removed or edited fails here.
pub fn check_consistent(lock: &FixtureLock, path: &Path) -> Result<()> {
    if lock.count != lock.files.len() as u64 {
        return Err(Error::data(
            path,
            format!(
                "field `count` is {} but `files` has {} entries",
                lock.count,
                lock.files.len()
            ),
        ));
    }
    if lock
        .files
        .windows(2)
        .any(|w| w[0].path.as_bytes() >= w[1].path.as_bytes())
    {
        return Err(Error::data(
            path,
            "field `files` is not sorted by path without duplicates",
        ));
    }
    let actual = dir_hash(&lock.files);
    if actual != lock.dir_hash {
        return Err(Error::data(
            path,
            format!(
                "field `dir_hash` is {} but the files listed hash to {actual}",
                lock.dir_hash
            ),
        ));
    }
    Ok(())
}

/// Compares a lock's entries with a fresh scan: added, removed and changed
/// paths (content, size, kind, link target or executable bit).
pub fn compare(locked: &[LockEntry], now: &[LockEntry]) -> Drift {
    let mut drift = Drift::default();
    let (mut i, mut j) = (0, 0);
    while i < locked.len() || j < now.len() {
        match (locked.get(i), now.get(j)) {
            (Some(a), Some(b)) => match a.path.as_bytes().cmp(b.path.as_bytes()) {
                std::cmp::Ordering::Less => {
                    drift.removed.push(a.path.clone());
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    drift.added.push(b.path.clone());
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    if a != b {
                        drift.changed.push(a.path.clone());
                    }
                    i += 1;
                    j += 1;
                }
            },
            (Some(a), None) => {
                drift.removed.push(a.path.clone());
                i += 1;
            }
            (None, Some(b)) => {
                drift.added.push(b.path.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    drift
}

#[cfg(test)]
mod tests;
