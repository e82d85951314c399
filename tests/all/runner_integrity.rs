//! A test run cannot vouch for itself (issue 39): what a patch can add so
//! that Python loads something other than the tests a reviewer reads, or
//! the runner something other than itself. Each is written as the attack
//! and must be `reject` with a finding naming the path.

use crate::support::*;

/// An unchecked hash-based pyc header (magic of 3.11, flags = 1) and a
/// body: what Python loads instead of `tests/test_retry.py`.
const PYC: &[u8] = b"\xa7\x0d\x0d\x0a\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xe3neutered";

#[test]
fn bytecode_beside_a_test_is_reject() {
    for path in [
        "tests/__pycache__/test_retry.cpython-311.pyc",
        "tests/test_retry.pyc",
    ] {
        let repo = DemoRepo::new();
        let patch = patch_of(&repo, |root| write(&root.join(path), PYC));
        let record = rejected(&repo, &patch);
        assert_miss(
            &record,
            "tests_not_deleted",
            path,
            "bytecode is loaded instead of its source",
        );
    }
}

#[test]
fn an_extension_module_in_the_tree_is_reject() {
    let path = "tests/test_retry.cpython-311-x86_64-linux-gnu.so";
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| write(&root.join(path), b"\x7fELF"));
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "tests_not_deleted",
        path,
        "an extension module is imported before a `.py` of its name",
    );
}

#[test]
fn plugin_metadata_in_any_case_is_reject() {
    for dir in ["pkg-1.0.DIST-INFO", "pkg-1.0.Dist-Info", "pkg.EGG-INFO"] {
        let path = format!("src/{dir}/entry_points.txt");
        let repo = DemoRepo::new();
        let patch = patch_of(&repo, |root| {
            write(&root.join(&path), "[pytest11]\nforce = pkg.tools\n")
        });
        let record = rejected(&repo, &patch);
        assert_miss(
            &record,
            "tests_not_deleted",
            &path,
            "Python package metadata",
        );
    }
}

#[test]
fn pytest_plugins_in_a_new_test_module_is_reject() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        write(
            &root.join("tests/test_extra.py"),
            "pytest_plugins = [\"src.tools\"]\n\n\ndef test_extra():\n    assert 1 + 1 == 2\n",
        );
        write(
            &root.join("src/tools.py"),
            "def pytest_runtest_makereport(item, call):\n    pass\n",
        );
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "assertions_not_weakened",
        "tests/test_extra.py",
        "`pytest_plugins` added: loads pytest plugins",
    );
}

#[test]
fn a_module_shadowing_the_runner_or_the_standard_library_is_reject() {
    for path in [
        "_pytest/__init__.py",
        "pluggy.py",
        "tests/unittest.py",
        "tests/json/__init__.py",
    ] {
        let repo = DemoRepo::new();
        let patch = patch_of(&repo, |root| {
            write(&root.join(path), "raise SystemExit(0)\n")
        });
        let record = rejected(&repo, &patch);
        assert_miss(
            &record,
            "tests_not_deleted",
            path,
            "would be imported instead of the standard library's or the test runner's",
        );
    }
}

#[test]
fn a_module_of_a_package_named_like_the_standard_library_is_not_a_finding() {
    // `src/` is a package: its `json.py` is `src.json`, never `json`.
    let repo = DemoRepo::with(|root| write(&root.join("src/__init__.py"), ""));
    let patch = patch_of(&repo, |root| {
        write(
            &root.join("src/json.py"),
            "def dumps(x):\n    return str(x)\n",
        )
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    repo.check("r", &[]);
    let record = repo.properties("r");
    assert_eq!(
        outcome(&record, "tests_not_deleted")["outcome"],
        "holds",
        "{record:#}"
    );
}

// The second review's first finding: a link named like the runner's
// package, and an `__init__.py` the patch adds to hide a shadow (Python
// puts the working directory first whatever it holds).
#[test]
fn a_shadow_through_a_link_or_behind_an_added_init_is_reject() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        write(&root.join("evil/__init__.py"), "");
        write(&root.join("evil/__main__.py"), "raise SystemExit(0)\n");
        std::os::unix::fs::symlink("evil", root.join("pytest")).unwrap();
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "tests_not_deleted",
        "pytest",
        "would be imported instead",
    );
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        write(&root.join("__init__.py"), "");
        write(&root.join("pytest.py"), "raise SystemExit(0)\n");
        write(&root.join("tests/__init__.py"), "");
        write(&root.join("tests/argparse.py"), "raise SystemExit(0)\n");
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "tests_not_deleted",
        "pytest.py",
        "would be imported instead",
    );
    assert_miss(
        &record,
        "tests_not_deleted",
        "tests/argparse.py",
        "would be imported instead",
    );
}
