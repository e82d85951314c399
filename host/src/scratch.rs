//! Temporary directories for trials (checkouts, patched trees, inputs) and
//! unpacked archives. Each is made under the system temp dir with a known
//! prefix and holds `owner.lock`, locked (exclusive `flock`) for as long as
//! the directory is in use. A run killed with SIGKILL leaves its directory
//! behind with the lock released by the kernel; the next run removes every
//! such directory this user owns before making its own.
//!
//! The lock file is created under a temporary name, locked, then renamed to
//! `owner.lock`, so a sweeper never sees an unlocked `owner.lock` of a live
//! run. A directory without `owner.lock` (made by an older version, or killed
//! between `mkdir` and the rename) is removed only once it is an hour old.

use crate::exit::{Error, Result};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Prefixes of the directories this module makes (and may sweep).
pub const PREFIXES: &[&str] = &["agent-ledger-trial-", "agent-ledger-verify-"];
const LOCK: &str = "owner.lock";
const UNLOCKED_GRACE: Duration = Duration::from_secs(3600);

/// A directory in use: removed on drop (also on error, with
/// [`remove_tree`]), its lock held until then.
pub struct ScratchDir {
    dir: std::path::PathBuf,
    _lock: File,
}

impl ScratchDir {
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Before the lock is released (the field drops after this).
        let _ = remove_tree(&self.dir);
    }
}

/// Removes the directory `root` and everything in it, whatever its depth:
/// a test command can nest directories deeper than the descriptor limit
/// (the standard library's removal holds a descriptor per level, and
/// failed there, leaving the tree for good) or than `PATH_MAX`. When the
/// plain removal fails, the tree is flattened: each directory's entries
/// are renamed up into `root` under fresh names, so every path used is at
/// most two levels deep and only two directories are open at a time, and
/// emptied directories are removed; a directory made unreadable is given
/// back its owner's permissions first. Mounts below `root` must be
/// detached first.
pub fn remove_tree(root: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(root) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) => flatten_and_remove(root),
    }
}

/// [`remove_tree`]'s way when the plain removal fails.
fn flatten_and_remove(root: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut fresh = 0u64;
    let mut name = |root: &Path| loop {
        fresh += 1;
        let candidate = root.join(format!(".agent-ledger-flat-{fresh}"));
        if std::fs::symlink_metadata(&candidate).is_err() {
            return candidate;
        }
    };
    loop {
        let mut progress = false;
        let mut left = false;
        let _ = std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700));
        let entries: Vec<std::fs::DirEntry> = std::fs::read_dir(root)?.flatten().collect();
        if entries.is_empty() {
            return std::fs::remove_dir(root);
        }
        for entry in entries {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir {
                if std::fs::remove_file(&path).is_ok() {
                    progress = true;
                } else {
                    left = true;
                }
                continue;
            }
            if std::fs::remove_dir(&path).is_ok() {
                progress = true;
                continue;
            }
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
            if let Ok(children) = std::fs::read_dir(&path) {
                for child in children.flatten() {
                    if std::fs::rename(child.path(), name(root)).is_ok() {
                        progress = true;
                    }
                }
            }
            if std::fs::remove_dir(&path).is_ok() {
                progress = true;
            } else {
                left = true;
            }
        }
        if left && !progress {
            return Err(std::io::Error::other(format!(
                "`{}` cannot be emptied (a mount or a file this user may not remove?)",
                root.display()
            )));
        }
    }
}

/// Makes a locked directory named `PREFIX…` in the temp dir, after removing
/// stale ones.
pub fn make(prefix: &str) -> Result<ScratchDir> {
    let tmp = std::env::temp_dir();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&tmp)
        .map_err(|e| Error::write(&tmp, e))?;
    let pending = dir.path().join(".owner.lock.new");
    let lock = File::create(&pending).map_err(|e| Error::write(&pending, e))?;
    lock.lock().map_err(|e| Error::write(&pending, e))?;
    let owned = dir.path().join(LOCK);
    std::fs::rename(&pending, &owned).map_err(|e| Error::write(&owned, e))?;
    let uid = lock.metadata().map_err(|e| Error::read(&owned, e))?.uid();
    sweep(&tmp, uid, dir.path());
    // Removed by [`ScratchDir`]'s drop, which copes with any depth.
    Ok(ScratchDir {
        dir: dir.keep(),
        _lock: lock,
    })
}

/// Removes stale directories of ours in `tmp`. Best effort: a directory that
/// cannot be judged or removed is left alone.
fn sweep(tmp: &Path, uid: u32, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid || path == keep {
            continue;
        }
        if is_stale(&path, &meta) {
            // A killed test command's run leaves its idmapped lower layer
            // mounted (`replay::idmap`): unmount it first.
            crate::replay::detach_mounts_under(&path);
            let _ = remove_tree(&path);
        }
    }
}

fn is_stale(dir: &Path, meta: &std::fs::Metadata) -> bool {
    match File::open(dir.join(LOCK)) {
        // The owner holds the lock while it lives; if we get it, it is gone.
        // Our handle is dropped (and the lock with it) after the removal.
        Ok(f) => f.try_lock().is_ok(),
        Err(_) => meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > UNLOCKED_GRACE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_deeper_than_path_max_and_unreadable_is_removed() {
        use std::os::unix::fs::PermissionsExt;
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("t");
        std::fs::create_dir(&root).unwrap();
        // 3000 levels of a 2-byte name: past PATH_MAX, made step by step.
        let mut dir =
            cap_std::fs::Dir::open_ambient_dir(&root, cap_std::ambient_authority()).unwrap();
        for i in 0..3000 {
            dir.create_dir("dd").unwrap();
            dir.write("f", "x").unwrap();
            let next = dir.open_dir("dd").unwrap();
            if i == 1500 {
                dir.set_permissions(
                    "dd",
                    cap_std::fs::Permissions::from_std(std::fs::Permissions::from_mode(0o000)),
                )
                .unwrap();
            }
            dir = next;
        }
        drop(dir);
        // The way taken when the plain removal runs out of descriptors.
        flatten_and_remove(&root).unwrap();
        assert!(!root.exists());
        // Gone already: nothing to do.
        remove_tree(&root).unwrap();
    }

    #[test]
    fn a_dead_runs_directory_is_swept_and_a_live_one_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let uid = std::fs::metadata(tmp.path()).unwrap().uid();
        // A killed run: its lock file is there, nobody holds it.
        let dead = tmp.path().join("agent-ledger-trial-dead");
        std::fs::create_dir_all(dead.join("patched")).unwrap();
        File::create(dead.join(LOCK)).unwrap();
        // A live run: it holds its lock.
        let live = tmp.path().join("agent-ledger-trial-live");
        std::fs::create_dir_all(&live).unwrap();
        let held = File::create(live.join(LOCK)).unwrap();
        held.lock().unwrap();
        // Being made right now: no lock file yet, and young.
        let young = tmp.path().join("agent-ledger-trial-young");
        std::fs::create_dir_all(&young).unwrap();
        // Not ours to judge.
        let other = tmp.path().join("someone-else");
        std::fs::create_dir_all(&other).unwrap();
        sweep(tmp.path(), uid, Path::new("/nonexistent"));
        assert!(!dead.exists());
        assert!(live.exists());
        assert!(young.exists());
        assert!(other.exists());
        drop(held);
        sweep(tmp.path(), uid, Path::new("/nonexistent"));
        assert!(!live.exists());
    }
}
