use super::*;

const HYBRID: &str = "\
35 25 0:30 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory
36 25 0:31 / /sys/fs/cgroup/unified rw,nosuid shared:15 - cgroup2 cgroup2 rw
";
const SYSTEMD: &str = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";

#[test]
fn the_unified_mount_is_found_in_mountinfo_with_its_escapes_undone() {
    let at = |point: &str, root: &str, nsdelegate| Mount {
        point: PathBuf::from(point),
        root: root.to_string(),
        nsdelegate,
    };
    assert_eq!(
        mount(HYBRID),
        Some(at("/sys/fs/cgroup/unified", "/", false))
    );
    assert_eq!(mount(SYSTEMD), Some(at("/sys/fs/cgroup", "/", true)));
    let spaced = "40 1 0:40 /kubepods/pod\\0401 /mnt/cg\\040two rw - cgroup2 none rw\n";
    assert_eq!(
        mount(spaced),
        Some(at("/mnt/cg two", "/kubepods/pod 1", false))
    );
    assert_eq!(
        mount("35 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"),
        None
    );
}

#[test]
fn this_process_cgroup_is_placed_under_the_mount_and_never_outside_it() {
    let mnt = Path::new("/sys/fs/cgroup");
    let table = "12:pids:/x\n0::/system.slice/runner.service\n";
    assert_eq!(
        own(mnt, "/", table),
        Some(PathBuf::from("/sys/fs/cgroup/system.slice/runner.service"))
    );
    // Mounted from a subtree: the path is relative to the mount's root.
    assert_eq!(
        own(mnt, "/kubepods", "0::/kubepods/pod1/c\n"),
        Some(PathBuf::from("/sys/fs/cgroup/pod1/c"))
    );
    assert_eq!(own(mnt, "/kubepods", "0::/elsewhere\n"), None);
    assert_eq!(own(mnt, "/", "0::/a/../../etc\n"), None);
    assert_eq!(own(mnt, "/", "4:memory:/a\n"), None, "v1 only");
}

/// A stand-in cgroupfs: `dirs` made below a temporary root, each with
/// `cgroup.subtree_control` holding the controllers given.
fn tree(dirs: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (dir, enabled) in dirs {
        let d = root.path().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cgroup.subtree_control"), enabled).unwrap();
    }
    root
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_cgroup_is_made_in_the_named_parent_and_never_above_this_process_own() {
    let root = tree(&[
        ("", "cpu memory pids"),
        ("system.slice", "memory pids"),
        ("system.slice/runner.service", ""),
    ]);
    let own = root.path().join("system.slice/runner.service");
    std::fs::write(own.join("cgroup.procs"), "1\n").unwrap();
    // Its parent hands memory and pids down, but a limit set there (or on
    // its own cgroup) must keep bounding the command: no cgroup is made.
    assert!(V2::in_tree(root.path(), &own, None, 1 << 30, 64, &CONTROLLERS).is_none());

    let slice = root.path().join("system.slice");
    let cg = V2::in_tree(root.path(), &own, Some(&slice), 200 << 20, 64, &CONTROLLERS).unwrap();
    assert_eq!(cg.dir.parent(), Some(slice.as_path()));
    assert_eq!(read(&cg.dir.join("memory.max")), (200u64 << 20).to_string());
    assert_eq!(read(&cg.dir.join("pids.max")), "64");
    // Nothing can be made below it, from any namespace.
    assert_eq!(read(&cg.dir.join("cgroup.max.descendants")), "0");
    assert_eq!(read(&cg.dir.join("cgroup.max.depth")), "0");
    // A plain directory has no memory.swap.max; a cgroupfs's is set to 0.
    assert!(!cg.dir.join("memory.swap.max").exists());
    let dir = cg.dir.clone();
    // A cgroupfs's control files go with the directory; a plain one's not.
    for f in std::fs::read_dir(&dir).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    drop(cg);
    assert!(!dir.exists(), "removed when dropped");

    // Only what is wanted (pids, where a v1 hierarchy holds memory).
    let cg = V2::in_tree(root.path(), &own, Some(&slice), 200 << 20, 64, &["pids"]).unwrap();
    assert!(!cg.dir.join("memory.max").exists());
    assert_eq!(read(&cg.dir.join("pids.max")), "64");

    // A named parent outside the hierarchy, or that hands nothing down.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("cgroup.subtree_control"), "memory").unwrap();
    assert!(V2::in_tree(root.path(), &own, Some(outside.path()), 1, 1, &CONTROLLERS).is_none());
    assert!(V2::in_tree(root.path(), &own, Some(&own), 1, 1, &CONTROLLERS).is_none());
    // One that does not hold this process's own cgroup: no move could
    // reach it.
    let other = root.path().join("other.slice");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("cgroup.subtree_control"), "memory pids").unwrap();
    assert!(V2::in_tree(root.path(), &own, Some(&other), 1, 1, &CONTROLLERS).is_none());
    let sneaky = root.path().join("system.slice/../system.slice");
    assert!(V2::in_tree(root.path(), &own, Some(&sneaky), 1, 1, &CONTROLLERS).is_none());
}

