//! Hostile trees: patches that escape through chains of symlinks, or disable
//! a test by renaming it. Each is made in the test from the demo base with
//! `git diff --binary`, and each must end `reject` (exit 4) naming the path.

use crate::support::*;
use std::os::unix::fs::symlink;
use std::path::Path;

fn link(root: &Path, target: &str, at: &str) {
    let at = root.join(at);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
}

#[test]
fn the_demo_good_patch_is_still_review() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    repo.check("r", &[]).assert_code(0);
}

// Regression: each link was judged lexically from its own location, so a
// chain of links that are each in the tree led out of it.
#[test]
fn a_chain_of_in_tree_links_that_leads_out_is_a_patch_applies_miss() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        // The shape from the issue: `b` alone reads as staying inside.
        link(root, "..", "a");
        link(root, "a/a/a/../../../etc/passwd", "b");
        // The same with every link inside the tree on its own: `sub/a` is
        // the root, so `sub/b` climbs out from there.
        link(root, "..", "sub/a");
        link(root, "a/sub/a/../../../etc/passwd", "sub/b");
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "patch_applies",
        "b",
        "resolves outside the repository",
    );
    assert_miss(
        &record,
        "patch_applies",
        "sub/b",
        "resolves outside the repository (`../../../etc/passwd`)",
    );
}

#[test]
fn a_link_into_git_is_a_patch_applies_miss() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        link(root, ".git/hooks/pre-commit", "hook");
        // Through an in-tree link to the root, and spelled in capitals.
        link(root, "..", "sub/up");
        link(root, "up/.GIT/config", "sub/config");
    });
    let record = rejected(&repo, &patch);
    assert_miss(&record, "patch_applies", "hook", "resolves into `.git`");
    assert_miss(
        &record,
        "patch_applies",
        "sub/config",
        "resolves into `.git`",
    );
}

#[test]
fn a_cyclic_link_is_a_patch_applies_miss() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        link(root, "loop-b", "loop-a");
        link(root, "loop-a", "loop-b");
        link(root, "itself", "itself");
    });
    let record = rejected(&repo, &patch);
    for path in ["loop-a", "loop-b", "itself"] {
        assert_miss(&record, "patch_applies", path, "cycle");
    }
}

// Regression: only changed links were judged, and lexically, so a new link
// to an unchanged link that points out looked like it stayed inside.
#[test]
fn a_link_to_an_unchanged_link_that_points_out_is_a_patch_applies_miss() {
    let outside = tempdir();
    write(&outside.path().join("secret.txt"), "outside the tree\n");
    let target = outside.path().to_str().unwrap().to_string();
    let repo = DemoRepo::with(|root| link(root, &target, "docs/shared"));
    // The base's own link is trusted: with the good patch the trial is review.
    repo.capture("good", "good");
    repo.check("good", &[]).assert_code(0);

    let patch = patch_of(&repo, |root| {
        link(root, "../docs/shared/secret.txt", "tests/data.txt");
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "patch_applies",
        "tests/data.txt",
        &format!("resolves outside the repository (`{target}/secret.txt`)"),
    );
    let p = outcome(&record, "patch_applies");
    assert!(
        !p["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "docs/shared"),
        "the base's own link is not the patch's: {p:#}"
    );
}

// Regression: the fixture root replaced by a link that leaves the tree
// through another link was judged only as fixture drift (exit 3).
#[test]
fn a_fixture_root_that_is_a_symlink_out_of_the_tree_is_a_patch_applies_miss() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        std::fs::remove_dir_all(root.join("tests/fixtures")).unwrap();
        link(root, "..", "tests/up");
        link(root, "up/tests/up/../..", "tests/fixtures");
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "patch_applies",
        "tests/fixtures",
        "resolves outside the repository",
    );
}

// A fixture root the lock can reach only through a link out of the tree is
// an error naming the root, never a lock of files outside the repository.
#[test]
fn a_fixture_root_behind_a_link_out_of_the_tree_is_an_error_naming_it() {
    let outside = tempdir();
    write(&outside.path().join("fixtures/a.json"), "{}\n");
    let target = outside.path().to_str().unwrap().to_string();
    let repo = DemoRepo::with(|root| {
        link(root, &target, "ext");
        let config = root.join("agent-ledger.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        write(
            &config,
            text.replace("roots = [\"tests/fixtures\"]", "roots = [\"ext/fixtures\"]"),
        );
    });
    repo.capture("r", "good");
    let out = repo.check("r", &[]);
    assert!(out.code >= 64, "exit {}: {}", out.code, out.stderr);
    assert!(out.stderr.contains("ext/fixtures"), "{}", out.stderr);
}

/// The demo test file with its last assertion dropped, moved to `to`.
fn rename_dropping_an_assertion(root: &Path, from: &str, to: &str, drop: &str) {
    let text = std::fs::read_to_string(root.join(from)).unwrap();
    assert!(text.contains(drop), "`{drop}` is not in {from}");
    std::fs::remove_file(root.join(from)).unwrap();
    write(&root.join(to), text.replace(drop, ""));
}

const PY: &str = "tests/test_retry.py";
const PY_ASSERT: &str = "        assert not should_retry(404)\n";

