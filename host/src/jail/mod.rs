//! The process jail: the sandbox untrusted commands run in, the test
//! command (`replay::test_cmd`) and an agent's command under `trace exec`
//! alike, and how the host watches and bounds what runs in it.
//!
//! - `mod` (here): the layout and policy ([`Jail`]: what is bound, hidden,
//!   writable) and the one-shot runs (`exec`, `probe`);
//! - `run`: a bounded run with its watch loop, sandboxed or not;
//! - `identity`: host root, the per-run host uid, dropping a thread to it;
//! - `accounting`: memory and processes, sampled from `/proc`;
//! - `cgroup`: the exact bounds, where a cgroup can be made;
//! - `pumps`: the output pumps and the output cap;
//! - `mounts`: the host's mount table.
//!
//! The sandbox is made with `hakoniwa` (new user, mount, PID, network, IPC
//! and UTS namespaces; no helper binary to install, Rust 1.95, works as root
//! and as an ordinary user). Inside it:
//!
//! - the command runs as a non-root user of its own user namespace, so it
//!   holds no capabilities and cannot remount anything read-write (as
//!   root, the sandbox is made by a thread that has dropped to
//!   [`SANDBOX_HOST_ID`], which owns the command's scratch directory, so
//!   its processes are that user on the host, never uid 0);
//! - writable: the private patched copy, the report's directory, and a
//!   private `/tmp` (a size-capped tmpfs, also `/dev/shm`); everything else
//!   the command sees is a read-only bind of the host's top-level
//!   directories (and of every mount below them), except `/proc` (the
//!   sandbox's own), `/dev` (null, zero, full, random, urandom: no
//!   terminal), and
//!   `/home`, `/root`, `/run`, `/mnt`, `/media`, `/sys`, `/tmp`, which are
//!   not there at all;
//! - not visible (an empty tmpfs over them): `$HOME`, the compile-cache
//!   directory, the cache key's directory, the ledger, the user's
//!   checkout, and `$TMPDIR` (where the trial's other trees live);
//! - environment: `PATH`, `LANG`, a fresh `HOME` in the private `/tmp`,
//!   and `AGENT_LEDGER_JUNIT`; nothing else;
//! - no network: a new network namespace with only its loopback, brought
//!   up (127.0.0.1 and ::1) by this binary as hakoniwa's network helper
//!   (`netns::loopback_only`), as a container started with no network has;
//!   and every process dies with the command (PID namespace);
//! - a wall-clock limit, an output cap and a memory cap (the anonymous
//!   memory of every process in its PID namespace together, plus what it
//!   keeps in its private `/tmp` and `/dev/shm`, looked at every 100 ms),
//!   any of which kills it; and a cap on the number of processes it runs at
//!   once (`RLIMIT_NPROC` in its own user namespace, which the kernel counts
//!   per namespace, so a fork bomb fails to fork instead of filling the
//!   host; the kernel never applies it to uid 0, so the host also counts
//!   the processes every 20 ms and kills the command past the cap).
//!
//! When the kernel refuses the namespaces the command is not run, unless
//! the operator passes `--allow-unsandboxed` (alias `--allow-network`): then
//! it runs as the operator, in its own process group, with the same scrubbed
//! environment, limits and fresh `HOME`, and the record says
//! `sandbox: "none"`, `network: "allowed"`.

mod accounting;
pub(crate) mod cgroup;
mod identity;
mod mounts;
mod pumps;
mod run;

pub(crate) use identity::{give_away, host_root, sandbox_host_id};
pub(crate) use run::{Caps, run_unsandboxed};

use crate::exit::{Error, Result};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use identity::as_user;
use mounts::host_mounts;

