//! Issue 21's attacks, each written as the attack: on the code before the
//! fix each of these was `review` (or leaked, or exited 0); now each is
//! caught.

use crate::support::*;
use std::path::Path;

/// A JavaScript repository as a new user has it: a module, its only test
/// file, a fixture directory; `init` writes the configuration.
fn js_repo() -> DemoRepo {
    let dir = tempdir();
    let root = dir.path();
    write(
        &root.join("package.json"),
        "{\"name\": \"calc\", \"scripts\": {\"test\": \"node --test\"}}\n",
    );
    write(
        &root.join("src/calc.js"),
        "exports.add = (a, b) => a + b;\n",
    );
    write(
        &root.join("src/calc.test.js"),
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('./calc');\ntest('add', () => {\n  assert.strictEqual(add(1, 2), 3);\n  assert.strictEqual(add(2, 2), 4);\n});\n",
    );
    write(&root.join("test/fixtures/cases.json"), "[[1, 2, 3]]\n");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    run(root, &["init"]).assert_code(0);
    let config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
    assert!(config.contains("{js,"), "init writes brace globs: {config}");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    DemoRepo { dir, base }
}

fn checked(repo: &DemoRepo, run_id: &str, edit: impl FnOnce(&Path)) -> (Output, serde_json::Value) {
    let patch = patch_of(repo, edit);
    run_with_stdin(
        repo.path(),
        &["capture", "--run", run_id, "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check(run_id, &[]);
    let record = repo.properties(run_id);
    (out, record)
}

// `init` wrote `**/*.test.{js,...}`, which the plugins' hand-written
// matcher did not read: both patches below were `review`.
#[test]
fn on_a_javascript_repository_set_up_by_init_a_deleted_test_is_reject() {
    let repo = js_repo();
    let (out, record) = checked(&repo, "r", |root| {
        std::fs::remove_file(root.join("src/calc.test.js")).unwrap()
    });
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(&record, "tests_not_deleted", "src/calc.test.js", "deleted");
}

#[test]
fn on_a_javascript_repository_set_up_by_init_a_removed_assertion_is_reject() {
    let repo = js_repo();
    let (out, record) = checked(&repo, "r", |root| {
        let p = root.join("src/calc.test.js");
        let text = std::fs::read_to_string(&p).unwrap();
        write(
            &p,
            text.replace("  assert.strictEqual(add(2, 2), 4);\n", ""),
        );
    });
    assert_eq!(out.code, 4, "{record:#}");
    assert_miss(&record, "assertions_not_weakened", "src/calc.test.js", "");
}

/// A configured test glob that matches nothing at the base is said loudly,
/// never a silent hold.
#[test]
fn a_test_glob_that_matches_no_tracked_file_is_an_error() {
    let repo = js_repo();
    let config = tempdir();
    let file = config.path().join("agent-ledger.toml");
    write(
        &file,
        "schema = 1\n[fixtures]\nroots = [\"test/fixtures\"]\n[tests]\nglobs = [\"spec/**/*.js\"]\n",
    );
    let patch = patch_of(&repo, |root| {
        write(
            &root.join("src/calc.js"),
            "exports.add = (a, b) => b + a;\n",
        )
    });
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    // Protecting no test, the gate would say `review` to a deleted one.
    let out = repo.check("r", &["--config", file.to_str().unwrap()]);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(
        out.stderr.contains("would protect no test") && out.stderr.contains("[tests] globs"),
        "{}",
        out.stderr
    );
    // One glob of two that matches nothing is a note beside the verdict.
    write(
        &file,
        "schema = 1\n[fixtures]\nroots = [\"test/fixtures\"]\n[tests]\nglobs = [\"spec/**/*.js\", \"**/*.js\"]\n",
    );
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "q", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check("q", &["--config", file.to_str().unwrap()]);
    let notes = out.json()["notes"].to_string();
    assert!(
        notes.contains("`spec/**/*.js`") && notes.contains("matches no file"),
        "{notes}"
    );
    // A glob no reader can parse is an error naming the key.
    write(&file, "schema = 1\n[tests]\nglobs = [\"tests/[a\"]\n");
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "s", "--body", "-"],
        Some(&patch),
    )
    .assert_code(0);
    let out = repo.check("s", &["--config", file.to_str().unwrap()]);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains("tests.globs"), "{}", out.stderr);
}

// The staged pipeline (docs/guide/getting-started.md): `capture`,
// `lock --run`, `check`. The lock hashed the working tree, which already
// held the agent's fixture edit, and `check` trusted it: `review`.
#[test]
fn a_lock_of_the_working_tree_is_not_trusted_for_the_base() {
    let repo = DemoRepo::new();
    repo.capture("r", "touches-fixture");
    // The agent's fixture edit is in the working tree when `lock` runs.
    let body = std::fs::read(fixture("patches/touches-fixture.diff")).unwrap();
    let mut apply = std::process::Command::new("git");
    apply
        .args(["apply", "-"])
        .current_dir(repo.path())
        .stdin(std::process::Stdio::piped());
    let mut child = apply.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&body).unwrap();
    assert!(child.wait().unwrap().success());
    run(repo.path(), &["lock", "--run", "r"]).assert_code(0);
    let out = repo.check("r", &[]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("taken from a working tree"),
        "{}",
        out.stderr
    );
    assert!(!repo.path().join(".agent-ledger/verdicts/r.json").exists());
    // A lock of the base revision, taken apart from the working tree, is
    // trusted, and the fixture edit is caught.
    repo.capture("s", "touches-fixture");
    run(repo.path(), &["lock", "--run", "s", "--base", &repo.base]).assert_code(0);
    repo.check("s", &[]).assert_code(3);
}

