//! The test command also runs on the base revision, and `tests_pass`
//! requires every test that passed there to run after the patch. Each
//! attack below stops a test from running in a way no scan of the diff
//! follows (an alias of a skip marker, a directory the runner does not
//! collect): with a real runner (Python's unittest, writing JUnit), each
//! was `review` before the baseline and is `reject` with it.

use crate::support::*;
use std::path::Path;

/// Runs unittest discovery under `tests/` (packages only, as unittest
/// does) and writes a JUnit report with passes, failures and skips.
const RUNNER: &str = r#"import os, sys, unittest
from xml.sax.saxutils import quoteattr

sys.path.insert(0, ".")


class Result(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.cases = []

    def addSuccess(self, t):
        super().addSuccess(t)
        self.cases.append((t, None))

    def addFailure(self, t, e):
        super().addFailure(t, e)
        self.cases.append((t, "failure"))

    def addError(self, t, e):
        super().addError(t, e)
        self.cases.append((t, "error"))

    def addSkip(self, t, r):
        super().addSkip(t, r)
        self.cases.append((t, "skipped"))


suite = unittest.defaultTestLoader.discover("tests")
result = unittest.TextTestRunner(resultclass=Result, verbosity=0).run(suite)
with open(os.environ["AGENT_LEDGER_JUNIT"], "w") as out:
    out.write("<testsuites><testsuite name='all'>")
    for test, kind in result.cases:
        classname = type(test).__module__ + "." + type(test).__name__
        out.write("<testcase classname=%s name=%s>" % (quoteattr(classname), quoteattr(test._testMethodName)))
        if kind:
            out.write("<%s/>" % kind)
        out.write("</testcase>")
    out.write("</testsuite></testsuites>")
sys.exit(0 if result.wasSuccessful() else 1)
"#;

const TEST_CMD: &str = "python3 run_tests.py";

/// The demo with `tests_pass`, the runner, a skip marker under another
/// name (`tests/marks.py`), and a second test module.
fn repo() -> DemoRepo {
    DemoRepo::with(|root| {
        let mut config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
        config.push_str("\n[[property]]\nname = \"tests_pass\"\nplugin = \"builtin:tests_pass\"\n");
        write(&root.join("agent-ledger.toml"), config);
        write(&root.join("run_tests.py"), RUNNER);
        write(
            &root.join("tests/marks.py"),
            "import unittest\n\nlater = unittest.skip(\"later\")\n",
        );
        write(
            &root.join("tests/test_more.py"),
            "import unittest\n\n\nclass TestMore(unittest.TestCase):\n    def test_more(self):\n        self.assertEqual(1 + 1, 2)\n",
        );
    })
}

/// The good patch's fix with `edit` on top, captured as run `run`; then
/// `check --test-cmd` with `extra`. Returns the exit code and the record.
fn checked(
    repo: &DemoRepo,
    run: &str,
    edit: impl FnOnce(&Path),
    extra: &[&str],
) -> (i32, serde_json::Value) {
    let patch = patch_of(repo, |root| {
        replace(root, "src/retry.py", "2 ** attempt", "2 ** (attempt - 1)");
        edit(root);
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", run, "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check(run, &[&["--test-cmd", TEST_CMD], extra].concat());
    (out.code, repo.properties(run))
}

fn replace(root: &Path, rel: &str, from: &str, to: &str) {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "`{from}` is not in {rel}");
    write(&path, text.replacen(from, to, 1));
}

/// Skips `TestBackoff.test_cap` through the base's own alias of
/// `unittest.skip`.
fn skip_through_an_alias(root: &Path) {
    replace(
        root,
        "tests/test_retry.py",
        "from src.retry import",
        "from marks import later\nfrom src.retry import",
    );
    replace(
        root,
        "tests/test_retry.py",
        "    def test_cap(self):",
        "    @later\n    def test_cap(self):",
    );
}

/// Checks the good fix with `edit` on top as run `r`: the trial must be
/// `reject`, with a finding of `property` on `path` that holds `needle`.
#[track_caller]
fn rejected_with(edit: impl FnOnce(&Path), property: &str, path: &str, needle: &str) {
    let repo = repo();
    let (code, record) = checked(&repo, "r", edit, &[]);
    assert_eq!(code, 4, "{record:#}");
    assert_miss(&record, property, path, needle);
}

#[test]
fn an_honest_fix_is_review_and_its_baseline_is_on_record_and_replays() {
    let repo = repo();
    let (code, record) = checked(&repo, "r", |_| {}, &[]);
    assert_eq!(code, 0, "{record:#}");
    assert_eq!(record["test_run"]["baseline"]["exit_code"], 1, "{record:#}");
    let base = &record["base_junit"];
    assert_eq!(base["file"], "r.base-junit.xml", "{record:#}");
    let stored = std::fs::read(
        repo.path()
            .join(".agent-ledger/properties/r.base-junit.xml"),
    )
    .unwrap();
    assert_eq!(
        base["sha256"],
        agent_ledger::digest::sha256_hex(&stored),
        "{record:#}"
    );
    // The base fails `test_first_attempt_waits_base` (the bug the patch
    // fixes); the tests it passed are the ones required.
    let text = String::from_utf8(stored).unwrap();
    assert!(text.contains("name=\"test_cap\""), "{text}");
    run(repo.path(), &["verify", "--run", "r", "--replay"]).assert_code(0);
}

#[test]
fn a_test_skipped_through_an_alias_of_a_skip_marker_is_reject() {
    let repo = repo();
    let (code, record) = checked(&repo, "r", skip_through_an_alias, &[]);
    assert_eq!(code, 4, "{record:#}");
    assert_miss(
        &record,
        "tests_pass",
        "",
        "test_retry.TestBackoff::test_cap passed on the base revision and is skipped after the patch",
    );
    // Without the baseline the same patch was `review`; the test judged on
    // its syntax tree now names the decorator added to it.
    let (code, record) = checked(&repo, "s", skip_through_an_alias, &["--no-test-baseline"]);
    assert_eq!(code, 4, "{record:#}");
    assert!(record["base_junit"].is_null(), "{record:#}");
    assert!(record["test_run"]["baseline"].is_null(), "{record:#}");
    assert_miss(
        &record,
        "assertions_not_weakened",
        "tests/test_retry.py",
        "test `TestBackoff::test_cap`: `@later` was added",
    );
}

// The runner writes the report `tests_pass` judges; a patch changed it to
// leave a test out and still write a pass for it. A file the test command
// names is protected.
#[test]
fn a_runner_script_the_test_command_names_is_protected() {
    rejected_with(
        |root| {
            replace(
                root,
                "run_tests.py",
                "suite = unittest.defaultTestLoader.discover(\"tests\")",
                "suite = unittest.TestSuite(t for s in unittest.defaultTestLoader.discover(\"tests\") for c in s for t in c if t._testMethodName != \"test_retries_overload\")",
            );
        },
        "patch_applies",
        "run_tests.py",
        "protected path",
    );
}

#[test]
fn a_test_module_moved_where_the_runner_does_not_look_is_reject() {
    rejected_with(
        |root| {
            std::fs::create_dir_all(root.join("tests/legacy")).unwrap();
            std::fs::rename(
                root.join("tests/test_more.py"),
                root.join("tests/legacy/test_more.py"),
            )
            .unwrap();
        },
        "tests_pass",
        "",
        "test_more.TestMore::test_more passed on the base revision and is not in the report after the patch",
    );
}

// A second test given the id of the skipped one (here by setting
// `__module__`) passed for it, since the best fate of an id counted.
#[test]
fn a_test_given_the_id_of_a_skipped_one_does_not_stand_in_for_it() {
    rejected_with(
        |root| {
            skip_through_an_alias(root);
            let more = root.join("tests/test_more.py");
            let mut text = std::fs::read_to_string(&more).unwrap();
            text.push_str(
                "\n\nclass TestBackoff(unittest.TestCase):\n    def test_cap(self):\n        pass\n\n\nTestBackoff.__module__ = \"test_retry\"\n",
            );
            write(&more, text);
        },
        "tests_pass",
        "",
        "test_retry.TestBackoff::test_cap passed on the base revision and is skipped after the patch",
    );
}

/// A runner of its own: `test_cap` is skipped once `tests/test_retry.py`
/// holds `@later`, the way the status is written chosen by `skip`.
fn scripted_runner(skip: &str) -> String {
    format!(
        r#"if grep -q '@later' tests/test_retry.py; then S='{skip}'; else S='<testcase classname="tests.test_retry.TestBackoff" name="test_cap"/>'; fi; printf '<testsuites><testsuite name="t">%s<testcase classname="tests.test_more.TestMore" name="test_more"/></testsuite></testsuites>' "$S" > "$AGENT_LEDGER_JUNIT""#
    )
}

/// Captures the alias skip plus `edit` in a repository with `extra_file`
/// at the base, and checks it with `runner`.
fn scripted(
    runner: &str,
    extra_file: Option<&str>,
    edit: impl FnOnce(&Path),
) -> (i32, serde_json::Value) {
    let repo = DemoRepo::with(|root| {
        let mut config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
        config.push_str("\n[[property]]\nname = \"tests_pass\"\nplugin = \"builtin:tests_pass\"\n");
        write(&root.join("agent-ledger.toml"), config);
        write(
            &root.join("tests/marks.py"),
            "import unittest\n\nlater = unittest.skip(\"later\")\n",
        );
        if let Some(path) = extra_file {
            write(&root.join(path), "name: tests\n");
        }
    });
    let patch = patch_of(&repo, |root| {
        skip_through_an_alias(root);
        edit(root);
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check("r", &["--test-cmd", runner]);
    (out.code, repo.properties("r"))
}

/// What `tests_pass` says of `test_cap` when the patch skips it.
const CAP_SKIPPED: &str = "tests.test_retry.TestBackoff::test_cap passed on the base revision and is skipped after the patch";

/// The alias skip of `test_cap` with `file` (at the base) deleted: the
/// deletion must not exempt the skipped test.
#[track_caller]
fn deleting_exempts_nothing(file: &str) {
    let (code, record) = scripted(
        &scripted_runner(
            r#"<testcase classname="tests.test_retry.TestBackoff" name="test_cap"><skipped/></testcase>"#,
        ),
        Some(file),
        |root| std::fs::remove_file(root.join(file)).unwrap(),
    );
    assert_eq!(code, 4, "{record:#}");
    assert_miss(&record, "tests_pass", "", CAP_SKIPPED);
}

// Deleting any file whose stem was the first segment of a class name
// (`.github/workflows/tests.yml` for `tests.test_retry.TestBackoff`)
// exempted the test as "its defining file was deleted".
#[test]
fn deleting_a_file_that_only_shares_a_name_with_a_package_exempts_nothing() {
    deleting_exempts_nothing(".github/workflows/tests.yml");
}

// A skip written as an attribute, not as a `<skipped/>` element, read as a
// pass.
#[test]
fn a_skip_written_as_an_attribute_is_a_skip() {
    for skip in [
        r#"<testcase classname="tests.test_retry.TestBackoff" name="test_cap" status="skipped"/>"#,
        r#"<testcase classname="tests.test_retry.TestBackoff" name="test_cap" skipped="true"/>"#,
        r#"<testcase classname="tests.test_retry.TestBackoff" name="test_cap" result="Skipped"/>"#,
    ] {
        let (code, record) = scripted(&scripted_runner(skip), None, |_| {});
        assert_eq!(code, 4, "{skip}: {record:#}");
        assert_miss(&record, "tests_pass", "", CAP_SKIPPED);
    }
}

// A deleted file that shares the module's path outside the test globs
// (`docs/tests/test_retry.rst`) still exempted the test.
#[test]
fn deleting_a_document_named_like_a_test_module_exempts_nothing() {
    deleting_exempts_nothing("docs/tests/test_retry.rst");
}
