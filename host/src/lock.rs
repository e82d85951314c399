//! The fixture lock: every file under the fixture roots, hashed before any
//! property runs, and the comparison that turns drift into
//! `fixture_mismatch`.
//!
//! Files are hashed in parallel (rayon) with SHA-NI where the CPU has it.
//! Symlinks are recorded as links (their target text) and never followed, so
//! a link cannot pull content from outside the root into the lock; every
//! read goes through a cap-std `Dir` on the repository, so neither can a
//! root reached through a link.

use crate::digest::{sha256_hex, sha256_reader};
use crate::exit::{Error, Result};
use crate::record::{Drift, FixtureLock, LockEntry};
use cap_std::fs::Dir;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// Normalises a configured root to a repository-relative POSIX path, refusing
/// anything that could leave the repository.
pub fn normalize_root(root: &str) -> Result<String> {
    let path = Path::new(root);
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) if p.eq_ignore_ascii_case(".git") => {
                return Err(Error::Usage(format!(
                    "fixture root `{root}` is inside `.git`: the repository's own metadata is never a fixture"
                )));
            }
            Component::Normal(p) => parts.push(
                p.to_str()
                    .ok_or_else(|| Error::Usage(format!("fixture root `{root}` is not UTF-8")))?
                    .to_string(),
            ),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Error::Usage(format!(
                    "fixture root `{root}` must be a relative path inside the repository"
                )));
            }
        }
    }
    Ok(parts.join("/"))
}

/// What a scan of the roots found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Entries sorted bytewise by path, without duplicates.
    pub entries: Vec<LockEntry>,
    /// Roots that do not exist or hold no file.
    pub empty_roots: Vec<String>,
}

/// A path the walk found, to hash: a file or a symlink.
struct Found {
    path: String,
    is_link: bool,
}

/// Walks and hashes `roots` (normalised, relative to `repo`).
///
/// The tree may be a patched, untrusted one: every read goes through a
/// cap-std [`Dir`] opened on `repo`, which no `..` or link can walk out of.
/// A root reached through a link out of the tree is an error naming it,
/// never an empty root.
pub fn scan(repo: &Path, roots: &[String]) -> Result<Scan> {
    let started = std::time::Instant::now();
    let top = Dir::open_ambient_dir(repo, cap_std::ambient_authority())
        .map_err(|e| Error::read(repo, e))?;
    let mut found: Vec<Found> = Vec::new();
    let mut empty_roots = Vec::new();
    for root in roots {
        let before = found.len();
        if root.is_empty() {
            walk(&top, repo, "", &mut found)?;
        } else {
            match top.symlink_metadata(root) {
                Ok(meta) => {
                    let ft = meta.file_type();
                    if ft.is_dir() {
                        let dir = top
                            .open_dir(root)
                            .map_err(|e| Error::read(&repo.join(root), e))?;
                        walk(&dir, repo, root, &mut found)?;
                    } else {
                        found.push(entry(repo, root, ft)?);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::read(&repo.join(root), e)),
            }
        }
        if found.len() == before {
            empty_roots.push(root.clone());
        }
    }
    found.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    found.dedup_by(|a, b| a.path == b.path);
    let walked = started.elapsed();
    let entries = hash_all(&top, repo, found)?;
    crate::profile::phase(
        "lock",
        &[("walk", walked), ("hash", started.elapsed() - walked)],
    );
    Ok(Scan {
        entries,
        empty_roots,
    })
}

fn rel_join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// A file or symlink at `rel`; anything else is refused.
fn entry(repo: &Path, rel: &str, ft: cap_std::fs::FileType) -> Result<Found> {
    if ft.is_symlink() || ft.is_file() {
        Ok(Found {
            path: rel.to_string(),
            is_link: ft.is_symlink(),
        })
    } else {
        Err(Error::data(
            &repo.join(rel),
            "fixture root holds a special file (fifo, socket or device)",
        ))
    }
}

/// Collects everything under `dir` (at `rel` in `repo`), following no link.
fn walk(dir: &Dir, repo: &Path, rel: &str, out: &mut Vec<Found>) -> Result<()> {
    let at = repo.join(rel);
    for item in dir.entries().map_err(|e| Error::read(&at, e))? {
        let item = item.map_err(|e| Error::read(&at, e))?;
        let name = item.file_name();
        // The repository's own metadata is never a fixture.
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let path = at.join(&name);
        let name = name.to_str().ok_or_else(|| {
            Error::data(&path, "fixture path is not UTF-8 and cannot be recorded")
        })?;
        if name.contains('\n') {
            return Err(Error::data(
                &path,
                "fixture path contains a newline, which dirHash cannot represent",
            ));
        }
        let ft = item.file_type().map_err(|e| Error::read(&path, e))?;
        let rel = rel_join(rel, name);
        if ft.is_dir() {
            let sub = item.open_dir().map_err(|e| Error::read(&path, e))?;
            walk(&sub, repo, &rel, out)?;
        } else {
            out.push(entry(repo, &rel, ft)?);
        }
    }
    Ok(())
}

/// Hashes `found` on every core, each thread taking the next entry as it
/// finishes one: a large file holds up only its own thread (rayon's halving
/// of the list would give one thread every large file that sorts together).
fn hash_all(top: &Dir, repo: &Path, found: Vec<Found>) -> Result<Vec<LockEntry>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(found.len().max(1));
    let next = AtomicUsize::new(0);
    let slots: Vec<std::sync::OnceLock<Result<LockEntry>>> = (0..found.len())
        .map(|_| std::sync::OnceLock::new())
        .collect();
    let found: Vec<std::sync::Mutex<Option<Found>>> = found
        .into_iter()
        .map(|f| std::sync::Mutex::new(Some(f)))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(cell) = found.get(i) else { break };
                    let f = cell.lock().expect("entry").take().expect("taken once");
                    let _ = slots[i].set(hash_entry(top, repo, f));
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().expect("every entry hashed"))
        .collect()
}

