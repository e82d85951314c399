//! What a jailed command holds, sampled from `/proc`: its processes and
//! threads, and its memory (resident, memfds, its tmpfs, detached System V
//! segments). The second line behind a cgroup, and the only one where none
//! can be made.

use super::mounts::unescape_mount;
use super::run::Caps;
use super::{MEMORY_EVERY, POLL};
use crate::record::Stopped;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Sends SIGKILL to every child of `pid` (each of its threads' children).
pub(crate) fn kill_children(pid: u32) {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for thread in threads.flatten() {
        let Ok(list) = std::fs::read_to_string(thread.path().join("children")) else {
            continue;
        };
        for child in list
            .split_whitespace()
            .filter_map(|c| c.parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The processes of one test command: every descendant of the process the
/// host started (the sandbox's first process, outside its PID namespace, or
/// the unsandboxed shell), however deep (nested namespaces, new sessions
/// and orphans all stay below it: an orphan is reaped by the sandbox's own
/// init). The host adds up their tasks and memory.
pub(crate) struct Members {
    root: u32,
    /// Whether `root` itself is the command (unsandboxed) rather than the
    /// sandbox's helper.
    counts_root: bool,
    /// The devices of this process's own tmpfs mounts: a sandbox sees
    /// those the host has below the directories it binds, and they are not
    /// the command's.
    host_tmpfs: std::collections::BTreeSet<String>,
    /// System V shared memory in the sandbox's IPC namespace (as root).
    sysv: Option<SysvWatch>,
}

/// System V shared memory that no process has attached lives in the
/// sandbox's own IPC namespace and in no process's memory. A thread of
/// ours joins that namespace (`setns` needs `CAP_SYS_ADMIN` in our own
/// user namespace too, so only as root) and reads `/proc/sysvipc/shm`,
/// which shows the reader's namespace, every 100 ms.
pub(crate) struct SysvWatch {
    bytes: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
}

impl SysvWatch {
    /// Watches the IPC namespace the sandbox's first process (its pid in
    /// `first` once started) moves into.
    pub(crate) fn start(first: Arc<std::sync::atomic::AtomicU32>) -> SysvWatch {
        let bytes = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (out, stop) = (bytes.clone(), done.clone());
        std::thread::spawn(move || {
            use std::os::unix::fs::MetadataExt;
            let own = std::fs::metadata("/proc/self/ns/ipc").map(|m| m.ino()).ok();
            let ns = loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let root = first.load(Ordering::Relaxed);
                if root == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                let Ok(file) = std::fs::File::open(format!("/proc/{root}/ns/ipc")) else {
                    return;
                };
                if file.metadata().map(|m| m.ino()).ok() != own {
                    break file;
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            if nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWIPC).is_err() {
                return;
            }
            while !stop.load(Ordering::Relaxed) {
                if let Ok(table) = std::fs::read_to_string("/proc/sysvipc/shm") {
                    out.store(detached_sysv_bytes(&table), Ordering::Relaxed);
                }
                std::thread::sleep(POLL * MEMORY_EVERY);
            }
        });
        SysvWatch { bytes, done }
    }
}

impl Drop for SysvWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// The resident bytes of the segments of a `/proc/sysvipc/shm` table that
/// no process has attached (attached ones are in their processes'
/// `RssShmem`).
pub(crate) fn detached_sysv_bytes(table: &str) -> u64 {
    let mut lines = table.lines();
    let Some(header) = lines.next() else {
        return 0;
    };
    let column = |name: &str| header.split_whitespace().position(|h| h == name);
    let (Some(attached), Some(rss)) = (column("nattch"), column("rss")) else {
        return 0;
    };
    lines
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.get(attached) == Some(&"0"))
        .filter_map(|f| f.get(rss)?.parse::<u64>().ok())
        .fold(0u64, u64::saturating_add)
}

impl Members {
    pub(crate) fn of(root: u32, counts_root: bool, sysv: Option<SysvWatch>) -> Members {
        let mut host_tmpfs = std::collections::BTreeSet::new();
        if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
            host_tmpfs.extend(tmpfs_mounts(&info).into_iter().map(|(dev, _)| dev));
        }
        Members {
            root,
            counts_root,
            host_tmpfs,
            sysv,
        }
    }

    /// Why the command must stop, if it must: more processes and threads
    /// than `--test-max-procs` (the kernel stops forks past it already,
    /// except for uid 0, to which it never applies `RLIMIT_NPROC`), or,
    /// when `memory` is set, more memory than `--test-memory`.
    pub(crate) fn over(&mut self, caps: &Caps, memory: bool) -> Option<Stopped> {
        let (tasks, bytes) = self.usage(memory);
        if bytes > caps.memory {
            Some(Stopped::MemoryCap)
        } else if tasks > caps.max_procs {
            Some(Stopped::ProcessCap)
        } else {
            None
        }
    }

    /// How many tasks (processes and threads) the members run and, when
    /// `memory` is set, what memory they hold, in bytes: each one's
    /// anonymous and shared resident memory (file pages can be dropped by
    /// the kernel), every memfd they hold open (counted once, mapped or
    /// not), and what every tmpfs mounted in their mount namespaces holds
    /// (the private `/tmp` and `/dev/shm`, and any a nested namespace
    /// mounts; each counted once). A process that ends while it is read is
    /// skipped.
    pub(crate) fn usage(&mut self, memory: bool) -> (u64, u64) {
        let mut tasks = 0u64;
        let mut bytes = 0u64;
        let mut seen_files = std::collections::BTreeSet::new();
        let mut seen_mount_ns = std::collections::BTreeSet::new();
        let mut seen_fs = self.host_tmpfs.clone();
        if memory && let Some(sysv) = &self.sysv {
            bytes = sysv.bytes.load(Ordering::Relaxed);
        }
        let mut queue = vec![self.root];
        let mut visited = std::collections::BTreeSet::new();
        while let Some(pid) = queue.pop() {
            if !visited.insert(pid) {
                continue;
            }
            let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            let member = pid != self.root || self.counts_root;
            for thread in threads.flatten() {
                if member {
                    tasks += 1;
                }
                let children = thread.path().join("children");
                if let Ok(list) = std::fs::read_to_string(children) {
                    queue.extend(
                        list.split_whitespace()
                            .filter_map(|c| c.parse::<u32>().ok()),
                    );
                }
            }
            if !member || !memory {
                continue;
            }
            bytes = bytes.saturating_add(resident_memory(pid));
            bytes = bytes.saturating_add(memfd_bytes(pid, &mut seen_files));
            use std::os::unix::fs::MetadataExt;
            if let Ok(ns) = std::fs::metadata(format!("/proc/{pid}/ns/mnt")).map(|m| m.ino())
                && seen_mount_ns.insert(ns)
            {
                bytes = bytes.saturating_add(tmpfs_bytes(pid, &mut seen_fs));
            }
        }
        (tasks, bytes)
    }
}

/// `RssAnon` and `RssShmem` of `/proc/PID/status`, in bytes (0 when it
/// cannot be read).
pub(crate) fn resident_memory(pid: u32) -> u64 {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    status
        .lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("RssAnon:")
                .or_else(|| line.strip_prefix("RssShmem:"))?;
            rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
        .fold(0u64, |sum, kb| sum.saturating_add(kb.saturating_mul(1024)))
}

/// The bytes of every memfd `pid` holds open and no other member was seen
/// holding (`seen`: device and inode).
pub(crate) fn memfd_bytes(pid: u32, seen: &mut std::collections::BTreeSet<(u64, u64)>) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let mut total = 0u64;
    for fd in fds.flatten() {
        let is_memfd = std::fs::read_link(fd.path())
            .is_ok_and(|t| t.as_os_str().as_encoded_bytes().starts_with(b"/memfd:"));
        if !is_memfd {
            continue;
        }
        if let Ok(m) = std::fs::metadata(fd.path())
            && seen.insert((m.dev(), m.ino()))
        {
            total = total.saturating_add(m.blocks().saturating_mul(512));
        }
    }
    total
}

/// The tmpfs mounts of a mountinfo text: (device, mount point).
pub(crate) fn tmpfs_mounts(info: &str) -> Vec<(String, String)> {
    info.lines()
        .filter_map(|line| {
            // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPER`
            let fields: Vec<&str> = line.split(' ').collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            (fields.get(dash + 1) == Some(&"tmpfs"))
                .then(|| Some((fields.get(2)?.to_string(), unescape_mount(fields.get(4)?))))
                .flatten()
        })
        .collect()
}

/// What every tmpfs mounted in `pid`'s mount namespace holds, each
/// filesystem (`seen`: its device) counted once.
pub(crate) fn tmpfs_bytes(pid: u32, seen: &mut std::collections::BTreeSet<String>) -> u64 {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")) else {
        return 0;
    };
    let mut total = 0u64;
    for (dev, point) in tmpfs_mounts(&info) {
        if seen.insert(dev) {
            total = total.saturating_add(used_bytes(&format!("/proc/{pid}/root{point}")));
        }
    }
    total
}