// A manifest's `body` (and `junit`, `config`) could be absolute or climb
// with `..`: `/etc/shadow` and a 0600 secret were copied into the ledger
// as world-readable files.
#[test]
fn a_manifest_names_files_under_its_own_directory_only() {
    use std::os::unix::fs::PermissionsExt;
    let repo = DemoRepo::new();
    let secrets = tempdir();
    let secret = secrets.path().join("secret.diff");
    write(&secret, "s3cret\n");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dir = tempdir();
    let d = dir.path();
    std::os::unix::fs::symlink(&secret, d.join("link.diff")).unwrap();
    let rel = pathdiff(&secret, d);
    let lines = [
        serde_json::json!({"run": "abs", "body": secret, "repo": repo.path(), "base": repo.base}),
        serde_json::json!({"run": "up", "body": rel, "repo": repo.path(), "base": repo.base}),
        serde_json::json!({"run": "link", "body": "link.diff", "repo": repo.path(), "base": repo.base}),
        serde_json::json!({"run": "junit", "body": "good.diff", "junit": "/etc/passwd", "repo": repo.path(), "base": repo.base}),
    ];
    std::fs::copy(fixture("patches/good.diff"), d.join("good.diff")).unwrap();
    write(
        &d.join("m.jsonl"),
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>(),
    );
    let ledger = d.join("ledger");
    let out = run(
        d,
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "batch",
            "--manifest",
            "m.jsonl",
        ],
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    for run_id in ["abs", "up", "link", "junit"] {
        assert!(
            !ledger.join(format!("transcripts/{run_id}.json")).exists(),
            "{run_id} was captured: {}",
            out.stderr
        );
    }
    assert!(
        out.stderr.contains("outside the manifest's directory"),
        "{}",
        out.stderr
    );
    // With the secrets' directory allowed, the copy stays as private as
    // its source.
    write(
        &d.join("m2.jsonl"),
        serde_json::json!({"run": "ok", "body": secret, "repo": repo.path(), "base": repo.base})
            .to_string()
            + "\n",
    );
    let out = run(
        d,
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "batch",
            "--manifest",
            "m2.jsonl",
            "--manifest-root",
            secrets.path().to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    let mode = std::fs::metadata(ledger.join("transcripts/ok.patch"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "ok.patch is {mode:o}");
}

/// `path` relative to `from`, through `..`.
fn pathdiff(path: &Path, from: &Path) -> String {
    let ups = from.components().count() - 1;
    format!(
        "{}{}",
        "../".repeat(ups),
        path.strip_prefix("/").unwrap().display()
    )
}

// Missing input read as an empty success (issue 21 item 11): each of these
// exited 0 or wrote a record.
#[test]
fn a_trace_that_does_not_exist_is_an_error() {
    let repo = DemoRepo::new();
    let out = run(
        repo.path(),
        &["reconcile", "--trace", "no-such-trace.jsonl"],
    );
    assert_eq!(out.code, 66, "{}", out.stderr);
    assert!(out.stderr.contains("no-such-trace.jsonl"), "{}", out.stderr);
}

#[test]
fn checking_a_run_that_was_never_captured_writes_nothing() {
    let repo = DemoRepo::new();
    repo.capture("run-001", "good");
    let out = repo.check("run-01", &[]);
    assert_eq!(out.code, 66, "{}", out.stderr);
    assert!(
        out.stderr.contains("run-01") && out.stderr.contains("capture"),
        "{}",
        out.stderr
    );
    assert!(
        !repo
            .path()
            .join(".agent-ledger/verdicts/run-01.json")
            .exists()
    );
}

#[test]
fn an_empty_manifest_is_an_error() {
    let dir = tempdir();
    write(&dir.path().join("m.jsonl"), "# nothing yet\n\n");
    let out = run(dir.path(), &["batch", "--manifest", "m.jsonl"]);
    assert_eq!(out.code, 66, "{}", out.stderr);
    assert!(out.stderr.contains("holds no trial"), "{}", out.stderr);
}

#[test]
fn capture_outside_a_repository_writes_nothing() {
    let dir = plain_tempdir();
    let body = fixture("patches/good.diff");
    let out = run(
        dir.path(),
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    );
    assert_eq!(out.code, 64, "{}", out.stderr);
    assert!(out.stderr.contains("--ledger"), "{}", out.stderr);
    assert!(!dir.path().join(".agent-ledger").exists());
    // With a ledger named, it captures.
    let ledger = dir.path().join("l");
    run(
        dir.path(),
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "capture",
            "--run",
            "r",
            "--body",
            body.to_str().unwrap(),
        ],
    )
    .assert_code(0);
}

/// Runs `command` as uid 1000 of a user namespace that may make no other
/// (its parent allows one child, which it is), so the replay's own
/// network namespace is refused: what most containers and Ubuntu 24.04's
/// runners do.
pub(crate) fn without_network_isolation(command: std::process::Command) -> Output {
    let outer = in_user_namespace(
        r#"echo 1 > /proc/sys/user/max_user_namespaces && exec unshare --user --map-user=1000 --map-group=1000 "$@""#,
        &command,
    );
    run_command(outer, &[], None)
}

// As a user other than root, the replay enters its network namespace
// inside a new user namespace, which the kernel refuses to a process that
// has started a thread: a thread pool built at start-up made every
// non-root `check` "not isolated" (and exit 70 under CI).
#[test]
fn a_replay_run_by_a_user_other_than_root_is_isolated() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let cache = cache_dir();
    let mut c = command(repo.path());
    c.args(["check", "--run", "r", "--base", &repo.base, "--cache-dir"])
        .arg(&cache)
        .env("CI", "true");
    let outer = as_unprivileged(&c);
    let out = run_command(outer, &[], None);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(repo.properties("r")["network"], "isolated");
}

