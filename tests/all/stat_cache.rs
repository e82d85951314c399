//! `reconcile`'s stat cache under attack: each test first makes sure the
//! cache is in use (a walk recorded the tree's stat data, which the debug
//! build's `AGENT_LEDGER_TEST_SETTLED_SECS=0` allows for files a second
//! old), then changes the tree behind it and expects the change judged.

use crate::support::*;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The demo repository with a cache and a key of its own, aged a second so
/// that its files count as settled.
struct Tree {
    repo: DemoRepo,
    scratch: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        Tree::with(|_| {})
    }

    fn with(edit: impl FnOnce(&Path)) -> Tree {
        let t = Tree {
            repo: DemoRepo::with(edit),
            scratch: tempdir(),
        };
        write(&t.trace(), "");
        // Times are compared in whole seconds.
        std::thread::sleep(Duration::from_millis(1100));
        t
    }

    fn path(&self) -> &Path {
        self.repo.path()
    }

    fn trace(&self) -> PathBuf {
        self.scratch.path().join("trace.jsonl")
    }

    /// The one base listing the cache holds (after [`Tree::warm`]).
    fn base_listing(&self) -> PathBuf {
        let listings: Vec<PathBuf> = std::fs::read_dir(self.cache_dir().join("listings"))
            .expect("the base's listing was kept")
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(listings.len(), 1);
        listings[0].clone()
    }

    fn cache_dir(&self) -> PathBuf {
        self.scratch.path().join("cache")
    }

    /// The stat cache files written so far.
    fn entries(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.cache_dir().join("worktree-stat")) {
            Ok(dir) => dir.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// `reconcile --format json`, stopped (and the test failed) after a
    /// minute: a FIFO must never be waited on.
    fn reconcile(&self) -> Output {
        let mut cmd = command(self.path());
        cmd.env("AGENT_LEDGER_CACHE_DIR", self.cache_dir())
            .env("XDG_STATE_HOME", self.scratch.path().join("state"))
            .env("AGENT_LEDGER_TEST_SETTLED_SECS", "0")
            .args([
                "reconcile",
                "--trace",
                self.trace().to_str().unwrap(),
                "--format",
                "json",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("reconcile still ran after a minute");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// A clean reconcile that leaves the cache recording the whole tree.
    fn warm(&self) {
        self.reconcile().assert_code(0);
        assert_eq!(self.entries().len(), 1, "the walk recorded no stat cache");
    }

    fn ghosts(&self) -> serde_json::Value {
        let out = self.reconcile();
        out.assert_code(1);
        out.json()["report"]["ghosts"].clone()
    }
}

/// Rewrites `path` with other bytes of the same length and puts its mtime
/// back: only the ctime, which nobody can set, still tells.
fn rewrite_keeping_mtime(path: &Path) {
    let before = std::fs::metadata(path).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let i = bytes.iter().position(|b| b.is_ascii_digit()).unwrap();
    bytes[i] = if bytes[i] == b'9' { b'8' } else { bytes[i] + 1 };
    std::fs::write(path, &bytes).unwrap();
    let mtime =
        std::time::UNIX_EPOCH + Duration::new(before.mtime() as u64, before.mtime_nsec() as u32);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(after.len(), before.len());
    assert_eq!(
        (after.mtime(), after.mtime_nsec()),
        (before.mtime(), before.mtime_nsec())
    );
}

#[test]
fn a_file_rewritten_with_its_mtime_put_back_is_a_ghost() {
    let t = Tree::new();
    t.warm();
    rewrite_keeping_mtime(&t.path().join("src/retry.py"));
    assert_eq!(t.ghosts(), serde_json::json!(["src/retry.py"]));
}

#[test]
fn a_forged_cache_record_is_not_believed() {
    let t = Tree::new();
    t.warm();
    let file = t.path().join("src/retry.py");
    let old = std::fs::metadata(&file).unwrap();
    rewrite_keeping_mtime(&file);
    let new = std::fs::metadata(&file).unwrap();
    // The record that held the file's old stat data now claims its new
    // ctime: what an agent would write to hide the edit, without the key.
    let entry = t.entries().remove(0);
    let mut bytes = std::fs::read(&entry).unwrap();
    let needle = old.ino().to_le_bytes();
    let at = bytes
        .windows(8)
        .position(|w| w == needle)
        .expect("the file's record");
    let rec = at - 16;
    bytes[rec + 40..rec + 48].copy_from_slice(&new.ctime().to_le_bytes());
    bytes[rec + 52..rec + 56].copy_from_slice(&(new.ctime_nsec() as u32).to_le_bytes());
    std::fs::write(&entry, &bytes).unwrap();
    assert_eq!(t.ghosts(), serde_json::json!(["src/retry.py"]));
}

#[test]
fn a_fifo_in_place_of_a_tracked_file_is_a_ghost_and_never_read() {
    let t = Tree::new();
    t.warm();
    let file = t.path().join("src/retry.py");
    std::fs::remove_file(&file).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&file)
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(t.ghosts(), serde_json::json!(["src/retry.py"]));
}

#[test]
fn a_file_put_into_a_submodule_left_unpopulated_is_a_ghost() {
    let t = Tree::with(|root| {
        std::fs::create_dir(root.join("vendor")).unwrap();
    });
    let p = t.path();
    git(
        p,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            "160000,1111111111111111111111111111111111111111,vendor",
        ],
    );
    git(p, &["commit", "-qm", "a submodule, never checked out"]);
    std::thread::sleep(Duration::from_millis(1100));
    t.warm();
    // git status says nothing of it: the directory is not a repository.
    assert_eq!(git(p, &["status", "--porcelain"]), "");
    write(&p.join("vendor/conftest.py"), "import os\n");
    let ghosts = t.ghosts();
    assert!(
        ghosts
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g.as_str().unwrap().starts_with("vendor")),
        "{ghosts}"
    );
}