fn hash_entry(top: &Dir, repo: &Path, found: Found) -> Result<LockEntry> {
    let abs = || repo.join(&found.path);
    if found.is_link {
        let target = top
            .read_link_contents(&found.path)
            .map_err(|e| Error::read(&abs(), e))?;
        let bytes = target.as_os_str().as_bytes();
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Error::data(&abs(), "symlink target is not UTF-8"))?;
        Ok(LockEntry {
            path: found.path,
            kind: "symlink".into(),
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            target: Some(text.to_string()),
            executable: false,
        })
    } else {
        use std::os::unix::fs::PermissionsExt;
        let file = top
            .open(&found.path)
            .map_err(|e| Error::read(&abs(), e))?
            .into_std();
        let mode = file
            .metadata()
            .map_err(|e| Error::read(&abs(), e))?
            .permissions()
            .mode();
        let (sha256, size) = sha256_reader(file).map_err(|e| Error::read(&abs(), e))?;
        Ok(LockEntry {
            path: found.path,
            kind: "file".into(),
            size,
            sha256,
            target: None,
            // As git decides it: the owner's execute bit.
            executable: mode & 0o100 != 0,
        })
    }
}

/// in-toto `dirHash`: sha256 of `"<sha256>  <path>\n"` for every regular file,
/// sorted bytewise by path. Equal to
/// `find . -type f | cut -c3- | LC_ALL=C sort | xargs -r sha256sum | sha256sum`.
pub fn dir_hash(entries: &[LockEntry]) -> String {
    let mut text = String::new();
    for e in entries.iter().filter(|e| e.kind == "file") {
        text.push_str(&e.sha256);
        text.push_str("  ");
        text.push_str(&e.path);
        text.push('\n');
    }
    sha256_hex(text.as_bytes())
}

/// The one way a lock record is made: `entries` (sorted, as `scan` returns
/// them) under `roots`, building on the transcript `transcript_sha256`.
pub fn build(
    run: &crate::ledger::RunId,
    transcript_sha256: &str,
    base_revision: Option<&str>,
    roots: Vec<String>,
    entries: Vec<LockEntry>,
) -> FixtureLock {
    FixtureLock {
        schema: crate::record::SCHEMA,
        record: "fixture_lock".into(),
        run_id: run.to_string(),
        transcript_sha256: transcript_sha256.to_string(),
        base_revision: base_revision.map(str::to_string),
        roots,
        count: entries.len() as u64,
        dir_hash: dir_hash(&entries),
        files: entries,
        evaluation: None,
        none: None,
    }
}

/// Checks a lock record is internally consistent: sorted unique paths, the
/// count, and the dirHash. A lock with a row removed or edited fails here.
pub fn check_consistent(lock: &FixtureLock, path: &Path) -> Result<()> {
    if lock.count != lock.files.len() as u64 {
        return Err(Error::data(
            path,
            format!(
                "field `count` is {} but `files` has {} entries",
                lock.count,
                lock.files.len()
            ),
        ));
    }
    if lock
        .files
        .windows(2)
        .any(|w| w[0].path.as_bytes() >= w[1].path.as_bytes())
    {
        return Err(Error::data(
            path,
            "field `files` is not sorted by path without duplicates",
        ));
    }
    let actual = dir_hash(&lock.files);
    if actual != lock.dir_hash {
        return Err(Error::data(
            path,
            format!(
                "field `dir_hash` is {} but the files listed hash to {actual}",
                lock.dir_hash
            ),
        ));
    }
    Ok(())
}

/// Compares a lock's entries with a fresh scan: added, removed and changed
/// paths (content, size, kind, link target or executable bit).
pub fn compare(locked: &[LockEntry], now: &[LockEntry]) -> Drift {
    let mut drift = Drift::default();
    let (mut i, mut j) = (0, 0);
    while i < locked.len() || j < now.len() {
        match (locked.get(i), now.get(j)) {
            (Some(a), Some(b)) => match a.path.as_bytes().cmp(b.path.as_bytes()) {
                std::cmp::Ordering::Less => {
                    drift.removed.push(a.path.clone());
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    drift.added.push(b.path.clone());
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    if a != b {
                        drift.changed.push(a.path.clone());
                    }
                    i += 1;
                    j += 1;
                }
            },
            (Some(a), None) => {
                drift.removed.push(a.path.clone());
                i += 1;
            }
            (None, Some(b)) => {
                drift.added.push(b.path.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    drift
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn file(path: &str, content: &str) -> LockEntry {
        LockEntry {
            path: path.into(),
            kind: "file".into(),
            size: content.len() as u64,
            sha256: sha256_hex(content.as_bytes()),
            target: None,
            executable: false,
        }
    }

    fn link(path: &str, target: &str) -> LockEntry {
        LockEntry {
            path: path.into(),
            kind: "symlink".into(),
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
        assert_eq!(scan.entries[0].kind, "symlink");
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
            .find(|e| e.kind == "file")
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
}
