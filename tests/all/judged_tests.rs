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

/// With no `[tests]` table (the built-in globs, which do not reach a mocha
/// project's `test/*.js`), `check` uses the runners it finds in the base,
/// as `init` does: a deleted mocha test file and an `it.skip` are `reject`.
#[test]
fn without_test_globs_the_runner_model_protects_a_mocha_projects_tests() {
    let mocha = |root: &Path| {
        let config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
        let config = config.replace("[tests]\nglobs = [\"tests/**\", \"**/test_*.py\"]\n", "");
        assert!(!config.contains("[tests]"), "{config}");
        write(&root.join("agent-ledger.toml"), config);
        write(
            &root.join("package.json"),
            "{\"name\": \"web\", \"scripts\": {\"test\": \"mocha\"}, \"devDependencies\": {\"mocha\": \"10\"}}\n",
        );
        write(
            &root.join("test/app.js"),
            "const assert = require('assert');\n\ndescribe('app', function () {\n  it('adds', function () {\n    assert.strictEqual(1 + 2, 3);\n  });\n});\n",
        );
    };
    let repo = DemoRepo::with(mocha);
    let deleted = patch_of(&repo, |root| {
        std::fs::remove_file(root.join("test/app.js")).unwrap()
    });
    let record = rejected(&repo, &deleted);
    assert_miss(&record, "tests_not_deleted", "test/app.js", "");
    let repo = DemoRepo::with(mocha);
    let skipped = weakened(&repo, "test/app.js", |t| {
        t.replace("it('adds'", "it.skip('adds'")
    });
    let record = rejected(&repo, &skipped);
    assert_miss(&record, "assertions_not_weakened", "test/app.js", "");
}

/// An edit of a test file's text.
type Edit = fn(&str) -> String;

/// Each edit of the test file `path` (holding `text` at the base) is
/// `reject`, with an `assertions_not_weakened` finding holding its needle.
#[track_caller]
fn each_rejected(path: &str, text: &str, cases: &[(Edit, &str)]) {
    for (edit, needle) in cases {
        let repo = DemoRepo::with(|root| write(&root.join(path), text));
        let patch = weakened(&repo, path, edit);
        let record = rejected(&repo, &patch);
        assert_miss(&record, "assertions_not_weakened", path, needle);
    }
}

const RS_TEST: &str = "tests/parse.rs";
const RS: &str = r#"use demo::parse;

#[test]
fn parses() {
    let x = parse("a");
    assert_eq!(x, Some("y"));
}

#[test]
#[should_panic(expected = "empty")]
fn empty_panics() {
    parse("");
}
"#;

/// Rust: an assertion removed beside an added test, a vacuous replacement,
/// an early `return`, a dropped `#[should_panic]`: each `reject`, naming
/// the test.
#[test]
fn rust_weakened_tests_are_reject() {
    let cases: [(Edit, &str); 4] = [
        (
            |t| {
                t.replace("    assert_eq!(x, Some(\"y\"));\n", "")
                    + "\n#[test]\nfn added() {\n    assert_eq!(parse(\"b\"), Some(\"z\"));\n}\n"
            },
            "test `parses`: assertion `assert_eq!(x, Some(\"y\"))`",
        ),
        (
            |t| t.replace("assert_eq!(x, Some(\"y\"));", "assert!(x.is_some());"),
            "weaker",
        ),
        (
            |t| {
                t.replace(
                    "    assert_eq!(x, Some(\"y\"));",
                    "    return;\n    assert_eq!(x, Some(\"y\"));",
                )
            },
            "can no longer fail",
        ),
        (
            |t| t.replace("#[should_panic(expected = \"empty\")]\n", ""),
            "test `empty_panics`",
        ),
    ];
    each_rejected(RS_TEST, RS, &cases);
}

const GO_TEST: &str = "tests/calc_test.go";
const GO: &str = "package calc\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tgot := Add(1, 2)\n\tif got != 3 {\n\t\tt.Errorf(\"Add(1, 2) = %d, want 3\", got)\n\t}\n}\n\nfunc TestSub(t *testing.T) {\n\tassert.Equal(t, 1, Sub(2, 1))\n}\n";

/// Go: a check removed beside an added test, a testify assertion replaced
/// by a vacuous one, an early `return`: each `reject`, naming the test.
#[test]
fn go_weakened_tests_are_reject() {
    let cases: [(Edit, &str); 3] = [
        (
            |t| {
                t.replace(
                    "\tif got != 3 {\n\t\tt.Errorf(\"Add(1, 2) = %d, want 3\", got)\n\t}\n",
                    "\t_ = got\n",
                ) + "\nfunc TestMore(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Error(\"2 + 2\")\n\t}\n}\n"
            },
            "test `TestAdd`: assertion `if got != 3",
        ),
        (
            |t| {
                t.replace(
                    "assert.Equal(t, 1, Sub(2, 1))",
                    "assert.NotNil(t, Sub(2, 1))",
                )
            },
            "weaker",
        ),
        (
            |t| t.replace("\tgot := Add(1, 2)\n", "\tgot := Add(1, 2)\n\treturn\n"),
            "can no longer fail",
        ),
    ];
    each_rejected(GO_TEST, GO, &cases);
}
