//! `lock`: hashing, the in-toto dirHash, symlinks, empty roots, drift.

use crate::support::*;
use std::process::Command;

fn lock_json(dir: &std::path::Path, run_id: &str) -> serde_json::Value {
    let bytes =
        std::fs::read(dir.join(format!(".agent-ledger/fixtures/{run_id}.lock.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn lock_records_every_file_and_the_in_toto_dir_hash() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    capture_complete(d, "run-001");
    run(d, &["lock", "--run", "run-001", "--root", "tests/fixtures"]).assert_code(0);
    let lock = lock_json(d, "run-001");
    assert_eq!(lock["count"], 2);
    assert_eq!(lock["files"][0]["path"], "tests/fixtures/a.json");
    assert_eq!(lock["files"][0]["size"], 9);
    assert_eq!(lock["files"][1]["path"], "tests/fixtures/nested/b.txt");
    // The in-toto definition, run by the shell on the same files.
    let expected = Command::new("sh")
        .arg("-c")
        .arg("find tests/fixtures -type f | LC_ALL=C sort | xargs -r sha256sum | sha256sum | cut -f1 -d' '")
        .current_dir(d)
        .output()
        .unwrap();
    // The pipeline's status is `cut`'s: a missing find, sort, xargs or
    // sha256sum shows on stderr or as something other than one digest.
    let expected_hash = String::from_utf8(expected.stdout).unwrap();
    assert!(
        expected.stderr.is_empty()
            && expected_hash.trim().len() == 64
            && expected_hash.trim().bytes().all(|b| b.is_ascii_hexdigit()),
        "the shell's dirHash did not run: {:?} {}",
        expected_hash,
        String::from_utf8_lossy(&expected.stderr)
    );
    assert_eq!(lock["dir_hash"], expected_hash.trim());
    // The lock names the transcript it builds on.
    let transcript = std::fs::read(d.join(".agent-ledger/transcripts/run-001.json")).unwrap();
    assert_eq!(
        lock["transcript_sha256"],
        agent_ledger::digest::sha256_hex(&transcript)
    );
}

#[test]
fn symlinks_are_recorded_not_followed() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    write(&d.join("secret.txt"), "outside the root\n");
    std::os::unix::fs::symlink("../../secret.txt", d.join("tests/fixtures/link")).unwrap();
    capture_complete(d, "r");
    run(d, &["lock", "--run", "r", "--root", "tests/fixtures"]).assert_code(0);
    let lock = lock_json(d, "r");
    let link = lock["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "tests/fixtures/link")
        .unwrap();
    assert_eq!(link["kind"], "symlink");
    assert_eq!(link["target"], "../../secret.txt");
    assert_eq!(
        link["sha256"],
        agent_ledger::digest::sha256_hex(b"../../secret.txt")
    );
}

#[test]
fn an_empty_or_missing_root_is_refused_and_no_lock_is_written() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    std::fs::create_dir_all(d.join("tests/empty/sub")).unwrap();
    capture_complete(d, "r");
    let out = run(
        d,
        &[
            "lock",
            "--run",
            "r",
            "--root",
            "tests/fixtures",
            "--root",
            "tests/empty",
        ],
    );
    out.assert_code(3);
    assert!(out.stdout.contains("`tests/empty`"), "{}", out.stdout);
    assert!(!d.join(".agent-ledger/fixtures/r.lock.json").exists());
    run(d, &["lock", "--run", "r", "--root", "does/not/exist"]).assert_code(3);
    assert!(!d.join(".agent-ledger/fixtures/r.lock.json").exists());
}

#[test]
fn a_root_outside_the_repository_is_a_usage_error() {
    let dir = tempdir();
    capture_complete(dir.path(), "r");
    let out = run(
        dir.path(),
        &["lock", "--run", "r", "--root", "../elsewhere"],
    );
    out.assert_code(64);
    assert!(out.stderr.contains("`../elsewhere`"), "{}", out.stderr);
}

#[test]
fn lock_comes_after_capture() {
    let dir = tempdir();
    fixture_tree(dir.path());
    let out = run(
        dir.path(),
        &["lock", "--run", "r", "--root", "tests/fixtures"],
    );
    out.assert_code(66);
    assert!(
        out.stderr.contains("capture comes before lock"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_lock_is_never_rewritten() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    capture_complete(d, "r");
    run(d, &["lock", "--run", "r", "--root", "tests/fixtures"]).assert_code(0);
    write(&d.join("tests/fixtures/a.json"), "changed");
    run(d, &["lock", "--run", "r", "--root", "tests/fixtures"]).assert_code(73);
}

#[test]
fn compare_reports_each_kind_of_drift() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    write(&d.join("tests/fixtures/gone.txt"), "x");
    std::os::unix::fs::symlink("a.json", d.join("tests/fixtures/link")).unwrap();
    capture_complete(d, "r");
    run(d, &["lock", "--run", "r", "--root", "tests/fixtures"]).assert_code(0);
    let lockfile = ".agent-ledger/fixtures/r.lock.json";
    run(d, &["lock", "--compare", lockfile]).assert_code(0);

    write(&d.join("tests/fixtures/new.txt"), "added");
    std::fs::remove_file(d.join("tests/fixtures/gone.txt")).unwrap();
    write(&d.join("tests/fixtures/a.json"), "{\"a\": 2}\n");
    std::fs::remove_file(d.join("tests/fixtures/link")).unwrap();
    std::os::unix::fs::symlink("nested/b.txt", d.join("tests/fixtures/link")).unwrap();
    let out = run(d, &["lock", "--compare", lockfile, "--format", "json"]);
    out.assert_code(3);
    let v = out.json();
    assert_eq!(v["result"], "fixture_mismatch");
    assert_eq!(v["added"], serde_json::json!(["tests/fixtures/new.txt"]));
    assert_eq!(v["removed"], serde_json::json!(["tests/fixtures/gone.txt"]));
    assert_eq!(
        v["changed"],
        serde_json::json!(["tests/fixtures/a.json", "tests/fixtures/link"])
    );
    let human = run(d, &["lock", "--compare", lockfile]);
    human.assert_code(3);
    assert!(
        human.stdout.contains("added: tests/fixtures/new.txt"),
        "{}",
        human.stdout
    );
}

/// A repository with the fixture tree locked as run `r`, and that lock.
fn locked_fixtures() -> (tempfile::TempDir, serde_json::Value) {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    capture_complete(d, "r");
    run(d, &["lock", "--run", "r", "--root", "tests/fixtures"]).assert_code(0);
    let lock = lock_json(d, "r");
    (dir, lock)
}

#[test]
fn compare_walks_roots_named_again_or_inside_another_once() {
    // Roots are not in the dirHash: a lock may name them again, or one
    // inside another, and still be consistent. Each path is compared once.
    let (dir, mut lock) = locked_fixtures();
    let d = dir.path();
    let mut roots = vec![serde_json::json!("tests/fixtures/nested"); 1000];
    roots.extend(vec![serde_json::json!("tests/fixtures"); 1000]);
    lock["roots"] = roots.into();
    write(
        &d.join("many.lock.json"),
        serde_json::to_vec(&lock).unwrap(),
    );
    run(d, &["lock", "--compare", "many.lock.json"]).assert_code(0);
    write(&d.join("tests/fixtures/nested/b.txt"), "edited");
    let out = run(
        d,
        &["lock", "--compare", "many.lock.json", "--format", "json"],
    );
    out.assert_code(3);
    assert_eq!(
        out.json()["changed"],
        serde_json::json!(["tests/fixtures/nested/b.txt"])
    );
    // An inconsistent one is still refused.
    lock["dir_hash"] = "0".repeat(64).into();
    write(&d.join("bad.lock.json"), serde_json::to_vec(&lock).unwrap());
    let out = run(d, &["lock", "--compare", "bad.lock.json"]);
    out.assert_code(65);
    assert!(out.stderr.contains("dir_hash"), "{}", out.stderr);
}

#[test]
fn compare_refuses_a_lock_with_a_row_removed() {
    let (dir, mut lock) = locked_fixtures();
    let d = dir.path();
    lock["files"].as_array_mut().unwrap().remove(0);
    lock["count"] = 1.into();
    write(
        &d.join("edited.lock.json"),
        serde_json::to_vec(&lock).unwrap(),
    );
    let out = run(d, &["lock", "--compare", "edited.lock.json"]);
    out.assert_code(65);
    assert!(out.stderr.contains("dir_hash"), "{}", out.stderr);
}

/// A fixture tree nested thousands deep is refused by name (exit 65, no
/// lock), never a stack overflow; one at the limit is locked.
#[test]
fn a_tree_nested_past_the_limit_is_refused_not_a_crash() {
    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    capture_complete(d, "r");
    // 256 components: `deep`, 254 directories, the file.
    let mut at = d.join("deep");
    for _ in 0..254 {
        at.push("d");
    }
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(at.join("f.txt"), b"x").unwrap();
    run(d, &["lock", "--run", "r", "--root", "deep"]).assert_code(0);
    assert_eq!(lock_json(d, "r")["count"], 1);

    let dir = tempdir();
    let d = dir.path();
    fixture_tree(d);
    capture_complete(d, "r");
    // Built a level at a time: the whole path is past PATH_MAX.
    std::fs::create_dir(d.join("deep")).unwrap();
    let mut here =
        cap_std::fs::Dir::open_ambient_dir(d.join("deep"), cap_std::ambient_authority()).unwrap();
    for _ in 0..3000 {
        here.create_dir("d").unwrap();
        here = here.open_dir("d").unwrap();
    }
    let out = run(d, &["lock", "--run", "r", "--root", "deep"]);
    out.assert_code(65);
    assert!(
        out.stderr
            .contains("fixture path is more than 256 components deep"),
        "{}",
        out.stderr
    );
    assert!(!d.join(".agent-ledger/fixtures/r.lock.json").exists());
}