// Regression: a test renamed to a name its runner does not collect, but
// still inside the test globs (`tests/**`), was not counted as deleted, and
// its assertions were not counted at all once it no longer ended in `.py`.
#[test]
fn a_python_test_renamed_out_of_collection_is_deleted_and_weakened() {
    for to in [
        "tests/test_retry.py.disabled",
        "tests/test_retry.txt",
        "disabled/test_retry.txt",
    ] {
        let repo = DemoRepo::new();
        let patch = patch_of(&repo, |root| {
            rename_dropping_an_assertion(root, PY, to, PY_ASSERT)
        });
        assert!(
            String::from_utf8_lossy(&patch).contains(&format!("rename to {to}")),
            "git did not see a rename to {to}"
        );
        let record = rejected(&repo, &patch);
        assert_miss(&record, "tests_not_deleted", PY, to);
        assert_miss(
            &record,
            "assertions_not_weakened",
            to,
            &format!(
                "test `TestShouldRetry::test_retries_overload`: assertion `assert not should_retry(404)` (line 26 at the base, a truthiness check) was removed (Python, compared with `{PY}`"
            ),
        );
    }
}

const GO_TEST: &str = "package retry\n\nimport \"testing\"\n\nfunc TestBackoff(t *testing.T) {\n\tif got := Backoff(1); got != 100 {\n\t\tt.Errorf(\"Backoff(1) = %d\", got)\n\t}\n\tif got := Backoff(30); got != 5000 {\n\t\tt.Fatalf(\"Backoff(30) = %d\", got)\n\t}\n}\n";

#[test]
fn a_go_test_renamed_to_bak_is_deleted_and_weakened() {
    let repo = DemoRepo::with(|root| write(&root.join("tests/retry_test.go"), GO_TEST));
    let (from, to) = ("tests/retry_test.go", "tests/retry_test.go.bak");
    let patch = patch_of(&repo, |root| {
        rename_dropping_an_assertion(root, from, to, "\t\tt.Fatalf(\"Backoff(30) = %d\", got)\n")
    });
    assert!(String::from_utf8_lossy(&patch).contains(&format!("rename to {to}")));
    let record = rejected(&repo, &patch);
    assert_miss(&record, "tests_not_deleted", from, "not a Go file");
    assert_miss(
        &record,
        "assertions_not_weakened",
        to,
        "test `TestBackoff`: assertion `if got := Backoff(30); got != 5000 { t.Fatalf(\"Backoff(30) = %d\", got) }` (line 10 at the base, an exact equality) was removed (Go, compared with `tests/retry_test.go`",
    );
}

// A test file replaced by a symlink to an empty file: retyped (deleted as a
// test) and, read through the link, without assertions.
#[test]
fn a_test_replaced_by_a_symlink_to_an_empty_file_is_deleted_and_weakened() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        std::fs::remove_file(root.join(PY)).unwrap();
        write(&root.join("tests/empty.py"), "");
        link(root, "empty.py", PY);
    });
    let record = rejected(&repo, &patch);
    assert_eq!(outcome(&record, "patch_applies")["outcome"], "holds");
    assert_miss(&record, "tests_not_deleted", PY, "another file type");
    assert_miss(
        &record,
        "assertions_not_weakened",
        PY,
        "test `TestBackoff::test_cap` (line 14 at the base) was deleted or renamed away",
    );
}

// An assertion moved into a string that the counter read as ending early
// (a raw string ending in `\"`) still counted, so dropping it was not a
// weakening. Python reads the whole line as one string.
#[test]
fn an_assertion_moved_into_a_raw_string_is_a_weakening() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        let path = root.join(PY);
        let text = std::fs::read_to_string(&path).unwrap();
        let hidden = text.replace(
            "        self.assertEqual(backoff_ms(1), 100)\n",
            "        _ = r\"\\\" self.assertEqual(backoff_ms(1), 100) \"\n",
        );
        assert_ne!(hidden, text);
        write(&path, &hidden);
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "assertions_not_weakened",
        PY,
        "test `TestBackoff::test_first_attempt_waits_base`: assertion `self.assertEqual(backoff_ms(1), 100)` (line 12 at the base, an exact equality) was removed",
    );
}

// Regression: 1500 nested directories made every walk of the patched tree
// hold a descriptor per level, and under the usual limit of 1024 `check`
// ended with "too many open files" (exit 74) instead of a verdict.
#[test]
fn a_patch_that_nests_1500_directories_is_a_patch_applies_miss_under_1024_descriptors() {
    let repo = DemoRepo::new();
    let deep = vec!["d"; 1500].join("/");
    let patch = patch_of(&repo, |root| {
        // One `create_dir_all` of the whole path would pass PATH_MAX: step.
        let mut dir =
            cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).unwrap();
        for _ in 0..1500 {
            dir.create_dir("d").unwrap();
            dir = dir.open_dir("d").unwrap();
        }
        dir.write("f", "x\n").unwrap();
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let cache = cache_dir();
    let out = agent_ledger_with_1024_descriptors()
        .args([
            "check", "--run", "r", "--base", &repo.base, "--format", "json",
        ])
        .arg("--cache-dir")
        .arg(&cache)
        .current_dir(repo.path())
        .env("AGENT_LEDGER_RUNS_DIR", runs_dir())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record = repo.properties("r");
    assert_miss(
        &record,
        "patch_applies",
        &format!("{deep}/f"),
        "1501 components deep",
    );
}
