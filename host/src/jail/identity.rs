//! Who the jail's processes are on the host: host root or not, the uid one
//! run gets as root ([`sandbox_host_id`]), and the thread that drops to it
//! to make the sandbox ([`as_user`]).

use super::SANDBOX_HOST_ID;
use super::cgroup::Cgroup;
use crate::exit::{Error, Result};
use std::path::{Path, PathBuf};

/// Whether this process is uid 0 of the host: root in the initial user
/// namespace, whose `uid_map` is the whole identity (uid 0 inside a user
/// namespace of its own is another host user, or maps too few ids to give
/// files to [`SANDBOX_HOST_ID`]).
pub(crate) fn host_root() -> bool {
    nix::unistd::geteuid().is_root()
        && std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| {
            map.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f == ["0", "0", "4294967295"]
            })
        })
}

/// Runs `f` on a thread of its own that has joined `cgroup` (when given)
/// and then dropped to the host user `id` (uid, gid, no supplementary
/// groups) with per-thread system calls, so this process's other threads
/// keep their credentials; what `f` forks is born as that user, in that
/// cgroup. Without `id`, `f` runs here.
pub(crate) fn as_user<T: Send>(
    id: Option<u32>,
    cgroup: Option<&Cgroup>,
    f: impl FnOnce() -> T + Send,
) -> Result<T> {
    let Some(id) = id else {
        return Ok(f());
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(c) = cgroup {
                c.join().map_err(|e| {
                    Error::Internal(format!("cannot put the test command in its cgroup: {e}"))
                })?;
            }
            drop_thread_to(id).map_err(|e| {
                Error::Internal(format!(
                    "cannot become uid {id} to make the test command's sandbox: {e}"
                ))
            })?;
            Ok(f())
        })
        .join()
        .map_err(|_| Error::Internal("the sandbox thread panicked".into()))?
    })
}

/// Sets this thread's (only this thread's: raw system calls, not libc's
/// process-wide wrappers) supplementary groups, gid and uid to `id`.
pub(crate) fn drop_thread_to(id: u32) -> std::io::Result<()> {
    use nix::libc::{SYS_setgroups, SYS_setresgid, SYS_setresuid, syscall};
    let ok = |r: nix::libc::c_long| {
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: plain system calls on this thread's credentials, with a null
    // group list of length 0 and integer ids.
    unsafe {
        ok(syscall(
            SYS_setgroups,
            0,
            std::ptr::null::<nix::libc::gid_t>(),
        ))?;
        ok(syscall(SYS_setresgid, id, id, id))?;
        ok(syscall(SYS_setresuid, id, id, id))?;
    }
    // A change of credentials makes the process non-dumpable, and a
    // non-dumpable process's `/proc/self` files are root's: the sandbox's
    // first process (forked from this thread) could not write its own
    // `uid_map`. Nothing here holds a secret.
    nix::sys::prctl::set_dumpable(true).map_err(std::io::Error::from)?;
    Ok(())
}

/// The host uid (and gid) one run of the test command gets as root: one of
/// 2^20 from [`SANDBOX_HOST_ID`] up, by this process and a count, so that
/// runs side by side do not share the kernel's per-user limits (one run
/// exhausted another trial's inotify instances through the one uid they
/// shared; docs/design/threat-model.md, "What each layer guarantees", "The
/// test command").
/// Within one process a uid is never given to two runs that overlap: the
/// 16 slots of this process are taken and given back ([`HostId`]); a run
/// past 16 at once waits for a slot.
pub(crate) fn sandbox_host_id() -> HostId {
    static TAKEN: std::sync::Mutex<u16> = std::sync::Mutex::new(0);
    static FREED: std::sync::Condvar = std::sync::Condvar::new();
    let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(slot) = (0..16u32).find(|s| *taken & (1 << s) == 0) {
            *taken |= 1 << slot;
            return HostId {
                // Pids are below 2^22 (`pid_max`'s ceiling), so no two
                // live processes share an id.
                id: SANDBOX_HOST_ID + ((std::process::id() << 4) | slot),
                slot,
                release: &|slot| {
                    let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
                    *taken &= !(1 << slot);
                    FREED.notify_all();
                },
            };
        }
        taken = FREED.wait(taken).unwrap_or_else(|p| p.into_inner());
    }
}

/// A uid one run holds until it drops this.
pub(crate) struct HostId {
    pub(crate) id: u32,
    slot: u32,
    release: &'static (dyn Fn(u32) + Sync),
}

impl Drop for HostId {
    fn drop(&mut self) {
        (self.release)(self.slot);
    }
}

/// Makes `id` (uid and gid) the owner of `dir` (a directory or a file) and
/// of everything in it, symlinks themselves included (never followed).
pub(crate) fn give_away(dir: &Path, id: u32) -> Result<()> {
    std::os::unix::fs::lchown(dir, Some(id), Some(id)).map_err(|e| Error::write(dir, e))?;
    let is_dir = std::fs::symlink_metadata(dir)
        .map_err(|e| Error::read(dir, e))?
        .is_dir();
    let mut stack: Vec<PathBuf> = if is_dir {
        vec![dir.to_path_buf()]
    } else {
        Vec::new()
    };
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).map_err(|e| Error::read(&next, e))? {
            let entry = entry.map_err(|e| Error::read(&next, e))?;
            let path = entry.path();
            std::os::unix::fs::lchown(&path, Some(id), Some(id))
                .map_err(|e| Error::write(&path, e))?;
            if entry
                .file_type()
                .map_err(|e| Error::read(&path, e))?
                .is_dir()
            {
                stack.push(path);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_that_overlap_never_share_a_host_uid_and_a_freed_one_is_reused() {
        let held: Vec<HostId> = (0..16).map(|_| sandbox_host_id()).collect();
        let mut ids: Vec<u32> = held.iter().map(|h| h.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 16, "16 runs at once, 16 uids");
        assert!(ids.iter().all(|&id| id >= crate::jail::SANDBOX_HOST_ID));
        drop(held);
        // Every slot was given back: 16 more are had without waiting.
        let again: Vec<HostId> = (0..16).map(|_| sandbox_host_id()).collect();
        assert_eq!(again.len(), 16);
    }

    #[test]
    fn host_root_is_uid_0_of_the_initial_user_namespace_only() {
        let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap();
        let initial = uid_map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"];
        let root = nix::unistd::geteuid().is_root();
        assert_eq!(host_root(), initial && root);
    }
}
