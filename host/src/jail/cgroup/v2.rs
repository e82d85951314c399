//! The test command's cgroup in the unified (v2) hierarchy, for the
//! controllers (memory, pids) no v1 hierarchy holds: what GitHub's runners,
//! most pods and current distributions have.
//!
//! v2 keeps every thread of a process in one cgroup, so the v1 way (the
//! forking thread steps in and out) does not apply. Instead the command's
//! first process is moved in before it runs anything of the command's: the
//! unsandboxed one writes itself into the cgroup between fork and exec
//! ([`V2::pre_exec`]), and the sandbox's first process waits on a pipe for
//! its parent to move it ([`V2::place`], [`HELD`]) before it execs the
//! command. Either way everything the command starts is born inside.
//!
//! Where: below the cgroup the operator names in `AGENT_LEDGER_CGROUP`
//! (the GitHub Action sets it); else below this process's own cgroup, when
//! that is the hierarchy's root or is delegated to this user and holds this
//! process alone (`systemd-run --scope -p Delegate=yes`, a container's only
//! process): this process then moves into a leaf of its own below it and
//! enables the controllers for its children, as v2's rule that only leaves
//! hold processes asks. Never above its own cgroup, so a limit set there
//! keeps bounding the command; nothing else is moved and no other cgroup is
//! changed.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The controllers the command's cgroup can bound it with.
pub(super) const CONTROLLERS: [&str; 2] = ["memory", "pids"];

/// A shell that waits for one line on its standard input (its parent's
/// word that it is in the cgroup), then execs its arguments with `/dev/null`
/// as their standard input; without that word it runs nothing. Used as
/// `sh -c HELD ARGV0 ARGS...`.
pub(crate) const HELD: &str =
    "IFS= read -r go && [ \"$go\" = go ] || exit 125; exec \"$0\" \"$@\" </dev/null";

/// One command's cgroup in the unified hierarchy; removed when dropped.
pub(crate) struct V2 {
    dir: PathBuf,
    /// Its `cgroup.procs`, opened for writing by the process that made it
    /// (the kernel checks a migration against the opener's credentials, so
    /// a thread that has since dropped to the sandbox's user, or the forked
    /// child, can still use it).
    procs: File,
}

/// The unified hierarchy as `/proc/self/mountinfo` shows it.
#[derive(Debug, PartialEq)]
pub(super) struct Mount {
    /// Where it is mounted.
    pub point: PathBuf,
    /// The cgroup path its root shows (`/` unless mounted from inside a
    /// cgroup namespace's subtree).
    pub root: String,
    /// Whether it was mounted with `nsdelegate`: a cgroup namespace is then
    /// a delegation boundary, and a process cannot write the limits of the
    /// cgroup at its namespace's root (its own) through a cgroupfs it
    /// mounts in namespaces of its own.
    pub nsdelegate: bool,
}

pub(super) fn mount(mountinfo: &str) -> Option<Mount> {
    mountinfo.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let mut post = post.split_whitespace();
        (post.next()? == "cgroup2").then_some(())?;
        let options = post.nth(1).unwrap_or_default();
        let fields: Vec<&str> = pre.split_whitespace().collect();
        Some(Mount {
            point: PathBuf::from(unescape(fields.get(4)?)),
            root: unescape(fields.get(3)?),
            nsdelegate: options.split(',').any(|o| o == "nsdelegate"),
        })
    })
}

/// mountinfo's octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup directory in the unified hierarchy mounted at
/// `mnt` (whose root is the cgroup `root`), from `/proc/self/cgroup`.
pub(super) fn own(mnt: &Path, root: &str, table: &str) -> Option<PathBuf> {
    let path = table.lines().find_map(|l| l.strip_prefix("0::"))?;
    let rel = if root == "/" {
        path
    } else {
        path.strip_prefix(root)?
    };
    let rel = rel.trim_start_matches('/');
    // `..` or an empty component would lead out of the mount.
    if rel.split('/').any(|c| c == ".." || c == ".") {
        return None;
    }
    Some(mnt.join(rel))
}

