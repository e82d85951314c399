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

/// A path the walk found, to hash: a file or a symlink.
struct Found {
    path: String,
    is_link: bool,
}

/// Walks and hashes `roots` (normalised, relative to `repo`).
///
/// The tree may be a patched, untrusted one: every read goes through a
/// cap-std [`Dir`] opened on `repo`, which no `..` or link can walk out of.
/// A root reached through a link out of the tree is an error naming it,
/// never an empty root.
pub fn scan(repo: &Path, roots: &[String]) -> Result<Scan> {
    let started = std::time::Instant::now();
    let top = Dir::open_ambient_dir(repo, cap_std::ambient_authority())
        .map_err(|e| Error::read(repo, e))?;
    let mut found: Vec<Found> = Vec::new();
    let mut empty_roots = Vec::new();
    for root in roots {
        let before = found.len();
        if root.is_empty() {
            walk(&top, repo, "", &mut found)?;
        } else {
            match top.symlink_metadata(root) {
                Ok(meta) => {
                    let ft = meta.file_type();
                    if ft.is_dir() {
                        let dir = top
                            .open_dir(root)
                            .map_err(|e| Error::read(&repo.join(root), e))?;
                        walk(&dir, repo, root, &mut found)?;
                    } else {
                        found.push(entry(repo, root, ft)?);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::read(&repo.join(root), e)),
            }
        }
        if found.len() == before {
            empty_roots.push(root.clone());
        }
    }
    found.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    found.dedup_by(|a, b| a.path == b.path);
    let walked = started.elapsed();
    let entries = hash_all(&top, repo, found)?;
    crate::profile::phase(
        "lock",
        &[("walk", walked), ("hash", started.elapsed() - walked)],
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

/// A file or symlink at `rel`; anything else is refused.
fn entry(repo: &Path, rel: &str, ft: cap_std::fs::FileType) -> Result<Found> {
    if ft.is_symlink() || ft.is_file() {
        Ok(Found {
            path: rel.to_string(),
            is_link: ft.is_symlink(),
        })
    } else {
        Err(Error::data(
            &repo.join(rel),
            "fixture root holds a special file (fifo, socket or device)",
        ))
    }
}

/// Collects everything under `dir` (at `rel` in `repo`), following no link.
fn walk(dir: &Dir, repo: &Path, rel: &str, out: &mut Vec<Found>) -> Result<()> {
    let at = repo.join(rel);
    for item in dir.entries().map_err(|e| Error::read(&at, e))? {
        let item = item.map_err(|e| Error::read(&at, e))?;
        let name = item.file_name();
        // The repository's own metadata is never a fixture.
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let path = at.join(&name);
        let name = name.to_str().ok_or_else(|| {
            Error::data(&path, "fixture path is not UTF-8 and cannot be recorded")
        })?;
        if name.contains('\n') {
            return Err(Error::data(
                &path,
                "fixture path contains a newline, which dirHash cannot represent",
            ));
        }
        let ft = item.file_type().map_err(|e| Error::read(&path, e))?;
        let rel = rel_join(rel, name);
        if ft.is_dir() {
            let sub = item.open_dir().map_err(|e| Error::read(&path, e))?;
            walk(&sub, repo, &rel, out)?;
        } else {
            out.push(entry(repo, &rel, ft)?);
        }
    }
    Ok(())
}

/// Hashes `found` on every core, each thread taking the next entry as it
/// finishes one: a large file holds up only its own thread (rayon's halving
/// of the list would give one thread every large file that sorts together).
fn hash_all(top: &Dir, repo: &Path, found: Vec<Found>) -> Result<Vec<LockEntry>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(found.len().max(1));
    let next = AtomicUsize::new(0);
    let slots: Vec<std::sync::OnceLock<Result<LockEntry>>> = (0..found.len())
        .map(|_| std::sync::OnceLock::new())
        .collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(f) = found.get(i) else { break };
                    let _ = slots[i].set(hash_entry(top, repo, f));
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().expect("every entry hashed"))
        .collect()
}

fn hash_entry(top: &Dir, repo: &Path, found: &Found) -> Result<LockEntry> {
    let abs = || repo.join(&found.path);
    if found.is_link {
        let target = top
            .read_link_contents(&found.path)
            .map_err(|e| Error::read(&abs(), e))?;
        let bytes = target.as_os_str().as_bytes();
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Error::data(&abs(), "symlink target is not UTF-8"))?;
        Ok(LockEntry {
            path: found.path.clone(),
            kind: crate::record::EntryKind::Symlink,
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            target: Some(text.to_string()),
            executable: false,
        })
    } else {
        use std::os::unix::fs::PermissionsExt;
        let file = top
            .open(&found.path)
            .map_err(|e| Error::read(&abs(), e))?
            .into_std();
        let meta = file.metadata().map_err(|e| Error::read(&abs(), e))?;
        let mode = meta.permissions().mode();
        let (sha256, size) =
            sha256_open_file(&file, meta.len()).map_err(|e| Error::read(&abs(), e))?;
        Ok(LockEntry {
            path: found.path.clone(),
            kind: crate::record::EntryKind::File,
            size,
            sha256,
            target: None,
            // As git decides it: the owner's execute bit.
            executable: mode & 0o100 != 0,
        })
    }
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
