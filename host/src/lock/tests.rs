use super::*;
use std::fs;

fn file(path: &str, content: &str) -> LockEntry {
    LockEntry {
        path: path.into(),
        kind: crate::record::EntryKind::File,
        size: content.len() as u64,
        sha256: sha256_hex(content.as_bytes()),
        target: None,
        executable: false,
    }
}

fn link(path: &str, target: &str) -> LockEntry {
    LockEntry {
        path: path.into(),
        kind: crate::record::EntryKind::Symlink,
        size: target.len() as u64,
        sha256: sha256_hex(target.as_bytes()),
        target: Some(target.into()),
        executable: false,
    }
}

fn lock(files: Vec<LockEntry>) -> FixtureLock {
    FixtureLock {
        schema: 1,
        record: "fixture_lock".into(),
        run_id: "run-001".into(),
        transcript_sha256: "0".repeat(64),
        base_revision: None,
        roots: vec![String::new()],
        count: files.len() as u64,
        dir_hash: dir_hash(&files),
        files,
        evaluation: None,
        none: None,
    }
}

/// The tree the dirHash vector was computed from.
fn small_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("a.txt"), "hello\n").unwrap();
    fs::write(root.join("sub/b.txt"), "").unwrap();
    fs::write(root.join("sub/Z.txt"), "z").unwrap();
    fs::write(root.join("sub/sp ace.txt"), "x y").unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    dir
}

#[test]
fn dir_hash_is_the_in_toto_dir_hash_of_the_tree() {
    // Computed in a shell on the same tree (`small_tree`), with the
    // in-toto definition:
    //   find . -type f | cut -c3- | LC_ALL=C sort \
    //     | xargs -r -d '\n' sha256sum | sha256sum
    // which excludes the symlink and sorts `sub/Z.txt` before `sub/b.txt`.
    let dir = small_tree();
    let scan = scan(dir.path(), &[String::new()]).unwrap();
    let paths: Vec<&str> = scan.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["a.txt", "link", "sub/Z.txt", "sub/b.txt", "sub/sp ace.txt"]
    );
    assert_eq!(
        dir_hash(&scan.entries),
        "df37c93b7e039ddff4564bbe4ecab23c814fe5bd0f4fde436c3a05d204b53d25"
    );
}

#[test]
fn scan_lists_paths_bytewise_where_a_directory_name_is_a_prefix() {
    // `a-b` and `a.txt` sort before `a/…` (`-` and `.` are below `/`),
    // `a0` after it: the order of paths, not of names.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("a/x")).unwrap();
    for name in ["a0", "a-b", "a.txt", "a/x/y", "a/z", "A"] {
        fs::write(root.join(name), name).unwrap();
    }
    for roots in [vec![String::new()], vec!["a".into(), String::new()]] {
        let scan = scan(root, &roots).unwrap();
        let paths: Vec<&str> = scan.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            ["A", "a-b", "a.txt", "a/x/y", "a/z", "a0"],
            "{roots:?}"
        );
    }
}

#[test]
fn dir_hash_of_no_files_is_the_sha256_of_nothing() {
    assert_eq!(
        dir_hash(&[link("l", "x")]),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn scan_records_a_symlink_as_its_target_text_without_following_it() {
    let dir = small_tree();
    let scan = scan(dir.path(), &["link".into(), "missing".into()]).unwrap();
    assert_eq!(scan.entries, [link("link", "a.txt")]);
    assert_eq!(scan.empty_roots, ["missing"]);
}

#[test]
fn scan_refuses_a_root_reached_through_a_link_out_of_the_tree() {
    // The files beyond the link exist: a refusal is never a missing file.
    let outside = small_tree();
    let dir = small_tree();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    for root in ["out/sub", "out/a.txt"] {
        let err = scan(dir.path(), &[root.into()]).unwrap_err();
        assert!(
            err.to_string().contains(&format!("{root}`")),
            "{root}: {err}"
        );
    }
    // The link itself, as a root, is recorded and not followed.
    let scan = scan(dir.path(), &["out".into()]).unwrap();
    assert_eq!(scan.entries.len(), 1);
    assert_eq!(scan.entries[0].kind, crate::record::EntryKind::Symlink);
}

#[test]
fn normalize_root_keeps_a_relative_root_in_posix_form() {
    assert_eq!(
        normalize_root("./tests//fixtures/").unwrap(),
        "tests/fixtures"
    );
    assert_eq!(normalize_root(".").unwrap(), "");
}

#[test]
fn normalize_root_refuses_an_absolute_root() {
    let err = normalize_root("/etc").unwrap_err();
    assert_eq!(err.exit_code(), crate::exit::Sysexit::Usage);
    assert_eq!(
        err.to_string(),
        "fixture root `/etc` must be a relative path inside the repository"
    );
}

#[test]
fn normalize_root_refuses_a_parent_component() {
    for root in ["..", "../outside", "tests/../../outside", "tests/.."] {
        let err = normalize_root(root).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("fixture root `{root}` must be")),
            "{err}"
        );
    }
}

