//! The test command's cgroups: where this process may make them, the
//! kernel bounds everything the command's processes hold (anonymous and
//! shared memory, tmpfs and ramfs pages, memfds however hidden, and the
//! kernel memory charged to it) and how many tasks they run, exactly, where
//! the host's sampling of `/proc` (`jail::accounting::Members`) can be
//! outrun. The sampling stays as the second line, and the only one where no
//! cgroup can be made (see docs/design/threat-model.md, "Known limits").
//!
//! Each controller comes from the hierarchy that holds it: a v1 hierarchy
//! mounted at `/sys/fs/cgroup/memory` or `/sys/fs/cgroup/pids` (as root),
//! else the unified one (`v2`: root, or a delegated subtree).
//!
//! In v1 the command's first process is born in the cgroup: the thread
//! that forks it moves itself in first and back out after (v1 lets threads
//! of one process sit in different cgroups, and a fork lands where its
//! thread is), so nothing the command starts runs outside it for an
//! instant. v2 keeps a process's threads together, so there the first
//! process is moved in before it runs anything of the command's
//! ([`v2`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MEMORY_ROOT: &str = "/sys/fs/cgroup/memory";
const PIDS_ROOT: &str = "/sys/fs/cgroup/pids";

mod v2;
pub(crate) use v2::{HELD, V2};

/// One test command's cgroups; removed when dropped (once its processes
/// are gone).
pub(crate) struct Cgroup {
    /// The v1 memory cgroup and the one this process's threads belong to.
    memory: Option<(PathBuf, PathBuf)>,
    /// The same for the v1 pids controller, where it is mounted.
    pids: Option<(PathBuf, PathBuf)>,
    /// The v2 cgroup, for the controllers no v1 hierarchy holds.
    v2: Option<v2::V2>,
}

/// This process's own cgroup in the v1 hierarchy mounted at `root` for
/// `controller`, from `/proc/self/cgroup`.
fn own(root: &str, controller: &str) -> Option<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = table.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.trim_start_matches('/').to_string())
    })?;
    let dir = Path::new(root).join(rel);
    dir.join("tasks").is_file().then_some(dir)
}

