//! The test tree's `.git` pack, cached across processes: a second `check`
//! on the same base takes it from the cache, and an entry swapped for a
//! pack that holds more (the upstream fix's commit) is not used.

use crate::evaluation::{P2P, repo, upstream_fix};
use crate::support::*;
use std::path::{Path, PathBuf};

/// `check --test-cmd SCRIPT` of run `run_id` with its own key and cache
/// `cache`; the script's stdout, from the record.
fn check(repo: &DemoRepo, state: &Path, cache: &Path, run_id: &str, script: &str) -> String {
    let patch = patch_of(repo, |root| {
        write(&root.join(format!("notes/{run_id}.txt")), run_id);
    });
    check_patch(
        Trial {
            root: repo.path().to_path_buf(),
            base: repo.base.clone(),
            state: state.to_path_buf(),
            cache: cache.to_path_buf(),
            run_id: run_id.to_string(),
        },
        &patch,
        script,
    )
}

/// What one `check` runs on, owned (a check may run on a thread of its own).
struct Trial {
    root: PathBuf,
    base: String,
    state: PathBuf,
    cache: PathBuf,
    run_id: String,
}

fn check_patch(t: Trial, patch: &[u8], script: &str) -> String {
    run_with_stdin(
        &t.root,
        &["capture", "--run", &t.run_id, "--body", "-"],
        Some(patch),
    )
    .assert_code(0);
    let config = tempdir();
    let config_file = config.path().join("agent-ledger.toml");
    write(&config_file, "schema = 1\n[fixtures]\nnone = \"no data\"\n");
    let mut cmd = command(&t.root);
    cmd.env("XDG_STATE_HOME", &t.state);
    let out = run_command(
        cmd,
        &[
            "check",
            "--run",
            &t.run_id,
            "--base",
            &t.base,
            "--cache-dir",
            t.cache.to_str().unwrap(),
            "--test-cmd",
            script,
            "--no-test-baseline",
            "--require-pass",
            P2P,
            "--config",
            config_file.to_str().unwrap(),
        ],
        None,
    );
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            t.root
                .join(format!(".agent-ledger/properties/{}.json", t.run_id)),
        )
        .unwrap_or_else(|e| panic!("no record ({e}): {}", out.stderr)),
    )
    .unwrap();
    assert!(
        record["test_run"]["exit_code"].is_number(),
        "{}\n{record:#}",
        out.stderr
    );
    record["test_run"]["stdout_tail"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// A pack (and its index) of `commits` and everything they reach, made in
/// `dir` by the repository's own git.
fn pack_of(repo: &DemoRepo, commits: &[&str], dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let list = std::process::Command::new("git")
        .args(["rev-list", "--objects"])
        .args(commits)
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(list.status.success());
    let mut pack = std::process::Command::new("git")
        .args(["pack-objects", "-q"])
        .arg(dir.join("p"))
        .current_dir(repo.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    pack.stdin.take().unwrap().write_all(&list.stdout).unwrap();
    let out = pack.wait_with_output().unwrap();
    assert!(out.status.success());
    let name = String::from_utf8(out.stdout).unwrap();
    let base = dir.join(format!("p-{}", name.trim()));
    (
        std::fs::read(base.with_extension("pack")).unwrap(),
        std::fs::read(base.with_extension("idx")).unwrap(),
    )
}

#[test]
fn the_base_pack_is_cached_across_processes_and_a_swapped_one_is_not_used() {
    let repo = repo();
    let future = upstream_fix(&repo);
    let (state, cache) = (tempdir(), tempdir());
    let script = format!(
        "echo head=$(git rev-parse HEAD); git rev-list --objects HEAD >/dev/null && echo objects=ok; \
         if git cat-file -e {future} 2>/dev/null; then echo future=seen; else echo future=absent; fi"
    );
    let first = check(&repo, state.path(), cache.path(), "r", &script);
    assert!(first.contains(&format!("head={}", repo.base)), "{first}");
    assert!(
        first.contains("objects=ok") && first.contains("future=absent"),
        "{first}"
    );
    let entry = |ext: &str| {
        cache
            .path()
            .join("test-packs")
            .join(format!("{}.{ext}", repo.base))
    };
    let cached = std::fs::read(entry("pack")).expect("the pack was cached");
    assert!(entry("seal").is_file());

    // Taken from the cache: the same pack, and the tree's git works on it.
    let second = check(&repo, state.path(), cache.path(), "s", &script);
    assert!(
        second.contains("objects=ok") && second.contains("future=absent"),
        "{second}"
    );
    assert_eq!(std::fs::read(entry("pack")).unwrap(), cached);

    // Someone who can write the cache, not read the key, swaps in a pack
    // that also holds the fix's commit: it is made again instead.
    let scratch = tempdir();
    let (pack, idx) = pack_of(&repo, &[&repo.base, &future], scratch.path());
    std::fs::write(entry("pack"), &pack).unwrap();
    std::fs::write(entry("idx"), &idx).unwrap();
    let third = check(&repo, state.path(), cache.path(), "t", &script);
    assert!(third.contains("objects=ok"), "{third}");
    assert!(
        third.contains("future=absent"),
        "the swapped pack was used: {third}"
    );
    assert_eq!(std::fs::read(entry("pack")).unwrap(), cached);
}

#[test]
fn a_fifo_in_place_of_the_cached_pack_or_its_seal_is_not_waited_on() {
    let repo = repo();
    let (state, cache) = (tempdir(), tempdir());
    let script = "git rev-list --objects HEAD >/dev/null && echo objects=ok";
    let first = check(&repo, state.path(), cache.path(), "r", script);
    assert!(first.contains("objects=ok"), "{first}");
    for ext in ["pack", "seal"] {
        let entry = cache
            .path()
            .join("test-packs")
            .join(format!("{}.{ext}", repo.base));
        std::fs::remove_file(&entry).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&entry)
            .status()
            .unwrap();
        assert!(made.success());
        let run_id = format!("fifo-{ext}");
        let patch = patch_of(&repo, |root| {
            write(&root.join(format!("notes/{run_id}.txt")), &run_id);
        });
        let trial = Trial {
            root: repo.path().to_path_buf(),
            base: repo.base.clone(),
            state: state.path().to_path_buf(),
            cache: cache.path().to_path_buf(),
            run_id,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(check_patch(trial, &patch, script));
        });
        let out = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("check waited on a FIFO as the cached {ext}"));
        assert!(out.contains("objects=ok"), "{out}");
        // Made again, and kept as a regular file.
        assert!(entry.symlink_metadata().unwrap().is_file(), "{ext}");
    }
}
