//! The process leaves every network before a replay reads its inputs.
//!
//! `check`, `replay` and `verify --replay` call [`isolate`] first thing,
//! while the process still has one thread: it moves the whole process into
//! a new, empty network namespace (as root directly; otherwise inside a new
//! user namespace that maps this user to itself, so files keep their
//! owners). Nothing after that (git, the plugins, the test command's
//! sandbox) has a route to any endpoint, so a replay cannot spend a token.
//! When the kernel refuses, the run goes on and records why: the plugins
//! and the test command stay in their own sandboxes either way.

use crate::record::ReplayNetwork;
use std::sync::OnceLock;

static STATUS: OnceLock<ReplayNetwork> = OnceLock::new();

/// What the process's network isolation is.
pub fn status() -> ReplayNetwork {
    STATUS
        .get()
        .cloned()
        .unwrap_or_else(|| ReplayNetwork::NotIsolated("the process never asked to be".into()))
}

/// Moves the process into a new network namespace; returns and remembers
/// the status. Must run before any thread is started (a multithreaded
/// process cannot enter a new user namespace). Calling it twice returns the
/// first status.
pub fn isolate() -> ReplayNetwork {
    STATUS.get_or_init(|| match enter() {
        Ok(()) => ReplayNetwork::Isolated,
        Err(why) => ReplayNetwork::NotIsolated(why),
    });
    status()
}

fn enter() -> Result<(), String> {
    use nix::sched::{CloneFlags, unshare};
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    if uid.is_root() && unshare(CloneFlags::CLONE_NEWNET).is_ok() {
        return Ok(());
    }
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("the kernel refused a new user and network namespace ({e})"))?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
    };
    // A process holding a run key handed over on a descriptor is
    // non-dumpable (`trace::preload_fd_key`), and a non-dumpable process's
    // `/proc/self` files are root's: it could not write its own maps. It is
    // dumpable again for these three writes only, a window like the one
    // between its start and reading the key.
    let hidden = !nix::sys::prctl::get_dumpable().unwrap_or(true);
    if hidden {
        nix::sys::prctl::set_dumpable(true)
            .map_err(|e| format!("cannot write the user namespace's maps: {e}"))?;
    }
    let written = write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))
        .and_then(|()| write("/proc/self/setgroups", "deny\n".into()))
        .and_then(|()| write("/proc/self/gid_map", format!("{gid} {gid} 1\n")));
    if hidden && let Err(e) = nix::sys::prctl::set_dumpable(false) {
        // Never go on readable while holding the key.
        eprintln!("error: cannot make the process non-dumpable again: {e}");
        std::process::exit(70);
    }
    written
}

/// The argument that makes this binary the loopback helper
/// ([`loopback_helper`]). hakoniwa runs a container's network helper (meant
/// for pasta(1)) from the main process once the container's namespaces
/// exist and before its command starts, with the child's PID last.
const LOOPBACK_HELPER: &str = "--agent-ledger-loopback-up";

/// A sandbox's network: its own namespace with the loopback up (127.0.0.1
/// and ::1) and nothing else, as a container started with no network has,
/// so a suite can serve and request on localhost. The helper is this very
/// binary (`/proc/self/exe`), so there is nothing to install.
pub(crate) fn loopback_only() -> hakoniwa::Pasta {
    let mut helper = hakoniwa::Pasta::default();
    helper.program("/proc/self/exe").args([LOOPBACK_HELPER]);
    helper
}

/// When this process was started as the loopback helper, brings the
/// loopback of the network namespace of the PID its last argument names up
/// and exits (0, or 1 with the reason on stderr, which the sandbox then
/// reports as its error). Called first thing in `main`, before anything
/// reads the environment or starts a thread (`setns` into a user
/// namespace needs a single-threaded process).
pub fn loopback_helper() {
    // `args_os`: any other command's arguments may be bytes, not UTF-8.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // hakoniwa's line: `PROGRAM --config-net [its options] ARGS PID`, our
    // one ARG last before the PID. Nothing else any command takes starts
    // with `--config-net`.
    let n = args.len();
    if n < 4 || args[1] != "--config-net" || args[n - 2] != LOOPBACK_HELPER {
        return;
    }
    let code = match args
        .last()
        .map(|pid| bring_loopback_up(&pid.to_string_lossy()))
    {
        Some(Ok(())) => 0,
        Some(Err(why)) => {
            eprintln!("agent-ledger: cannot bring the sandbox's loopback up: {why}");
            1
        }
        None => 1,
    };
    std::process::exit(code);
}

fn bring_loopback_up(pid: &str) -> Result<(), String> {
    use nix::sched::{CloneFlags, setns};
    let pid: u32 = pid
        .parse()
        .map_err(|_| format!("`{pid}` is not a process id"))?;
    let open = |ns: &str| {
        let path = format!("/proc/{pid}/ns/{ns}");
        std::fs::File::open(&path).map_err(|e| format!("cannot open {path}: {e}"))
    };
    let (user, net) = (open("user")?, open("net")?);
    // Into the sandbox's user namespace first: its owner (this uid) holds
    // every capability there, CAP_NET_ADMIN over its network included.
    setns(user, CloneFlags::CLONE_NEWUSER).map_err(|e| format!("setns(user): {e}"))?;
    setns(net, CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns(net): {e}"))?;
    let sock = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| format!("socket: {e}"))?;
    use std::os::fd::AsRawFd;
    // SAFETY: `ifreq` is plain data; both ioctls read and write only the
    // zeroed struct given, named "lo" (NUL-terminated by the zeroing).
    unsafe {
        let mut ifr: nix::libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            ifr.ifr_name[i] = *b as nix::libc::c_char;
        }
        if nix::libc::ioctl(sock.as_raw_fd(), nix::libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            return Err(format!("SIOCGIFFLAGS: {}", std::io::Error::last_os_error()));
        }
        ifr.ifr_ifru.ifru_flags |=
            (nix::libc::IFF_UP | nix::libc::IFF_RUNNING) as nix::libc::c_short;
        if nix::libc::ioctl(sock.as_raw_fd(), nix::libc::SIOCSIFFLAGS, &mut ifr) < 0 {
            return Err(format!("SIOCSIFFLAGS: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}
