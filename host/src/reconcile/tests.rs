use super::*;

#[test]
fn status_records() {
    let raw = b"1 .M N... 100644 100644 100644 aaaa bbbb src/a b.rs\x002 R. N... 100644 100644 100644 aaaa aaaa R100 new name\x00old name\x00? un\ttracked\x00u UU N... 100644 100644 100644 100644 a b c conflict.txt\x00! ignored\x00";
    let paths = parse_status(raw).unwrap();
    let with_ignored = parse_records(raw, true).unwrap();
    assert!(with_ignored.contains(&b"ignored"[..]));
    assert_eq!(with_ignored.len(), paths.len() + 1);
    let want: BTreeSet<Vec<u8>> = [
        &b"src/a b.rs"[..],
        b"new name",
        b"old name",
        b"un\ttracked",
        b"conflict.txt",
    ]
    .iter()
    .map(|p| p.to_vec())
    .collect();
    assert_eq!(paths, want);
}

#[test]
fn paths_are_shown_exactly() {
    assert_eq!(display_path(b"src/a.rs"), "src/a.rs");
    assert_eq!(display_path("caf\u{e9} x".as_bytes()), "caf\u{e9} x");
    assert_eq!(display_path(b"a\nb"), "\"a\\nb\"");
    assert_eq!(display_path(b"q\"uote"), "\"q\\\"uote\"");
    assert_eq!(display_path(b"bad\xffbyte"), "\"bad\\377byte\"");
    // A right-to-left override cannot reorder the line it is shown on,
    // and a C1 control is escaped byte by byte, as git writes it.
    assert_eq!(
        display_path("evil\u{202e}txt.exe".as_bytes()),
        "\"evil\\342\\200\\256txt.exe\""
    );
    assert_eq!(display_path("a\u{85}b".as_bytes()), "\"a\\302\\205b\"");
}

/// A symlink is its target, never what it points at; a FIFO is refused at
/// once, without blocking.
#[test]
fn the_last_component_is_never_followed() {
    use agent_ledger_trace::entry::{Kind, digest};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("target.txt"), b"secret\n").unwrap();
    std::os::unix::fs::symlink("target.txt", root.join("link")).unwrap();
    nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let dir = open_tree(root).unwrap();
    assert_eq!(
        entry_in(&dir, root, b"link").unwrap(),
        Some(digest(
            Kind::Symlink,
            &crate::digest::sha256_hex(b"target.txt")
        ))
    );
    assert_ne!(
        entry_in(&dir, root, b"link").unwrap(),
        entry_in(&dir, root, b"target.txt").unwrap()
    );
    assert!(open_regular(&dir, root, b"link", false).is_err());
    assert!(open_regular(&dir, root, b"link", true).is_err());
    assert_eq!(std::fs::read(root.join("target.txt")).unwrap(), b"secret\n");
    let fifo = entry_in(&dir, root, b"fifo").unwrap_err().to_string();
    assert!(fifo.contains("not a regular file"), "{fifo}");
}

/// The same where `openat2` is unavailable (old kernels, seccomp, gVisor)
/// and cap-std resolves the path itself: run again in a child process
/// whose seccomp filter answers `openat2` with `ENOSYS`.
#[test]
fn the_last_component_is_never_followed_without_openat2() {
    const CHILD: &str = "AGENT_LEDGER_TEST_NO_OPENAT2";
    if std::env::var_os(CHILD).is_some() {
        deny_openat2();
        return the_last_component_is_never_followed();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "reconcile::tests::the_last_component_is_never_followed_without_openat2",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
}

/// A seccomp filter on this thread: `openat2` fails with `ENOSYS`, every
/// other call is allowed.
fn deny_openat2() {
    use nix::libc;
    let filter = [
        // A = seccomp_data.nr
        libc::sock_filter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        },
        // if A == SYS_openat2: next, else skip one
        libc::sock_filter {
            code: 0x15,
            jt: 0,
            jf: 1,
            k: libc::SYS_openat2 as u32,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl calls; `prog` and `filter` outlive them.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog
            ),
            0
        );
    }
    // The filter holds: openat2 is gone for this thread.
    let probe = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c".".as_ptr(),
            std::ptr::null::<u8>(),
            0usize,
        )
    };
    assert_eq!(probe, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ENOSYS)
    );
}
