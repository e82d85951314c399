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