/// Removes the empty cgroups below `parent` that a process which no longer
/// runs made (a `check` killed with SIGKILL leaves its own behind).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("agent-ledger-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// A fresh name below `parent`.
fn child(parent: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    parent.join(format!(
        "agent-ledger-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

fn write(path: &Path, value: impl std::fmt::Display) -> std::io::Result<()> {
    std::fs::write(path, value.to_string())
}

impl Cgroup {
    /// Cgroups limiting the command to `memory` bytes (swap included where
    /// it is accounted) and `tasks` tasks, each controller from the
    /// hierarchy that holds it; `None` where this process can make none.
    pub(crate) fn new(memory: u64, tasks: u64) -> Option<Cgroup> {
        let v1 = |root: &str, controller: &str| {
            if !super::host_root() {
                return None;
            }
            let parent = own(root, controller)?;
            sweep(&parent);
            let dir = child(&parent);
            std::fs::create_dir(&dir).ok()?;
            Some((dir, parent))
        };
        let mut made = Cgroup {
            memory: v1(MEMORY_ROOT, "memory"),
            pids: v1(PIDS_ROOT, "pids"),
            v2: None,
        };
        if let Some((dir, _)) = &made.memory {
            let memsw = dir.join("memory.memsw.limit_in_bytes");
            let set = write(&dir.join("memory.limit_in_bytes"), memory).and_then(|()| {
                if memsw.exists() {
                    write(&memsw, memory)
                } else {
                    Ok(())
                }
            });
            if set.is_err() {
                let _ = std::fs::remove_dir(dir);
                made.memory = None;
            }
        }
        if let Some((dir, _)) = &made.pids
            && write(&dir.join("pids.max"), tasks).is_err()
        {
            let _ = std::fs::remove_dir(dir);
            made.pids = None;
        }
        let wanted: Vec<&'static str> = v2::CONTROLLERS
            .into_iter()
            .filter(|c| match *c {
                "memory" => made.memory.is_none(),
                _ => made.pids.is_none(),
            })
            .collect();
        if !wanted.is_empty() {
            made.v2 = v2::V2::new(memory, tasks, &wanted);
        }
        (made.memory.is_some() || made.pids.is_some() || made.v2.is_some()).then_some(made)
    }

    /// The v1 cgroups: (the command's, this thread's own).
    fn v1(&self) -> impl Iterator<Item = &(PathBuf, PathBuf)> {
        self.memory.iter().chain(&self.pids)
    }

    /// The v2 cgroup, when one bounds the command: its first process must
    /// be moved in (`V2::place`, `V2::pre_exec`) before it runs the
    /// command.
    pub(crate) fn v2(&self) -> Option<&v2::V2> {
        self.v2.as_ref()
    }

    /// Runs `fork` with the calling thread in the cgroups, so that the
    /// process it starts is born in them, and moves the thread back.
    pub(crate) fn spawn_in<T>(&self, fork: impl FnOnce() -> T) -> std::io::Result<T> {
        let tid = nix::unistd::gettid().as_raw();
        let groups: Vec<&(PathBuf, PathBuf)> = self.v1().collect();
        for (dir, _) in &groups {
            write(&dir.join("tasks"), tid)?;
        }
        let out = fork();
        let mut back = Ok(());
        for (_, parent) in &groups {
            back = back.and(write(&parent.join("tasks"), tid));
        }
        back.map(|()| out)
    }

    /// Moves the calling thread into the v1 cgroups for good (a thread that
    /// then drops root cannot move back; it must end before the cgroup is
    /// dropped).
    pub(crate) fn join(&self) -> std::io::Result<()> {
        let tid = nix::unistd::gettid().as_raw();
        for (dir, _) in self.v1() {
            write(&dir.join("tasks"), tid)?;
        }
        Ok(())
    }

    /// Sends SIGKILL to every process left in the cgroups but this one
    /// (whose sandbox thread may still be a member), until none is left or
    /// a second has passed: a command's processes never outlive its run.
    pub(crate) fn kill_all(&self) {
        let me = std::process::id();
        if let Some(v2) = &self.v2 {
            v2.kill();
        }
        for _ in 0..50 {
            let mut left = false;
            let v1 = self.v1().flat_map(|(dir, _)| {
                std::fs::read_to_string(dir.join("cgroup.procs"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok())
                    .collect::<Vec<_>>()
            });
            let members: Vec<u32> = v1.chain(self.v2.iter().flat_map(|c| c.members())).collect();
            // 0 stands for a member this process's PID namespace cannot
            // see (or one past its exit): kill(0) would be our own group.
            for pid in members.into_iter().filter(|&p| p != 0 && p != me) {
                left = true;
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            if !left {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Whether the kernel killed a process of the cgroup for memory.
    pub(crate) fn oom_killed(&self) -> bool {
        let v1 = self.memory.as_ref().is_some_and(|(dir, _)| {
            std::fs::read_to_string(dir.join("memory.oom_control"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse::<u64>().ok())
                })
                .is_some_and(|n| n > 0)
        });
        v1 || self.v2.as_ref().is_some_and(|c| c.oom_killed())
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for (dir, _) in self.v1() {
            remove(dir);
        }
    }
}

/// Removes the cgroup `dir`, once its processes are gone: they are dead
/// by now, but their exit can lag a little.
fn remove(dir: &Path) {
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_fresh_and_only_a_dead_process_cgroup_is_swept() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (child(dir.path()), child(dir.path()));
        assert_ne!(a, b);
        std::fs::create_dir(&a).unwrap();
        // A pid no process has (above pid_max's ceiling of 2^22).
        let dead = dir.path().join("agent-ledger-99999999-0");
        std::fs::create_dir(&dead).unwrap();
        let other = dir.path().join("someone-else");
        std::fs::create_dir(&other).unwrap();
        sweep(dir.path());
        assert!(a.exists(), "this process's own cgroup stays");
        assert!(!dead.exists(), "a dead process's empty cgroup goes");
        assert!(other.exists(), "a cgroup not named by agent-ledger stays");
    }
}