/// The uid and gid the command runs as inside its user namespace when the
/// host user is root (any non-zero id: it holds no capabilities).
pub const SANDBOX_ID: u32 = 1000;
/// The host uid and gid the test command runs as when agent-ledger runs as
/// root: never uid 0, which kernel interfaces trust without capabilities (a
/// sandboxed uid 0 wrote `kernel.core_pattern` and had the kernel run its
/// script as host root, and wrote the limits of its own cgroup through a
/// cgroupfs mounted in a namespace of its own). It owns the command's copy
/// and scratch directory and nothing else.
pub const SANDBOX_HOST_ID: u32 = 0x7ff0_0000;
/// The size of the private `/tmp` and `/dev/shm`.
pub(crate) const TMPFS_SIZE: &str = "size=1g";
/// How often the host looks at the command while it runs.
pub(crate) const POLL: Duration = Duration::from_millis(20);
/// Open descriptors per process of the test command.
pub(crate) const TEST_NOFILE: u64 = 4096;
/// How often (in polls) the host adds up the command's memory.
pub(crate) const MEMORY_EVERY: u32 = 5;

/// `HOME` inside the sandbox.
pub(crate) const SANDBOX_HOME: &str = "/tmp/home";

/// How the command ended.
pub(crate) struct Ran {
    pub(crate) exit_code: Option<i32>,
    pub(crate) stopped: Option<crate::record::Stopped>,
    /// Completion ids the command printed (see `completion_ids`).
    pub(crate) completion_ids: BTreeSet<String>,
    /// What it printed, up to the output cap.
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

/// The sandbox's layout: also what `trace exec` runs an agent's command in
/// (the workspace as `tree`, the trace's directory among `hidden`).
pub(crate) struct Jail<'a> {
    /// Writable, at its own path: itself, or (with `overlay`) an overlay
    /// with it as the read-only lower layer.
    pub tree: &'a Path,
    /// Show `tree` as the lower layer of this overlay, never writable
    /// itself (`test_tree`).
    pub overlay: Option<&'a crate::replay::test_tree::Overlay>,
    /// Writable too (the test command's report).
    pub report_dir: &'a Path,
    /// Shown as empty, read-only directories.
    pub hidden: &'a [PathBuf],
    /// Paths inside `tree` bound read-only over the writable copy.
    pub read_only: &'a [PathBuf],
    /// Host paths shown read-only even where a hidden one holds them
    /// (`--test-ro`, checked by [`check_read_only`]).
    pub shown: &'a [PathBuf],
    /// Where the empty directories shown over hidden ones live.
    pub scratch: &'a Path,
    /// Keep the host's network (`trace exec --allow-network`); otherwise a
    /// network namespace of its own with only its loopback, up.
    pub network: bool,
    /// Show only the system directories ([`SYSTEM_DIRS`]) of the host, not
    /// every other top-level directory: the test command's view, where
    /// nothing but the tree, the system and `--test-ro` paths is visible (a
    /// dataset holding the upstream fix, other models' predictions, data
    /// directories). `trace exec` keeps the wider view.
    pub system_only: bool,
    /// The host uid (and gid) to make the sandbox as, when this process is
    /// root ([`SANDBOX_HOST_ID`]): the thread that makes it drops to that
    /// user first, so the sandbox's user namespace belongs to it and its
    /// processes are that user on the host, never uid 0. `tree`,
    /// `report_dir` and `scratch` must be that user's.
    pub host_user: Option<u32>,
}

/// The top-level directories the test command sees ([`Jail::system_only`]):
/// programs, libraries and system configuration. Anything else it needs (a
/// virtualenv, a toolchain, a data directory) is shown with `--test-ro`.
pub(crate) const SYSTEM_DIRS: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "nix",
];

/// Top-level directories never bound into the sandbox: made fresh
/// (`/proc`, `/dev`, `/tmp`), or nobody's business (homes, runtime sockets,
/// removable and other mounts, kernel interfaces).
/// Made fresh in every sandbox: never a hidden path's bind.
pub(crate) const FRESH: &[&str] = &["/tmp", "/dev", "/dev/shm", "/proc"];