#[test]
fn a_delegated_cgroup_holding_this_process_alone_hands_the_controllers_down() {
    let root = tree(&[("", ""), ("user.slice/scope", "")]);
    let own = root.path().join("user.slice/scope");
    let me = std::process::id();
    std::fs::write(own.join("cgroup.procs"), format!("{me}\n")).unwrap();
    std::fs::write(own.join("cgroup.controllers"), "cpu pids").unwrap();
    let cg = V2::in_tree(root.path(), &own, None, 1 << 30, 32, &CONTROLLERS).unwrap();
    // This process moved into a leaf of its own; the scope hands pids (not
    // memory, which it does not have) to its children, the command's one.
    let leaf = own.join(format!("agent-ledger-{me}-self"));
    assert_eq!(read(&leaf.join("cgroup.procs")), me.to_string());
    assert_eq!(read(&own.join("cgroup.subtree_control")), "+pids");
    assert_eq!(cg.dir.parent(), Some(own.as_path()));
    assert_eq!(read(&cg.dir.join("pids.max")), "32");
    assert!(!cg.dir.join("memory.max").exists());
    // The next trial of this process, now in the leaf, uses the same
    // parent (not the leaf, not above it).
    let next = V2::in_tree(root.path(), &leaf, None, 1 << 30, 16, &CONTROLLERS).unwrap();
    assert_eq!(next.dir.parent(), Some(own.as_path()));
    assert_ne!(next.dir, cg.dir);
}

#[test]
fn a_cgroup_shared_with_other_processes_is_left_alone() {
    let root = tree(&[("", ""), ("scope", "")]);
    let own = root.path().join("scope");
    std::fs::write(
        own.join("cgroup.procs"),
        format!("1\n{}\n", std::process::id()),
    )
    .unwrap();
    std::fs::write(own.join("cgroup.controllers"), "memory pids").unwrap();
    assert!(V2::in_tree(root.path(), &own, None, 1 << 30, 32, &CONTROLLERS).is_none());
    assert_eq!(
        read(&own.join("cgroup.subtree_control")),
        "",
        "nothing enabled"
    );
    let made: Vec<_> = std::fs::read_dir(&own)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(made.is_empty(), "no cgroup made: {made:?}");
}

#[test]
fn the_held_shell_runs_nothing_without_the_word_and_the_command_with_it() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let run = |input: Option<&[u8]>| {
        let mut child = Command::new("/bin/sh")
            .args(["-c", HELD, "/bin/sh", "-c", "echo ran; cat"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        if let Some(input) = input {
            stdin.write_all(input).unwrap();
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    assert_eq!(run(None), (Some(125), String::new()));
    assert_eq!(run(Some(b"nope\n")), (Some(125), String::new()));
    // The command's standard input is /dev/null, not the pipe.
    assert_eq!(run(Some(b"go\nmore\n")), (Some(0), "ran\n".to_string()));
}
