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

/// A directory in use: removed on drop (also on error), its lock held until
/// then.
pub struct ScratchDir {
    // Field order matters: the directory goes before its lock is released.
    dir: tempfile::TempDir,
    _lock: File,
}

impl ScratchDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
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
    Ok(ScratchDir { dir, _lock: lock })
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
            let _ = std::fs::remove_dir_all(&path);
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