pub(crate) const NOT_BOUND: &[&str] = &[
    "proc",
    "dev",
    "tmp",
    "sys",
    "run",
    "home",
    "root",
    "mnt",
    "media",
    "lost+found",
];

impl Jail<'_> {
    pub(crate) fn container(&self) -> Result<hakoniwa::Container> {
        use hakoniwa::{Container, MountOptions, Namespace};
        let mut c = Container::new();
        for ns in [Namespace::Network, Namespace::Ipc, Namespace::Uts] {
            if ns == Namespace::Network && self.network {
                continue;
            }
            c.unshare(ns);
        }
        if !self.network {
            c.network(crate::netns::loopback_only());
        }
        let me = nix::unistd::geteuid().as_raw();
        let my_group = nix::unistd::getegid().as_raw();
        c.uidmap(if me == 0 { SANDBOX_ID } else { me });
        c.gidmap(if me == 0 { SANDBOX_ID } else { my_group });
        c.hostname("agent-ledger-tests");
        let root = Path::new("/");
        let top = std::fs::read_dir(root).map_err(|e| Error::read(root, e))?;
        let mut bound = Vec::new();
        for entry in top {
            let entry = entry.map_err(|e| Error::read(root, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if NOT_BOUND.contains(&name.as_ref())
                || (self.system_only && !SYSTEM_DIRS.contains(&name.as_ref()))
            {
                continue;
            }
            let path = entry.path();
            let ft = entry.file_type().map_err(|e| Error::read(&path, e))?;
            if ft.is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| Error::read(&path, e))?;
                c.symlink(&target.to_string_lossy(), &path.to_string_lossy());
            } else if ft.is_dir() {
                c.bindmount_ro(&path.to_string_lossy(), &path.to_string_lossy());
                bound.push(path);
            }
        }
        // A read-only remount does not reach the mounts below a bind: bind
        // each of them read-only too.
        for mount in host_mounts() {
            if mount != root
                && bound.iter().any(|b| mount.starts_with(b))
                && !self.hidden.iter().any(|h| mount.starts_with(h))
            {
                let m = mount.to_string_lossy();
                c.bindmount_ro(&m, &m);
            }
        }
        let flags = MountOptions::NOSUID | MountOptions::NODEV;
        let tmpfs = |c: &mut Container, target: &str| {
            c.mount(
                "tmpfs",
                target,
                "tmpfs",
                flags,
                Some(format!("{TMPFS_SIZE},mode=1777")),
            );
        };
        // A `/dev` of its own with the harmless devices only: not hakoniwa's
        // devfs, which binds `/dev/tty` (the operator's terminal, for a
        // process of its session) and the terminal itself as `/dev/console`.
        // The command also runs in a session of its own with no controlling
        // terminal ([`in_new_session`]). Not `nodev`: the devices bound
        // onto it are the host's own, which a `nodev` parent makes
        // unopenable; the tmpfs itself holds no device the command could
        // make (it has no capability to `mknod`).
        c.mount(
            "tmpfs",
            "/dev",
            "tmpfs",
            MountOptions::NOSUID,
            Some("size=1m,mode=755".to_string()),
        );
        for dev in DEVICES {
            let dev = format!("/dev/{dev}");
            c.bindmount_rw(&dev, &dev);
        }
        for (i, name) in ["stdin", "stdout", "stderr"].iter().enumerate() {
            c.symlink(&format!("/proc/self/fd/{i}"), &format!("/dev/{name}"));
        }
        c.symlink("/proc/self/fd", "/dev/fd");
        tmpfs(&mut c, "/tmp");
        tmpfs(&mut c, "/dev/shm");
        // Each hidden directory is a read-only bind of an empty directory of
        // its own (an empty tmpfs would be writable by the command, and
        // could not hold the mount points of a tree below it).
        // Canonical, because the sandbox mirrors the real directories; one
        // inside another hidden one is hidden with it (binding it too would
        // make its mount point appear in the empty directory).
        let hidden: Vec<PathBuf> = self
            .hidden
            .iter()
            .filter_map(|h| std::fs::canonicalize(h).ok())
            .filter(|h| !FRESH.iter().any(|f| h == Path::new(f)) && h != root && h.is_dir())
            .collect();
        for (i, hide) in hidden.iter().enumerate() {
            if hidden.iter().any(|h| h != hide && hide.starts_with(h)) {
                continue;
            }
            let empty = self.scratch.join(format!("hidden-{i}"));
            std::fs::create_dir_all(&empty).map_err(|e| Error::write(&empty, e))?;
            c.bindmount_ro(&empty.to_string_lossy(), &hide.to_string_lossy());
        }
        // After the hidden directories they may lie in (hakoniwa mounts in
        // target-path order).
        for shown in self.shown {
            let shown = shown.to_string_lossy();
            c.bindmount_ro(&shown, &shown);
        }
        c.dir(SANDBOX_HOME, 0o700);
        // Where a bind of a path inside the tree takes it from: the
        // overlay's view, where there is one (never its lower layer).
        let view = |p: &Path| match self.overlay {
            Some(o) => o.inside(p).to_string_lossy().into_owned(),
            None => p.to_string_lossy().into_owned(),
        };
        match self.overlay {
            Some(o) => {
                c.rootdir(&o.root);
                c.mount(
                    "overlay",
                    &self.tree.to_string_lossy(),
                    "overlay",
                    MountOptions::NOSUID | MountOptions::NODEV,
                    Some(o.options()),
                );
            }
            None => {
                let rw = self.tree.to_string_lossy();
                c.bindmount_rw(&rw, &rw);
            }
        }
        let rw = self.report_dir.to_string_lossy();
        c.bindmount_rw(&rw, &rw);
        // Mounted after the tree (hakoniwa mounts in target-path order).
        // Every directory between the tree and a read-only root is bound
        // onto itself (still writable): a mount point cannot be renamed, so
        // the command cannot move a root's parent away, make a fixture of
        // its own there and move it back.
        let mut ancestors = BTreeSet::new();
        for ro in self.read_only {
            let mut dir = ro.parent();
            while let Some(d) = dir {
                if d == self.tree || !d.starts_with(self.tree) {
                    break;
                }
                ancestors.insert(d.to_path_buf());
                dir = d.parent();
            }
        }
        for a in &ancestors {
            c.bindmount_rw(&view(a), &a.to_string_lossy());
        }
        for ro in self.read_only {
            c.bindmount_ro(&view(ro), &ro.to_string_lossy());
        }
        Ok(c)
    }

    /// Runs `argv` in the sandbox in `cwd`, with our stdin, stdout and
    /// stderr and no time limit (`trace exec`). Returns its exit code, or
    /// `None` and why when it did not exit on its own (a signal).
    pub(crate) fn exec(
        &self,
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
    ) -> Result<std::result::Result<i32, String>> {
        use std::io::IsTerminal;
        let c = self.container()?;
        let argv = in_new_session(argv)?;
        let mut cmd = c.command(&argv[0]);
        // Never the operator's terminal itself: what is typed is not the
        // command's to read (stdin is empty then), and what it prints
        // reaches a terminal only through the escaping of untrusted text.
        let tty_in = std::io::stdin().is_terminal();
        let tty_out = std::io::stdout().is_terminal();
        let tty_err = std::io::stderr().is_terminal();
        let stream = |tty: bool| {
            if tty {
                hakoniwa::Stdio::piped()
            } else {
                hakoniwa::Stdio::inherit()
            }
        };
        cmd.args(&argv[1..])
            .current_dir(cwd)
            .stdin(if tty_in {
                dev_null().map_err(|e| Error::read(Path::new("/dev/null"), e))?
            } else {
                hakoniwa::Stdio::inherit()
            })
            .stdout(stream(tty_out))
            .stderr(stream(tty_err));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Internal(format!("cannot run the traced command: {e}")))?;
        let pumps: Vec<std::thread::JoinHandle<()>> = [
            child
                .stdout
                .take()
                .map(|r| (Box::new(r) as Box<dyn Read + Send>, false)),
            child
                .stderr
                .take()
                .map(|r| (Box::new(r) as Box<dyn Read + Send>, true)),
        ]
        .into_iter()
        .flatten()
        .map(|(mut r, to_err)| {
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let text = crate::output::inert_stream(&buf[..n]);
                    let _ = if to_err {
                        std::io::stderr().lock().write_all(text.as_bytes())
                    } else {
                        std::io::stdout().lock().write_all(text.as_bytes())
                    };
                }
            })
        })
        .collect();
        let status = child
            .wait()
            .map_err(|e| Error::Internal(format!("cannot wait for the traced command: {e}")))?;
        for p in pumps {
            let _ = p.join();
        }
        if status.exit_code.is_none() && status.code == 125 {
            return Err(Error::Internal(format!(
                "the traced command's sandbox failed: {}",
                status.reason
            )));
        }
        Ok(status.exit_code.ok_or(status.reason))
    }

    /// Makes the sandbox once with a command that does nothing: an error
    /// says why the kernel (or this machine) refuses it.
    pub(crate) fn probe(&self) -> std::result::Result<(), String> {
        as_user(self.host_user, None, || self.probe_here()).unwrap_or_else(|e| Err(e.to_string()))
    }

    pub(crate) fn probe_here(&self) -> std::result::Result<(), String> {
        let c = self.container().map_err(|e| e.to_string())?;
        let null = || dev_null().map_err(|e| format!("cannot open /dev/null: {e}"));
        let status = c
            .command("/bin/sh")
            .args(["-c", ":"])
            .stdin(null()?)
            .stdout(null()?)
            .stderr(null()?)
            .status()
            .map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            Err(status.reason)
        }
    }
}