// `replay` and `verify --replay` replay as `check` does: as a user other
// than root, under CI (where a replay that cannot leave the network stops
// with exit 70), each one is isolated.
#[test]
fn replay_and_verify_replay_by_a_user_other_than_root_are_isolated() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let cache = cache_dir();
    let mut c = command(repo.path());
    c.args(["check", "--run", "r", "--base", &repo.base, "--cache-dir"])
        .arg(&cache);
    run_command(c, &[], None).assert_code(0);
    for args in [
        &["replay", "--run", "r", "--base", &repo.base][..],
        &["verify", "--replay", "--run", "r"][..],
    ] {
        let mut c = command(repo.path());
        c.args(args)
            .env("AGENT_LEDGER_CACHE_DIR", &cache)
            .env("CI", "true");
        let out = run_command(as_unprivileged(&c), &[], None);
        assert_eq!(out.code, 0, "{args:?}\n{}{}", out.stdout, out.stderr);
        assert!(!out.stderr.contains("isolat"), "{args:?}\n{}", out.stderr);
    }
}

// A run key handed over on a descriptor makes the process non-dumpable,
// whose `/proc/self/uid_map` is then root's: a non-root replay holding one
// could not write its user namespace's maps, and was not isolated.
#[test]
fn a_replay_holding_a_run_key_on_a_descriptor_is_isolated() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    // Everything the run writes is this user's own: as root the run is
    // nobody's (whose files are not root's, as a CI runner's are not),
    // which is what makes a non-dumpable process's `/proc/self` files out
    // of its reach.
    let scratch = plain_tempdir();
    let key = scratch.path().join("run.key");
    write(&key, format!("{}\n", "ab".repeat(32)));
    let home = scratch.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let mut c = command(repo.path());
    c.args(["check", "--run", "r", "--base", &repo.base, "--cache-dir"])
        .arg(scratch.path().join("cache"))
        .env("CI", "true")
        .env("HOME", &home)
        .env("XDG_STATE_HOME", &home)
        .env("AGENT_LEDGER_RUNS_DIR", scratch.path().join("runs"))
        .env("AGENT_LEDGER_TRACE_KEY_FD", "3");
    let mut outer = if host_root() {
        for dir in [repo.path(), scratch.path()] {
            let ok = std::process::Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(dir)
                .status()
                .unwrap();
            assert!(ok.success());
        }
        let mut o = std::process::Command::new("setpriv");
        o.args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "sh",
        ]);
        o
    } else {
        std::process::Command::new("sh")
    };
    // The key on descriptor 3, as a harness hands it over.
    outer.arg("-c").arg(r#"exec 3<"$0" && exec "$@""#).arg(&key);
    let outer = wrapped(outer, &c);
    let out = run_command(outer, &[], None);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(repo.properties("r")["network"], "isolated");
}

// When replay's network isolation lapsed, the terminal still printed
// `review` and only the JSON record said so (issue 21 item 12).
#[test]
fn a_lapse_of_network_isolation_is_printed_and_an_error_under_ci() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let cache = cache_dir();
    let check = |run_id: &str, ci: bool| {
        let mut c = command(repo.path());
        c.args([
            "check",
            "--run",
            run_id,
            "--base",
            &repo.base,
            "--cache-dir",
            cache.to_str().unwrap(),
        ]);
        if ci {
            c.env("CI", "true");
        }
        without_network_isolation(c)
    };
    let out = check("r", true);
    assert_eq!(out.code, 70, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("cannot leave the network")
            && out.stderr.contains("--network-isolation preferred"),
        "{}",
        out.stderr
    );
    assert!(!repo.path().join(".agent-ledger/verdicts/r.json").exists());
    let out = check("r", false);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("warning: this replay is not isolated"),
        "{}",
        out.stderr
    );
    assert!(
        repo.properties("r")["network"]
            .as_str()
            .unwrap()
            .starts_with("not isolated")
    );
}
