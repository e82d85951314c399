//! The fixture lock: every file under the fixture roots, hashed before any
//! property runs, and the comparison that turns drift into
//! `fixture_mismatch`.
//!
//! Files are hashed in parallel (rayon) with SHA-NI where the CPU has it.
//! Symlinks are recorded as links (their target text) and never followed, so
//! a link cannot pull content from outside the root into the lock.

use crate::digest::{sha256_file, sha256_hex};
use crate::exit::{Error, Result};
use crate::record::{Drift, FixtureLock, LockEntry};
use rayon::prelude::*;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Normalises a configured root to a repository-relative POSIX path, refusing
/// anything that could leave the repository.
pub fn normalize_root(root: &str) -> Result<String> {
    let path = Path::new(root);
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
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

/// Walks and hashes `roots` (normalised, relative to `repo`).
pub fn scan(repo: &Path, roots: &[String]) -> Result<Scan> {
    let mut found: Vec<(String, PathBuf, bool)> = Vec::new();
    let mut empty_roots = Vec::new();
    for root in roots {
        let before = found.len();
        let abs = if root.is_empty() {
            repo.to_path_buf()
        } else {
            repo.join(root)
        };
        match fs::symlink_metadata(&abs) {
            Ok(meta) => walk(&abs, root, &meta, &mut found)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::read(&abs, e)),
        }
        if found.len() == before {
            empty_roots.push(root.clone());
        }
    }
    found.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    found.dedup_by(|a, b| a.0 == b.0);
    let entries = found
        .into_par_iter()
        .map(|(path, abs, is_link)| hash_entry(path, &abs, is_link))
        .collect::<Result<Vec<_>>>()?;
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

fn walk(
    abs: &Path,
    rel: &str,
    meta: &fs::Metadata,
    out: &mut Vec<(String, PathBuf, bool)>,
) -> Result<()> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        out.push((rel.to_string(), abs.to_path_buf(), true));
    } else if ft.is_file() {
        out.push((rel.to_string(), abs.to_path_buf(), false));
    } else if ft.is_dir() {
        let rd = fs::read_dir(abs).map_err(|e| Error::read(abs, e))?;
        for entry in rd {
            let entry = entry.map_err(|e| Error::read(abs, e))?;
            let name = entry.file_name();
            // The repository's own metadata is never a fixture.
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let path = entry.path();
            let name = name.to_str().ok_or_else(|| {
                Error::data(&path, "fixture path is not UTF-8 and cannot be recorded")
            })?;
            if name.contains('\n') {
                return Err(Error::data(
                    &path,
                    "fixture path contains a newline, which dirHash cannot represent",
                ));
            }
            let meta = entry.metadata().map_err(|e| Error::read(&path, e))?;
            walk(&path, &rel_join(rel, name), &meta, out)?;
        }
    } else {
        return Err(Error::data(
            abs,
            "fixture root holds a special file (fifo, socket or device)",
        ));
    }
    Ok(())
}

fn hash_entry(path: String, abs: &Path, is_link: bool) -> Result<LockEntry> {
    if is_link {
        let target = fs::read_link(abs).map_err(|e| Error::read(abs, e))?;
        let bytes = target.as_os_str().as_bytes();
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Error::data(abs, "symlink target is not UTF-8"))?;
        Ok(LockEntry {
            path,
            kind: "symlink".into(),
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            target: Some(text.to_string()),
        })
    } else {
        let (sha256, size) = sha256_file(abs).map_err(|e| Error::read(abs, e))?;
        Ok(LockEntry {
            path,
            kind: "file".into(),
            size,
            sha256,
            target: None,
        })
    }
}

/// in-toto `dirHash`: sha256 of `"<sha256>  <path>\n"` for every regular file,
/// sorted bytewise by path. Equal to
/// `find . -type f | cut -c3- | LC_ALL=C sort | xargs -r sha256sum | sha256sum`.
pub fn dir_hash(entries: &[LockEntry]) -> String {
    let mut text = String::new();
    for e in entries.iter().filter(|e| e.kind == "file") {
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
/// paths (content, size, kind or link target).
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
