//! Each test judged on its syntax tree (issue 38): weakenings that the
//! per-file counts let through, written as the attack, in Python and
//! JavaScript. Each must be `reject` with a finding that names the test,
//! the assertion and why.

use crate::support::*;
use std::path::Path;

const PY_TEST: &str = "tests/test_parse.py";
const PY: &str = r#"import pytest

from parse import parse


def test_parse():
    x = parse("a")
    assert x == "y"


class TestErrors:
    def test_empty(self):
        with pytest.raises(ValueError):
            parse("")
"#;

const JS_TEST: &str = "tests/app.test.js";
const JS: &str = r#"const request = require('supertest');
const assert = require('assert');
const app = require('../src/app');

describe('app', function () {
  it('serves /', function (done) {
    request(app).get('/').expect(200, done);
  });

  it('adds', function () {
    assert.strictEqual(app.add(1, 2), 3);
  });
});
"#;

fn repo() -> DemoRepo {
    DemoRepo::with(|root| {
        write(&root.join(PY_TEST), PY);
        write(&root.join(JS_TEST), JS);
    })
}

/// The patch that rewrites `path` with `edit` of its text.
fn weakened(repo: &DemoRepo, path: &str, edit: impl FnOnce(&str) -> String) -> Vec<u8> {
    patch_of(repo, |root: &Path| {
        let text = std::fs::read_to_string(root.join(path)).unwrap();
        let new = edit(&text);
        assert_ne!(new, text, "the edit changed nothing");
        write(&root.join(path), new);
    })
}

#[track_caller]
fn rejected_for(path: &str, edit: impl FnOnce(&str) -> String, needles: &[&str]) {
    let repo = repo();
    let patch = weakened(&repo, path, edit);
    let record = rejected(&repo, &patch);
    for needle in needles {
        assert_miss(&record, "assertions_not_weakened", path, needle);
    }
}

#[test]
fn python_an_assertion_removed_beside_an_added_test_is_reject() {
    rejected_for(
        PY_TEST,
        |t| {
            t.replace("    assert x == \"y\"\n", "")
                + "\n\ndef test_more():\n    assert parse(\"b\") == \"b\"\n    assert parse(\"c\") == \"c\"\n"
        },
        &[
            "test `test_parse`: assertion `assert x == \"y\"`",
            "was removed",
        ],
    );
}

#[test]
fn python_a_vacuous_replacement_is_reject() {
    rejected_for(
        PY_TEST,
        |t| t.replace("assert x == \"y\"", "assert x is not None"),
        &[
            "replaced by a weaker one, `assert x is not None`",
            "a not-None/defined check is weaker than an exact equality",
        ],
    );
}

#[test]
fn python_an_early_return_and_a_swallowed_failure_are_reject() {
    rejected_for(
        PY_TEST,
        |t| {
            t.replace(
                "    x = parse(\"a\")\n",
                "    x = parse(\"a\")\n    return\n",
            )
        },
        &["can no longer fail: it comes after `return` on line 8"],
    );
    rejected_for(
        PY_TEST,
        |t| {
            t.replace(
                "    assert x == \"y\"\n",
                "    try:\n        assert x == \"y\"\n    except Exception:\n        pass\n",
            )
        },
        &["can no longer fail: the `except` on line 10 swallows its failure"],
    );
}

#[test]
fn python_an_expected_exception_dropped_is_reject() {
    rejected_for(
        PY_TEST,
        |t| {
            t.replace(
                "        with pytest.raises(ValueError):\n            parse(\"\")\n",
                "        parse(\"\")\n",
            )
        },
        &["test `TestErrors::test_empty`: assertion `pytest.raises(ValueError)`"],
    );
}

#[test]
fn javascript_a_supertest_expect_removed_is_reject() {
    rejected_for(
        JS_TEST,
        |t| t.replace(".expect(200, done)", ".end(done)"),
        &[
            "test `app > serves /`: assertion `request(app).get('/').expect(200, done)`",
            "was removed",
        ],
    );
}

#[test]
fn javascript_vacuous_replacements_are_reject() {
    for weak in [
        "assert.ok(app.add(1, 2))",
        "expect(app.add(1, 2)).toBeDefined()",
    ] {
        rejected_for(
            JS_TEST,
            |t| t.replace("assert.strictEqual(app.add(1, 2), 3)", weak),
            &[
                "test `app > adds`",
                &format!("replaced by a weaker one, `{weak}`"),
            ],
        );
    }
}

#[test]
fn javascript_an_assertion_removed_beside_an_added_test_is_reject() {
    rejected_for(
        JS_TEST,
        |t| {
            t.replace("    assert.strictEqual(app.add(1, 2), 3);\n", "").replace(
                "\n});\n",
                "\n  it('adds more', function () {\n    assert.strictEqual(app.add(2, 2), 4);\n    assert.strictEqual(app.add(3, 2), 5);\n  });\n});\n",
            )
        },
        &["test `app > adds`: assertion `assert.strictEqual(app.add(1, 2), 3)`"],
    );
}

#[test]
fn javascript_an_early_return_is_reject() {
    rejected_for(
        JS_TEST,
        |t| {
            t.replace(
                "  it('adds', function () {\n",
                "  it('adds', function () {\n    return;\n",
            )
        },
        &["can no longer fail: it comes after `return` on line 11"],
    );
}

#[test]
fn a_genuine_change_with_a_stronger_assertion_and_a_new_test_is_review() {
    let repo = repo();
    let patch = patch_of(&repo, |root| {
        let py = PY.replace(
            "assert x == \"y\"",
            "assert x == \"y\", x\n    assert len(x) == 1",
        ) + "\n\ndef test_b():\n    assert parse(\"b\") == \"y\"\n";
        write(&root.join(PY_TEST), py);
        let js = JS.replace(
            "assert.strictEqual(app.add(1, 2), 3)",
            "expect(app.add(1, 2)).toBe(3)",
        );
        write(&root.join(JS_TEST), js);
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check("r", &[]);
    let record = repo.properties("r");
    assert_eq!(
        outcome(&record, "assertions_not_weakened")["outcome"],
        "holds",
        "{record:#}"
    );
    out.assert_code(0);
}

#[test]
fn a_test_file_that_no_longer_parses_is_reject() {
    rejected_for(
        PY_TEST,
        |t| t.replace("def test_parse():", "def test_parse(:"),
        &["the test file no longer parses (Python, line 6"],
    );
}
