//! An idmapped view of a tree, for the test command's overlay as root.
//!
//! As root, every run of the test command is a host user of its own
//! (`SANDBOX_HOST_ID` and up), and its user namespace maps only that user.
//! The shared base checkout's files are root's: an overlay over them would
//! show them as nobody's, and the kernel refuses to copy up a file whose
//! owner the namespace cannot name. Giving them to the run's user is not an
//! option: they are shared with the base, the property trees and every
//! other run, concurrent ones of other users included (one run's `chown`
//! took a running baseline's files away, failed its tests and so excused a
//! later patch's failures; docs/design/threat-model.md, "What each layer
//! guarantees", "The test command").
//!
//! So nothing is chowned: the tree is mounted once more, idmapped (Linux
//! 5.12 and later), so that through this one mount root's files are the
//! run's user's; the overlay takes that mount as its lower layer. The mount
//! is the run's own, removed when it is dropped (lazily, so a process still
//! in it does not keep it); one a killed run left behind is removed by the
//! sweep of stale scratch directories ([`crate::scratch`]).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::libc;

const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A read-only, idmapped mount of a tree at a path of its own; unmounted
/// when dropped.
#[derive(Debug)]
pub(crate) struct IdMapped {
    pub path: PathBuf,
}

impl Drop for IdMapped {
    fn drop(&mut self) {
        let _ = detach(&self.path);
    }
}

fn cstr(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
}

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Unmounts `path` lazily.
pub(crate) fn detach(path: &Path) -> io::Result<()> {
    let p = cstr(path)?;
    // SAFETY: a NUL-terminated path and a flag.
    check(unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH) } as libc::c_long).map(drop)
}

/// Mounts `tree` read-only at `at` (an empty directory), with files owned
/// by uid and gid 0 shown as owned by `id`. Needs root in the initial user
/// namespace.
pub(crate) fn mount(tree: &Path, at: &Path, id: u32) -> io::Result<IdMapped> {
    let userns = user_namespace(id)?;
    let src = cstr(tree)?;
    // SAFETY: the syscalls take a directory fd, NUL-terminated paths, flag
    // words and a pointer to a properly sized, initialised `mount_attr`;
    // the fd returned is owned from here on.
    let tree_fd = unsafe {
        let fd = check(libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            src.as_ptr(),
            (OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint) as libc::c_long,
        ))?;
        OwnedFd::from_raw_fd(fd as i32)
    };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        attr_clr: 0,
        propagation: libc::MS_PRIVATE,
        userns_fd: userns.as_raw_fd() as u64,
    };
    let empty = c"";
    // SAFETY: as above.
    unsafe {
        check(libc::syscall(
            libc::SYS_mount_setattr,
            tree_fd.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_long,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ))?;
    }
    let dst = cstr(at)?;
    // SAFETY: as above.
    unsafe {
        check(libc::syscall(
            libc::SYS_move_mount,
            tree_fd.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            dst.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH as libc::c_long,
        ))?;
    }
    Ok(IdMapped {
        path: at.to_path_buf(),
    })
}

/// A user namespace that maps uid and gid 0 to `id` (and nothing else),
/// held by a descriptor: made by a child that only waits, whose maps this
/// process (root) writes.
fn user_namespace(id: u32) -> io::Result<OwnedFd> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", "read _"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_clear();
    // SAFETY: `unshare` is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWUSER) == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
    let mut child = cmd.spawn()?;
    let result = (|| {
        let proc = PathBuf::from(format!("/proc/{}", child.id()));
        std::fs::write(proc.join("uid_map"), format!("0 {id} 1\n"))?;
        std::fs::write(proc.join("gid_map"), format!("0 {id} 1\n"))?;
        let ns = std::fs::File::open(proc.join("ns/user"))?;
        Ok(OwnedFd::from(ns))
    })();
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// Unmounts (lazily) every mount at or below `dir`, deepest first.
pub(crate) fn detach_mounts_under(dir: &Path) {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let mut mounts: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|m| PathBuf::from(m.replace("\\040", " ")))
        .filter(|m| m.starts_with(dir))
        .collect();
    mounts.sort();
    for m in mounts.iter().rev() {
        let _ = detach(m);
    }
}