/// The bytes in use on the filesystem at `path` (a sandbox's tmpfs).
pub(crate) fn used_bytes(path: &str) -> u64 {
    nix::sys::statvfs::statvfs(path).map_or(0, |s| {
        s.blocks()
            .saturating_sub(s.blocks_free())
            .saturating_mul(s.fragment_size())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_detached_segments_count_and_a_table_without_the_columns_is_nothing() {
        let table = "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n\
                     0 1 600 1048576 10 0 0 1000 1000 1000 1000 0 0 0 4096 0\n\
                     0 2 600 1048576 10 11 1 1000 1000 1000 1000 0 0 0 8192 0\n\
                     0 3 600 1048576 10 0 0 1000 1000 1000 1000 0 0 0 12288 0\n";
        assert_eq!(detached_sysv_bytes(table), 4096 + 12288);
        assert_eq!(detached_sysv_bytes("key shmid\n0 1\n"), 0);
        assert_eq!(detached_sysv_bytes(""), 0);
    }

    #[test]
    fn tmpfs_mounts_are_read_from_mountinfo_with_their_escapes() {
        let info = "36 25 0:32 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\n\
                    37 25 8:1 / /data rw,relatime shared:5 - ext4 /dev/sda1 rw\n\
                    38 25 0:40 / /tmp/with\\040space rw - tmpfs none rw,size=1024k\n";
        assert_eq!(
            tmpfs_mounts(info),
            vec![
                ("0:32".to_string(), "/dev/shm".to_string()),
                ("0:40".to_string(), "/tmp/with space".to_string()),
            ]
        );
        assert!(tmpfs_mounts("garbage without a separator\n").is_empty());
    }
}