/// The devices the sandbox's `/dev` holds, bound from the host's.
pub(crate) const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// Where util-linux's `setsid` is on this host (the sandbox sees the host's
/// directories at their own paths).
pub(crate) const SETSID: &[&str] = &["/usr/bin/setsid", "/bin/setsid"];

/// `argv` run by `setsid --wait`: in a session of its own with no
/// controlling terminal, so the code under test can neither open the
/// operator's terminal (`/dev/tty`) nor push keystrokes into it (TIOCSTI
/// needs the terminal to be the caller's controlling one). `setsid` is the
/// host's, trusted; it waits and exits with the command's status.
pub(crate) fn in_new_session(argv: &[String]) -> Result<Vec<String>> {
    let setsid = SETSID
        .iter()
        .find(|p| Path::new(p).is_file())
        .ok_or_else(|| {
            Error::Missing(
                "`setsid` (util-linux) is not installed: the sandboxed command would share this terminal's session, so it does not run".into(),
            )
        })?;
    let mut out = vec![setsid.to_string(), "--wait".to_string()];
    out.extend(argv.iter().cloned());
    Ok(out)
}

pub(crate) fn dev_null() -> std::io::Result<hakoniwa::Stdio> {
    Ok(std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_runs_in_a_session_of_its_own() {
        let argv = in_new_session(&["sh".into(), "-c".into(), "true".into()]).unwrap();
        assert!(SETSID.contains(&argv[0].as_str()), "{argv:?}");
        assert_eq!(&argv[1..], ["--wait", "sh", "-c", "true"]);
    }

    #[test]
    fn nothing_writable_is_bound_from_the_host() {
        // The fresh directories are the jail's own, never the host's, and
        // no system directory is also one the jail never binds.
        for dir in FRESH {
            let top = dir.trim_start_matches('/').split('/').next().unwrap();
            assert!(NOT_BOUND.contains(&top), "{dir}");
            assert!(!SYSTEM_DIRS.contains(&top), "{dir}");
        }
        for dir in SYSTEM_DIRS {
            assert!(!NOT_BOUND.contains(dir), "{dir}");
        }
    }
}
