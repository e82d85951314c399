//! `init`: a repository that never used agent-ledger gets a configuration
//! that makes `check` work, and nothing the user has is overwritten.

use crate::support::*;

fn python_repo() -> tempfile::TempDir {
    let dir = tempdir();
    let root = dir.path();
    write(
        &root.join("src/calc.py"),
        "def add(a, b):\n    return a + b\n",
    );
    write(
        &root.join("tests/test_calc.py"),
        "from src.calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    write(&root.join("tests/fixtures/cases.json"), "[[1, 2, 3]]\n");
    write(&root.join("web/app.test.ts"), "test('x', () => {});\n");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    dir
}

#[test]
fn init_writes_a_configuration_that_check_accepts() {
    let repo = python_repo();
    let root = repo.path();
    let out = run(root, &["init", "--format", "json"]);
    out.assert_code(0);
    let done = out.json();
    assert_eq!(done["fixture_roots"], serde_json::json!(["tests/fixtures"]));
    let langs = done["languages"].to_string();
    assert!(
        langs.contains("Python") && langs.contains("TypeScript"),
        "{langs}"
    );
    let text = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
    assert!(
        text.contains("**/test*.py") && text.contains("# "),
        "{text}"
    );
    git(root, &["add", "agent-ledger.toml"]);
    git(root, &["commit", "-q", "-m", "agent-ledger"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    // A change to the code: locked fixtures, built-in properties, review.
    let scratch = tempdir();
    let body = scratch.path().join("change.diff");
    write(
        &body,
        "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n+    \"\"\"Adds.\"\"\"\n     return a + b\n",
    );
    run(
        root,
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
    let cache = cache_dir();
    let out = run(
        root,
        &[
            "check",
            "--run",
            "r",
            "--base",
            &base,
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // Deleting the test is caught by the globs init chose.
    let del = scratch.path().join("del.diff");
    write(
        &del,
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\ndeleted file mode 100644\n--- a/tests/test_calc.py\n+++ /dev/null\n@@ -1,4 +0,0 @@\n-from src.calc import add\n-\n-def test_add():\n-    assert add(1, 2) == 3\n",
    );
    run(
        root,
        &["capture", "--run", "d", "--body", del.to_str().unwrap()],
    )
    .assert_code(0);
    let out = run(
        root,
        &[
            "check",
            "--run",
            "d",
            "--base",
            &base,
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
}

/// A mocha project laid out as express is: the test script names the
/// directories. `init`'s configuration, committed unchanged, must protect
/// them: a clean branch is `review` (no `fixture_mismatch`), a deleted
/// test and an `it.skip` are `reject`.
#[test]
fn init_reads_mochas_test_script_and_its_configuration_gates_with_no_edits() {
    let dir = tempdir();
    let root = dir.path();
    write(
        &root.join("package.json"),
        r#"{"name":"web","scripts":{"test":"mocha --require test/support/env --reporter spec --check-leaks test/ test/acceptance/"},"devDependencies":{"mocha":"10.0.0"}}"#,
    );
    write(&root.join("lib/app.js"), "exports.add = (a, b) => a + b;\n");
    write(
        &root.join("test/app.js"),
        "const assert = require('assert');\nconst app = require('../lib/app');\ndescribe('app', () => {\n  it('adds', () => {\n    assert.strictEqual(app.add(1, 2), 3);\n  });\n});\n",
    );
    write(
        &root.join("test/acceptance/routes.js"),
        "const assert = require('assert');\ndescribe('routes', () => {\n  it('lists', () => {\n    assert.deepStrictEqual([1].map((x) => x), [1]);\n  });\n});\n",
    );
    write(
        &root.join("test/support/env.js"),
        "process.env.NODE_ENV = 'test';\n",
    );
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let out = run(root, &["init", "--format", "json"]);
    out.assert_code(0);
    let done = out.json();
    assert_eq!(done["runners"][0]["name"], "mocha", "{done:#}");
    assert_eq!(
        done["test_globs"],
        serde_json::json!(["test/*.{js,cjs,mjs}", "test/acceptance/*.{js,cjs,mjs}"])
    );
    git(root, &["add", "agent-ledger.toml"]);
    git(root, &["commit", "-q", "-m", "agent-ledger"]);
    let cache = cache_dir();
    let gate = |branch: &str, edit: &dyn Fn(&std::path::Path)| {
        git(root, &["checkout", "-q", "-b", branch, "main"]);
        edit(root);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", branch]);
        run(root, &["capture", "--git", "main..HEAD"]).assert_code(0);
        let out = run(root, &["check", "--cache-dir", cache.to_str().unwrap()]);
        git(root, &["checkout", "-q", "main"]);
        out
    };
    let clean = gate("clean", &|r| {
        write(
            &r.join("lib/app.js"),
            "// Adds.\nexports.add = (a, b) => a + b;\n",
        )
    });
    assert_eq!(clean.code, 0, "{}{}", clean.stdout, clean.stderr);
    let deleted = gate("deleted", &|r| {
        std::fs::remove_file(r.join("test/acceptance/routes.js")).unwrap()
    });
    assert_eq!(deleted.code, 4, "{}{}", deleted.stdout, deleted.stderr);
    let skipped = gate("skipped", &|r| {
        let t = std::fs::read_to_string(r.join("test/app.js")).unwrap();
        write(
            &r.join("test/app.js"),
            t.replace("it('adds'", "it.skip('adds'"),
        );
    });
    assert_eq!(skipped.code, 4, "{}{}", skipped.stdout, skipped.stderr);
}

/// Test globs that match no tracked file protect nothing: `check` stops
/// with an error naming the fix, never a warning beside `review`.
#[test]
fn test_globs_that_match_nothing_are_an_error() {
    let repo = python_repo();
    let root = repo.path();
    write(
        &root.join("agent-ledger.toml"),
        "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[tests]\nglobs = [\"spec/**\"]\n",
    );
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "config"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    let scratch = tempdir();
    let del = scratch.path().join("del.diff");
    write(
        &del,
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\ndeleted file mode 100644\n--- a/tests/test_calc.py\n+++ /dev/null\n@@ -1,4 +0,0 @@\n-from src.calc import add\n-\n-def test_add():\n-    assert add(1, 2) == 3\n",
    );
    run(
        root,
        &["capture", "--run", "d", "--body", del.to_str().unwrap()],
    )
    .assert_code(0);
    let out = run(root, &["check", "--run", "d", "--base", &base]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("would protect no test"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("agent-ledger init"), "{}", out.stderr);
}

#[test]
fn init_never_overwrites() {
    let repo = python_repo();
    let root = repo.path();
    write(&root.join("agent-ledger.toml"), "# mine\n");
    let out = run(root, &["init"]);
    assert_eq!(out.code, 73, "{}", out.stderr);
    assert!(out.stderr.contains("agent-ledger.toml"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap(),
        "# mine\n"
    );

    // An existing workflow stops it before the configuration is written.
    std::fs::remove_file(root.join("agent-ledger.toml")).unwrap();
    write(&root.join(".github/workflows/agent-ledger.yml"), "mine\n");
    assert_eq!(run(root, &["init", "--ci", "github"]).code, 73);
    assert!(!root.join("agent-ledger.toml").exists());
}

#[test]
fn init_with_ci_writes_the_pull_request_gate() {
    let repo = python_repo();
    let root = repo.path();
    run(root, &["init", "--ci", "gitlab"]).assert_code(0);
    let ci = std::fs::read_to_string(root.join("ci/agent-ledger.gitlab-ci.yml")).unwrap();
    assert!(
        ci.contains("merge_request_event") && ci.contains("capture --run") && ci.contains("--git"),
        "{ci}"
    );
    std::fs::remove_file(root.join("agent-ledger.toml")).unwrap();
    run(root, &["init", "--ci", "github"]).assert_code(0);
    let ci = std::fs::read_to_string(root.join(".github/workflows/agent-ledger.yml")).unwrap();
    assert!(
        ci.contains("pull_request") && ci.contains("uses: agent-ledger/agent-ledger@"),
        "{ci}"
    );
}

/// A tracked `.github` (or `ci`, or `.github/workflows`) that is a symlink
/// out of the repository: `init --ci` writes nothing there, nor the
/// configuration.
#[test]
fn init_ci_does_not_follow_a_symlinked_directory_out_of_the_repository() {
    for (ci, link, target_rel) in [
        ("github", ".github", "workflows/agent-ledger.yml"),
        ("github", ".github/workflows", "agent-ledger.yml"),
        ("gitlab", "ci", "agent-ledger.gitlab-ci.yml"),
    ] {
        let repo = python_repo();
        let root = repo.path();
        let outside = plain_tempdir();
        std::fs::create_dir_all(outside.path().join("workflows")).unwrap();
        let link_path = root.join(link);
        std::fs::create_dir_all(link_path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(outside.path(), &link_path).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "a link"]);
        let out = run(root, &["init", "--ci", ci]);
        assert_eq!(out.code, 65, "{link}: {}", out.stderr);
        assert!(out.stderr.contains("is a symlink"), "{}", out.stderr);
        assert!(
            !outside.path().join(target_rel).exists(),
            "{link}: written outside"
        );
        assert!(!root.join("agent-ledger.toml").exists());
    }
}