/// Which of `wanted` the children of `dir` get.
fn delegated(dir: &Path, wanted: &[&'static str]) -> Vec<&'static str> {
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    wanted
        .iter()
        .copied()
        .filter(|c| enabled.split_whitespace().any(|e| e == *c))
        .collect()
}

/// The variable naming the cgroup to make the test command's cgroups in
/// (one that hands memory or pids to its children, that this user may
/// write and that holds this process's own cgroup below it), instead of
/// this process's own.
pub(crate) const PARENT_VAR: &str = "AGENT_LEDGER_CGROUP";

/// This process's delegation of its own cgroup, once made: the leaf it
/// moved into, the cgroup (its former own) and what that hands down. Held
/// while a parent is chosen, so two trials of one batch delegate once.
static DELEGATED: std::sync::Mutex<Option<(PathBuf, PathBuf, Vec<&'static str>)>> =
    std::sync::Mutex::new(None);

/// Where the command's cgroup goes, and which of `wanted` it gets there:
/// `explicit` (the operator's [`PARENT_VAR`]) when given; else this
/// process's own cgroup `own` (in the hierarchy mounted at `mnt`), when it
/// hands any of them down (only the root cgroup can, holding processes) or
/// can be made to ([`V2::delegate_own`]). Never above `own`: a limit the
/// operator set there (`systemd-run -p MemoryMax=`, a container's) keeps
/// bounding the command.
fn parent(
    mnt: &Path,
    own: &Path,
    explicit: Option<&Path>,
    wanted: &[&'static str],
) -> Option<(PathBuf, Vec<&'static str>)> {
    let inside = |p: &Path| {
        p.is_absolute()
            && p.starts_with(mnt)
            && !p
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
    };
    if let Some(p) = explicit {
        // Checked before anything under it is read. This process must be
        // inside it: a move needs the common ancestor's `cgroup.procs`.
        if !inside(p) || !own.starts_with(p) || own == p {
            return None;
        }
        let controllers = delegated(p, wanted);
        return (!controllers.is_empty()).then(|| (p.to_path_buf(), controllers));
    }
    let mut done = DELEGATED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((leaf, parent, controllers)) = done.as_ref()
        && leaf == own
    {
        let controllers: Vec<_> = controllers
            .iter()
            .copied()
            .filter(|c| wanted.contains(c))
            .collect();
        return (!controllers.is_empty()).then(|| (parent.clone(), controllers));
    }
    let controllers = delegated(own, wanted);
    if !controllers.is_empty() {
        return Some((own.to_path_buf(), controllers));
    }
    let (leaf, controllers) = V2::delegate_own(own, wanted)?;
    *done = Some((leaf, own.to_path_buf(), controllers.clone()));
    Some((own.to_path_buf(), controllers))
}

impl V2 {
    /// A cgroup bounding `wanted` (among [`CONTROLLERS`]): `memory` bytes
    /// of memory (no swap beyond it; `memory.oom.group` set) and
    /// `tasks` tasks; `None` where this process cannot make one.
    pub(crate) fn new(memory: u64, tasks: u64, wanted: &[&'static str]) -> Option<V2> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let m = mount(&mountinfo)?;
        // A cgroup made by this process's user (delegated, not host root)
        // has limit files the command's own host user could write, were
        // namespaces not a delegation boundary.
        if !m.nsdelegate && !super::super::host_root() {
            return None;
        }
        let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let own = own(&m.point, &m.root, &table)?;
        let explicit = std::env::var_os(PARENT_VAR).map(PathBuf::from);
        let made = Self::in_tree(&m.point, &own, explicit.as_deref(), memory, tasks, wanted);
        static WARNED: std::sync::Once = std::sync::Once::new();
        if made.is_none()
            && let Some(p) = &explicit
            && !WARNED.is_completed()
        {
            WARNED.call_once(|| ());
            eprintln!(
                "warning: {PARENT_VAR}={}: no cgroup for the test command could be made there (it must be a cgroup in {} that hands memory or pids to its children, that this user may write and that holds this process's own, in a leaf below it); its caps are sampled",
                p.display(),
                m.point.display()
            );
        }
        made
    }

    /// [`V2::new`] in the hierarchy mounted at `mnt`, for a process whose
    /// cgroup is `own`.
    pub(super) fn in_tree(
        mnt: &Path,
        own: &Path,
        explicit: Option<&Path>,
        memory: u64,
        tasks: u64,
        wanted: &[&'static str],
    ) -> Option<V2> {
        let (parent, controllers) = parent(mnt, own, explicit, wanted)?;
        super::sweep(&parent);
        let dir = super::child(&parent);
        std::fs::create_dir(&dir).ok()?;
        let made = |procs| V2 {
            dir: dir.clone(),
            procs,
        };
        let limits = || -> std::io::Result<File> {
            // No cgroup below it: what the command could make there (from
            // a cgroup namespace of its own) would outlive the kill and
            // the removal. Not writable from inside its namespace.
            super::write(&dir.join("cgroup.max.descendants"), 0)?;
            super::write(&dir.join("cgroup.max.depth"), 0)?;
            if controllers.contains(&"memory") {
                super::write(&dir.join("memory.max"), memory)?;
                let swap = dir.join("memory.swap.max");
                if swap.exists() {
                    super::write(&swap, 0)?;
                }
                let group = dir.join("memory.oom.group");
                if group.exists() {
                    super::write(&group, 1)?;
                }
            }
            if controllers.contains(&"pids") {
                super::write(&dir.join("pids.max"), tasks)?;
            }
            // The kernel made it with the directory (`create` only lets a
            // test's plain directory stand in for a cgroupfs).
            std::fs::OpenOptions::new()
                .write(true)
                .create(cfg!(test))
                .truncate(false)
                .open(dir.join("cgroup.procs"))
        };
        match limits() {
            Ok(procs) => Some(made(procs)),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// Makes `own` hand `wanted` to its children, where it holds this
    /// process alone and is ours to write: this process moves into a leaf
    /// below it first (only leaves may hold processes). Returns what it
    /// hands down.
    fn delegate_own(own: &Path, wanted: &[&'static str]) -> Option<(PathBuf, Vec<&'static str>)> {
        let me = std::process::id();
        let procs = std::fs::read_to_string(own.join("cgroup.procs")).ok()?;
        if procs.split_whitespace().collect::<Vec<_>>() != [me.to_string()] {
            return None;
        }
        let available = std::fs::read_to_string(own.join("cgroup.controllers")).ok()?;
        let controllers: Vec<&'static str> = wanted
            .iter()
            .copied()
            .filter(|c| available.split_whitespace().any(|a| a == *c))
            .collect();
        if controllers.is_empty() {
            return None;
        }
        let leaf = own.join(format!("agent-ledger-{me}-self"));
        if std::fs::create_dir(&leaf).is_err() && !leaf.is_dir() {
            return None;
        }
        let enable = controllers
            .iter()
            .map(|c| format!("+{c}"))
            .collect::<Vec<_>>()
            .join(" ");
        let moved = super::write(&leaf.join("cgroup.procs"), me).is_ok();
        if moved && super::write(&own.join("cgroup.subtree_control"), &enable).is_ok() {
            return Some((leaf, controllers));
        }
        if moved {
            let _ = super::write(&own.join("cgroup.procs"), me);
        }
        let _ = std::fs::remove_dir(&leaf);
        None
    }

    /// A stand-in whose `cgroup.procs` is `procs` (a plain file), for
    /// tests of what moves processes.
    #[cfg(test)]
    pub(crate) fn standing_in(dir: &Path, procs: File) -> V2 {
        V2 {
            dir: dir.to_path_buf(),
            procs,
        }
    }

    /// Moves process `pid` (every thread of it) into the cgroup.
    pub(crate) fn place(&self, pid: u32) -> std::io::Result<()> {
        write_once(self.procs.as_raw_fd(), pid.to_string().as_bytes())
    }

    /// What a forked child runs before it execs (`CommandExt::pre_exec`):
    /// it moves itself into the cgroup, so the command is born there. Only
    /// a `write(2)` on a descriptor (its own copy, opened before the fork):
    /// safe between fork and exec.
    pub(crate) fn pre_exec(
        &self,
    ) -> std::io::Result<impl FnMut() -> std::io::Result<()> + Send + Sync + 'static> {
        let procs = self.procs.try_clone()?;
        Ok(move || write_once(procs.as_raw_fd(), b"0"))
    }

    /// The processes in the cgroup.
    pub(crate) fn members(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Kills every process in the cgroup at once, where the kernel can
    /// (`cgroup.kill`, Linux 5.14); the caller kills what is left one by
    /// one.
    pub(crate) fn kill(&self) {
        let _ = super::write(&self.dir.join("cgroup.kill"), 1);
    }

    /// Whether the kernel killed a process of the cgroup for memory.
    pub(crate) fn oom_killed(&self) -> bool {
        std::fs::read_to_string(self.dir.join("memory.events"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse::<u64>().ok())
            })
            .is_some_and(|n| n > 0)
    }
}

impl Drop for V2 {
    fn drop(&mut self) {
        super::remove(&self.dir);
    }
}

/// One `write(2)` of `bytes` to `fd` (a cgroup file takes one value per
/// write); nothing but the system call, so it may run between fork and
/// exec.
fn write_once(fd: std::os::fd::RawFd, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: `fd` is open (the cgroup keeps its `File` for as long as a
    // child can be forked from it) and `bytes` is a live slice.
    let n = unsafe { nix::libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    match n {
        n if n < 0 => Err(std::io::Error::last_os_error()),
        n if n as usize == bytes.len() => Ok(()),
        // Not `Error::other`: nothing may allocate between fork and exec.
        _ => Err(std::io::ErrorKind::WriteZero.into()),
    }
}

#[cfg(test)]
mod tests;