#[test]
fn a_forged_base_listing_is_not_believed() {
    let t = Tree::new();
    t.warm();
    let listing = t.base_listing();
    let file = t.path().join("src/retry.py");
    let old_id = git(t.path(), &["rev-parse", "HEAD:src/retry.py"]);
    rewrite_keeping_mtime(&file);
    let new_id = git(t.path(), &["hash-object", "src/retry.py"]);
    // The listing now claims the edited bytes are the base's: what an
    // agent would write to hide the edit, without the key.
    let mut bytes = std::fs::read(&listing).unwrap();
    let at = bytes
        .windows(old_id.len())
        .position(|w| w == old_id.as_bytes())
        .expect("the entry is ls-tree's output");
    bytes[at..at + new_id.len()].copy_from_slice(new_id.as_bytes());
    std::fs::write(&listing, &bytes).unwrap();
    assert_eq!(t.ghosts(), serde_json::json!(["src/retry.py"]));
}

#[test]
fn a_forged_base_listing_is_indexed_only_once_its_tag_holds() {
    // An entry naming one path a million times (16 MB) would take the
    // index quadratic time to build: read beside the tag check, it is
    // dropped at the check, and the tree is listed again.
    let t = Tree::new();
    t.warm();
    let listing = t.base_listing();
    let entries: u32 = 1 << 20;
    let mut forged = vec![0u8; 32];
    forged.extend(40u32.to_le_bytes());
    forged.extend([b'0'; 40]);
    forged.extend(entries.to_le_bytes());
    for _ in 0..entries {
        for v in [0u32, 1, 0, 0o100644] {
            forged.extend(v.to_le_bytes());
        }
    }
    std::fs::write(&listing, &forged).unwrap();
    write(&t.path().join("src/retry.py"), "edited\n");
    assert_eq!(t.ghosts(), serde_json::json!(["src/retry.py"]));
}