#[test]
fn normalize_root_refuses_the_git_directory() {
    // scan() skips `.git` only directly under the repository root; a root
    // that names it (or is inside it) must be refused before the walk.
    for root in [".git", ".git/hooks", "sub/.git", ".GIT"] {
        assert!(normalize_root(root).is_err(), "`{root}` was accepted");
    }
}

#[test]
fn scan_records_the_executable_bit_and_compare_sees_it_change() {
    use std::os::unix::fs::PermissionsExt;
    let dir = small_tree();
    let roots = vec![String::new()];
    let before = scan(dir.path(), &roots).unwrap().entries;
    assert!(before.iter().all(|e| !e.executable));
    let first = before
        .iter()
        .find(|e| e.kind == crate::record::EntryKind::File)
        .unwrap()
        .path
        .clone();
    let path = dir.path().join(&first);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let after = scan(dir.path(), &roots).unwrap().entries;
    assert!(after.iter().find(|e| e.path == first).unwrap().executable);
    // Same bytes, same size: only the mode changed, and that drifts.
    assert_eq!(compare(&before, &after).changed, [first]);
    // A lock written before the field existed reads as not executable.
    let old: LockEntry =
        serde_json::from_str(r#"{"path":"a","kind":"file","size":0,"sha256":"x"}"#).unwrap();
    assert!(!old.executable);
}

#[test]
fn compare_reports_added_removed_and_changed_paths() {
    let locked = [
        file("a", "1"),
        file("b", "2"),
        file("c", "3"),
        link("d", "a"),
        file("e", "5"),
    ];
    let now = [
        file("a", "1"),
        file("c", "33"),
        link("d", "c"),
        link("e", "5"),
        file("f", "6"),
    ];
    assert_eq!(
        compare(&locked, &now),
        Drift {
            added: vec!["f".into()],
            removed: vec!["b".into()],
            changed: vec!["c".into(), "d".into(), "e".into()],
        }
    );
    assert!(compare(&locked, &locked).is_empty());
}

#[test]
fn compare_of_an_emptied_root_removes_every_path() {
    let locked = [file("a", "1"), file("b", "2")];
    assert_eq!(compare(&locked, &[]).removed, ["a", "b"]);
    assert_eq!(compare(&[], &locked).added, ["a", "b"]);
}

#[test]
fn check_consistent_accepts_a_lock_that_follows_from_its_files() {
    let l = lock(vec![file("a", "1"), link("b", "a"), file("c", "3")]);
    check_consistent(&l, Path::new("fixtures/run-001.lock.json")).unwrap();
}

#[test]
fn check_consistent_refuses_a_count_that_does_not_match() {
    let mut l = lock(vec![file("a", "1"), file("b", "2")]);
    l.count = 3;
    let err = check_consistent(&l, Path::new("fixtures/run-001.lock.json")).unwrap_err();
    assert_eq!(err.exit_code(), crate::exit::Sysexit::Data);
    assert_eq!(
        err.to_string(),
        "`fixtures/run-001.lock.json`: field `count` is 3 but `files` has 2 entries"
    );
}

#[test]
fn check_consistent_refuses_a_dir_hash_that_does_not_match() {
    // A row edited after the lock was taken.
    let mut l = lock(vec![file("a", "1"), file("b", "2")]);
    l.files[1] = file("b", "edited");
    let err = check_consistent(&l, Path::new("fixtures/run-001.lock.json"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "`fixtures/run-001.lock.json`: field `dir_hash` is {} but the files listed hash to {}",
            l.dir_hash,
            dir_hash(&l.files)
        )),
        "{err}"
    );
}

#[test]
fn check_consistent_refuses_unsorted_or_duplicate_paths() {
    for files in [
        vec![file("b", "2"), file("a", "1")],
        vec![file("a", "1"), file("a", "1")],
    ] {
        let err = check_consistent(&lock(files), Path::new("l.json"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "`l.json`: field `files` is not sorted by path without duplicates"
        );
    }
}
