//! Tests disabled without deleting a file or an assertion: a skip marker, a
//! test removed from its module or its assertions rebound to no-ops, the
//! runner's configuration changed. Each patch is made in the test from the
//! demo base and must end `reject` (exit 4) with a finding naming the file,
//! and the line where there is one; an honest patch beside them stays
//! `review`.

use crate::support::*;
use std::path::Path;

const PY: &str = "tests/test_retry.py";

/// Replaces `from` (which must occur) with `to` in the file at `rel`.
fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "`{from}` is not in {rel}");
    write(&path, text.replacen(from, to, 1));
}

/// The finding of `property` on `path` whose message holds `needle`.
#[track_caller]
fn finding<'a>(
    record: &'a serde_json::Value,
    property: &str,
    path: &str,
    needle: &str,
) -> &'a serde_json::Value {
    assert_miss(record, property, path, needle);
    outcome(record, property)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path && f["message"].as_str().unwrap().contains(needle))
        .unwrap()
}

#[test]
fn a_pytest_skip_decorator_is_reject() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        edit(root, PY, "import json\n", "import json\nimport pytest\n");
        edit(
            root,
            PY,
            "    def test_cap(self):\n",
            "    @pytest.mark.skip(reason=\"flaky\")\n    def test_cap(self):\n",
        );
    });
    let record = rejected(&repo, &patch);
    let f = finding(
        &record,
        "assertions_not_weakened",
        PY,
        "`pytest.mark.skip` added",
    );
    assert_eq!(f["line"], 15, "{f:#}");
}

#[test]
fn an_it_skip_is_reject() {
    const JS: &str = "tests/retry.test.js";
    let repo = DemoRepo::with(|root| {
        write(
            &root.join(JS),
            "const { backoff } = require('./retry');\n\nit('caps', () => {\n  expect(backoff(30)).toBe(5000);\n});\n",
        )
    });
    let patch = patch_of(&repo, |root| {
        edit(root, JS, "it('caps'", "it.skip('caps'");
    });
    let record = rejected(&repo, &patch);
    let f = finding(&record, "assertions_not_weakened", JS, "`it.skip` added");
    assert_eq!(f["line"], 3, "{f:#}");
}

#[test]
fn a_rust_ignore_attribute_is_reject() {
    const RS: &str = "tests/retry.rs";
    let repo = DemoRepo::with(|root| {
        write(
            &root.join(RS),
            "#[test]\nfn caps() {\n    assert_eq!(retry::backoff(30), 5000);\n}\n",
        )
    });
    let patch = patch_of(&repo, |root| {
        edit(root, RS, "#[test]\n", "#[test]\n#[ignore]\n");
    });
    let record = rejected(&repo, &patch);
    let f = finding(&record, "assertions_not_weakened", RS, "`#[ignore]` added");
    assert_eq!(f["line"], 2, "{f:#}");
}

#[test]
fn deleting_a_test_class_from_its_module_is_reject() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        edit(
            root,
            PY,
            "class TestShouldRetry(",
            "del TestBackoff\n\n\nclass TestShouldRetry(",
        );
    });
    let record = rejected(&repo, &patch);
    let f = finding(
        &record,
        "assertions_not_weakened",
        PY,
        "`del TestBackoff` added",
    );
    assert_eq!(f["line"], 23, "{f:#}");
}

#[test]
fn rebinding_assert_equal_to_a_no_op_is_reject() {
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        edit(
            root,
            PY,
            "FIXTURES =",
            "unittest.TestCase.assertEqual = lambda *a, **k: None\nFIXTURES =",
        );
    });
    let record = rejected(&repo, &patch);
    let f = finding(
        &record,
        "assertions_not_weakened",
        PY,
        "`assertEqual` rebound",
    );
    assert_eq!(f["line"], 7, "{f:#}");
}

const PYPROJECT: &str = "[project]\nname = \"retry\"\nversion = \"0.1.0\"\ndependencies = [\n    \"requests>=2\",\n]\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n";

#[test]
fn a_pytest_addopts_change_in_pyproject_is_reject() {
    let repo = DemoRepo::with(|root| write(&root.join("pyproject.toml"), PYPROJECT));
    let patch = patch_of(&repo, |root| {
        edit(
            root,
            "pyproject.toml",
            "testpaths = [\"tests\"]\n",
            "testpaths = [\"tests\"]\naddopts = \"-k 'not slow'\"\n",
        );
    });
    let record = rejected(&repo, &patch);
    assert_miss(
        &record,
        "tests_not_deleted",
        "pyproject.toml",
        "[tool.pytest.ini_options]",
    );
}

// The control: a patch that adds a test (with skip markers named only in a
// comment and a string), fixes the code and changes the project's
// dependencies is still `review`.
#[test]
fn an_honest_patch_adding_a_test_and_a_dependency_is_review() {
    let repo = DemoRepo::with(|root| write(&root.join("pyproject.toml"), PYPROJECT));
    let patch = patch_of(&repo, |root| {
        edit(
            root,
            "pyproject.toml",
            "    \"requests>=2\",\n",
            "    \"requests>=2\",\n    \"urllib3>=2\",\n",
        );
        edit(
            root,
            "src/retry.py",
            "delay = base_ms * 2 ** attempt",
            "delay = base_ms * 2 ** (attempt - 1)",
        );
        let path = root.join(PY);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(
            "\n\n# No @pytest.mark.skip here, and no del TestBackoff either.\n\
             class TestNegative(unittest.TestCase):\n\
             \x20   def test_zero_attempt_raises(self):\n\
             \x20       note = \"it.skip and self.skipTest( are only words here\"\n\
             \x20       with self.assertRaises(ValueError, msg=note):\n\
             \x20           backoff_ms(0)\n",
        );
        write(&path, text);
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check("r", &[]);
    out.assert_code(0);
    assert_eq!(out.json()["verdict"]["verdict"], "review");
    let record = repo.properties("r");
    for name in ["tests_not_deleted", "assertions_not_weakened"] {
        assert_eq!(outcome(&record, name)["outcome"], "holds", "{name}");
    }
}

// A renamed test is compared with its old path at the base: the skip
// marker added on the way is new even though the new path has no base.
#[test]
fn a_skip_added_while_renaming_a_test_is_reject() {
    const TO: &str = "tests/test_backoff.py";
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        edit(
            root,
            PY,
            "    def test_cap(self):\n",
            "    @unittest.skip(\"later\")\n    def test_cap(self):\n",
        );
        std::fs::rename(root.join(PY), root.join(TO)).unwrap();
    });
    assert!(String::from_utf8_lossy(&patch).contains(&format!("rename to {TO}")));
    let record = rejected(&repo, &patch);
    let f = finding(
        &record,
        "assertions_not_weakened",
        TO,
        &format!(
            "`unittest.skip` added: skips the test (Python; 0 in the base, 1 now, compared with `{PY}` at the base)"
        ),
    );
    assert_eq!(f["line"], 14, "{f:#}");
}
