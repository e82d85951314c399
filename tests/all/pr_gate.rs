//! Gating a pull request: `capture --git BASE..HEAD` takes the branch's
//! patch from its merge base, and `check` judges it on that merge base
//! with no `--base`; a branch that deletes a test fails the gate.

use crate::support::*;
use std::path::Path;

/// A Python repository with a configuration committed on `main`, a branch
/// `agent` forked from it, and one more commit on `main` after the fork
/// (so `main` is not the merge base).
fn forked_repo() -> tempfile::TempDir {
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
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    run(root, &["init"]).assert_code(0);
    git(root, &["add", "agent-ledger.toml"]);
    git(root, &["commit", "-q", "-m", "agent-ledger"]);
    git(root, &["branch", "agent"]);
    write(&root.join("README.md"), "later work on main\n");
    git(root, &["add", "README.md"]);
    git(root, &["commit", "-q", "-m", "main moves on"]);
    dir
}

fn on_branch(root: &Path, message: &str, edit: impl FnOnce(&Path)) {
    git(root, &["checkout", "-q", "agent"]);
    edit(root);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
}

fn gate(root: &Path, run_id: &str) -> Output {
    let cache = cache_dir();
    run(root, &["capture", "--run", run_id, "--git", "main..agent"]).assert_code(0);
    run(
        root,
        &[
            "check",
            "--run",
            run_id,
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    )
}

#[test]
fn a_good_branch_passes_the_gate_on_its_merge_base() {
    let repo = forked_repo();
    let root = repo.path();
    on_branch(root, "docstring", |r| {
        write(
            &r.join("src/calc.py"),
            "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n",
        );
    });
    // A CI checkout's origin often carries a token: the receipt and the
    // report name the repository without it.
    git(
        root,
        &[
            "remote",
            "add",
            "origin",
            "https://x-access-token:ghs_s3cret@github.com/acme/calc.git",
        ],
    );
    let out = gate(root, "pr");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let bytes = std::fs::read(root.join(".agent-ledger/transcripts/pr.json")).unwrap();
    let receipt: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(receipt["repository"], "https://github.com/acme/calc");
    assert!(!String::from_utf8_lossy(&bytes).contains("s3cret"));
    let out_dir = tempdir();
    let html = out_dir.path().join("report.html");
    run(root, &["report", "--html", html.to_str().unwrap()]).assert_code(0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<th>repository</th><td>https://github.com/acme/calc</td>"),
        "{page}"
    );
    assert!(!page.contains("s3cret"));
    let fork = git(root, &["merge-base", "main", "agent"]);
    assert_eq!(receipt["git"]["merge_base"], fork.as_str());
    assert_eq!(
        receipt["git"]["head"],
        git(root, &["rev-parse", "agent"]).as_str()
    );
    assert_eq!(
        receipt["git"]["base"],
        git(root, &["rev-parse", "main"]).as_str()
    );
    assert_eq!(receipt["git"]["range"], "main..agent");
    // The patch is the branch's change only: main's later commit is not
    // in it, reversed or otherwise.
    let patch = std::fs::read_to_string(root.join(".agent-ledger/transcripts/pr.patch")).unwrap();
    assert!(
        patch.contains("src/calc.py") && !patch.contains("README.md"),
        "{patch}"
    );
    // The new ledger ignores itself: the branch's tree stays clean.
    assert_eq!(git(root, &["status", "--porcelain", "--ignored=no"]), "");
    assert!(root.join(".agent-ledger/.gitignore").exists());
}

/// The branch `agent` with a docstring added: a change to pass.
fn good_branch(root: &Path) {
    on_branch(root, "good", |r| {
        write(
            &r.join("src/calc.py"),
            "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n",
        );
    });
}

/// A second branch `evil` from the same fork, checked out, that deletes
/// the test.
fn evil_branch(root: &Path) {
    git(root, &["checkout", "-q", "-b", "evil", "main~1"]);
    std::fs::remove_file(root.join("tests/test_calc.py")).unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "evil"]);
}

/// The flow as a newcomer runs it on two branches in turn: without
/// `--run`, each branch's capture is a run of its own, named after its
/// head, and `check` without `--run` finds the one for the checkout.
#[test]
fn runs_named_after_the_head_never_collide_between_branches() {
    let repo = forked_repo();
    let root = repo.path();
    let cache = cache_dir();
    let check = |root: &Path| run(root, &["check", "--cache-dir", cache.to_str().unwrap()]);
    good_branch(root);
    let good = git(root, &["rev-parse", "agent"]);
    run(root, &["capture", "--git", "main..HEAD"]).assert_code(0);
    assert!(
        root.join(format!(
            ".agent-ledger/transcripts/git-{}.json",
            &good[..12]
        ))
        .exists()
    );
    let out = check(root);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // A second branch from the same fork, which deletes a test.
    evil_branch(root);
    run(root, &["capture", "--git", "main..HEAD"]).assert_code(0);
    let out = check(root);
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
}

/// With a fixed run id the second branch's capture fails (the record
/// exists); `check` must not then judge the first branch's patch.
#[test]
fn check_refuses_a_receipt_of_another_head() {
    let repo = forked_repo();
    let root = repo.path();
    good_branch(root);
    let first = git(root, &["rev-parse", "agent"]);
    run(root, &["capture", "--run", "pr", "--git", "main..HEAD"]).assert_code(0);
    evil_branch(root);
    let second = git(root, &["rev-parse", "HEAD"]);
    run(root, &["capture", "--run", "pr", "--git", "main..HEAD"]).assert_code(73);
    let out = run(root, &["check", "--run", "pr"]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&first) && out.stderr.contains(&second),
        "{}",
        out.stderr
    );
}

#[test]
fn a_branch_that_deletes_a_test_fails_the_gate() {
    let repo = forked_repo();
    let root = repo.path();
    on_branch(root, "remove the failing test", |r| {
        std::fs::remove_file(r.join("tests/test_calc.py")).unwrap();
    });
    let out = gate(root, "pr");
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("reject"), "{}", out.stdout);
}

#[test]
fn a_range_patch_is_judged_on_its_merge_base_and_nowhere_else() {
    let repo = forked_repo();
    let root = repo.path();
    on_branch(root, "docstring", |r| {
        write(
            &r.join("src/calc.py"),
            "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n",
        );
    });
    run(root, &["capture", "--run", "pr", "--git", "main...agent"]).assert_code(0);
    // `main` is a later commit than the merge base: refused, nothing judged.
    let out = run(root, &["check", "--run", "pr", "--base", "main"]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("merge base") && out.stderr.contains("--base"),
        "{}",
        out.stderr
    );
    assert!(!root.join(".agent-ledger/verdicts/pr.json").exists());
    // A run captured from a body records no base: `--base` is required.
    let body = root.join("tests/fixtures/cases.json");
    let scratch = tempdir();
    let diff = scratch.path().join("change.diff");
    write(
        &diff,
        "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n+    pass\n     return a + b\n",
    );
    assert!(body.exists());
    run(
        root,
        &["capture", "--run", "b", "--body", diff.to_str().unwrap()],
    )
    .assert_code(0);
    let out = run(root, &["check", "--run", "b"]);
    assert_eq!(out.code, 64, "{}", out.stderr);
    assert!(out.stderr.contains("--base REV"), "{}", out.stderr);
}

#[test]
fn capture_git_refuses_what_is_not_a_range_of_commits() {
    let repo = forked_repo();
    let root = repo.path();
    for (range, needle) in [
        ("main", "not a range"),
        ("..agent", "both sides"),
        ("main..", "both sides"),
        ("main..nosuch", "nosuch"),
        ("a..b..c", "both sides"),
    ] {
        let out = run(root, &["capture", "--run", "r", "--git", range]);
        assert_ne!(out.code, 0, "{range}");
        assert!(out.stderr.contains(needle), "{range}: {}", out.stderr);
        assert!(
            !root.join(".agent-ledger/transcripts/r.json").exists(),
            "{range}"
        );
    }
    // Unrelated histories have no merge base.
    git(root, &["checkout", "-q", "--orphan", "lonely"]);
    git(root, &["commit", "-q", "-m", "alone", "--allow-empty"]);
    let out = run(root, &["capture", "--run", "r", "--git", "main..lonely"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("no merge base"), "{}", out.stderr);
}

/// `${{ ... }}` expressions of a workflow or action, resolved from `known`
/// (a test fails on any expression it does not know, rather than run a
/// script with it left in).
fn expand(text: &str, known: &std::collections::BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("}}")
            .expect("an unterminated expression")
            + start;
        let expr = rest[start + 3..end].trim();
        let value = known
            .get(expr)
            .unwrap_or_else(|| panic!("the test does not know `{expr}`"));
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

fn yaml(path: &Path) -> yaml_rust2::Yaml {
    let text = std::fs::read_to_string(path).unwrap();
    yaml_rust2::YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .remove(0)
}

/// What a runner would print for one step: its exit code.
fn bash_step(root: &Path, script: &str, env: &[(String, String)]) -> i32 {
    let status = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(root)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .status()
        .unwrap();
    status.code().unwrap_or(-1)
}

fn bin_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_BIN_EXE_agent-ledger"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The workflow `init --ci github` writes, run step by step as a runner
/// would run this repository's action (`action.yml`) in it: every shell
/// step but the download of a release (the binary under test stands in
/// for it). Returns the exit code of the action's last step, the gate,
/// and what the judging step put in `$GITHUB_OUTPUT`.
fn run_github_gate(root: &Path) -> (i32, String, tempfile::TempDir) {
    let workflow = yaml(&root.join(".github/workflows/agent-ledger.yml"));
    let steps = workflow["jobs"]["check"]["steps"].as_vec().unwrap();
    let ours = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("agent-ledger/agent-ledger@"))
        })
        .expect("the workflow uses the action");
    let action = yaml(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../action.yml"));
    let runner = tempdir();
    let files = |name: &str| {
        let p = runner.path().join(name);
        write(&p, "");
        p.to_str().unwrap().to_string()
    };
    let output = files("output");
    let summary = files("summary");
    let mut known = std::collections::BTreeMap::new();
    known.insert(
        "github.event.pull_request.base.sha".to_string(),
        git(root, &["rev-parse", "main"]),
    );
    for (name, input) in action["inputs"].as_hash().unwrap() {
        let name = name.as_str().unwrap();
        let default = input["default"].as_str().unwrap_or_default().to_string();
        let given = ours["with"][name].as_str().map(str::to_string);
        let value = expand(&given.unwrap_or(default), &known);
        known.insert(format!("inputs.{name}"), value);
    }
    known.insert(
        "steps.install.outputs.bin".to_string(),
        env!("CARGO_BIN_EXE_agent-ledger").to_string(),
    );
    let cache = cache_dir();
    let mut last = -1;
    for step in action["runs"]["steps"].as_vec().unwrap() {
        let Some(script) = step["run"].as_str() else {
            continue; // the SARIF upload: GitHub's own action
        };
        if step["id"].as_str() == Some("install") {
            continue; // downloads a release: the binary under test is it
        }
        assert_eq!(step["shell"].as_str(), Some("bash"));
        let mut env = vec![
            ("RUNNER_OS".to_string(), "Linux".to_string()),
            (
                "RUNNER_TEMP".to_string(),
                runner.path().display().to_string(),
            ),
            ("GITHUB_OUTPUT".to_string(), output.clone()),
            ("GITHUB_STEP_SUMMARY".to_string(), summary.clone()),
            (
                "PATH".to_string(),
                format!("{}:{}", bin_dir().display(), std::env::var("PATH").unwrap()),
            ),
            (
                "AGENT_LEDGER_CACHE_DIR".to_string(),
                cache.display().to_string(),
            ),
        ];
        if let Some(vars) = step["env"].as_hash() {
            for (k, v) in vars {
                env.push((
                    k.as_str().unwrap().to_string(),
                    expand(v.as_str().unwrap(), &known),
                ));
            }
        }
        last = bash_step(root, script, &env);
        let name = step["name"].as_str().unwrap_or_default();
        if name != "Gate on the verdicts" {
            assert_eq!(last, 0, "step `{name}` failed");
        }
    }
    let output = std::fs::read_to_string(&output).unwrap();
    (last, output, runner)
}

/// The job `init --ci gitlab` writes, its script run as one shell session
/// in a merge request pipeline; its exit code.
fn run_gitlab_gate(root: &Path) -> i32 {
    let job = yaml(&root.join("ci/agent-ledger.gitlab-ci.yml"));
    let script: Vec<&str> = job["agent-ledger"]["script"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let env = vec![
        (
            "CI_MERGE_REQUEST_DIFF_BASE_SHA".to_string(),
            git(root, &["rev-parse", "main"]),
        ),
        ("RUN_ID".to_string(), "mr-1".to_string()),
        ("TEST_CMD".to_string(), String::new()),
        (
            "PATH".to_string(),
            format!("{}:{}", bin_dir().display(), std::env::var("PATH").unwrap()),
        ),
        (
            "AGENT_LEDGER_CACHE_DIR".to_string(),
            cache_dir().display().to_string(),
        ),
    ];
    bash_step(root, &script.join("\n"), &env)
}

fn initialised(ci: &str) -> tempfile::TempDir {
    let repo = forked_repo();
    let root = repo.path();
    // The CI file is committed on main before the branch work, as a user
    // would after `init --ci`; the configuration already is.
    std::fs::remove_file(root.join("agent-ledger.toml")).unwrap();
    run(root, &["init", "--ci", ci]).assert_code(0);
    git(root, &["checkout", "-q", "--", "agent-ledger.toml"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "ci"]);
    // The branch forks after it, and main moves on again.
    git(root, &["branch", "-f", "agent", "main"]);
    write(&root.join("CHANGES.md"), "more work on main\n");
    git(root, &["add", "CHANGES.md"]);
    git(root, &["commit", "-q", "-m", "main moves on again"]);
    repo
}

#[test]
fn the_github_gate_init_writes_passes_a_good_branch_and_fails_one_that_deletes_a_test() {
    let good = initialised("github");
    on_branch(good.path(), "docstring", |r| {
        write(
            &r.join("src/calc.py"),
            "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n",
        );
    });
    let (code, output, _runner) = run_github_gate(good.path());
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("exit-code=0"), "{output}");
    assert!(good.path().join("agent-ledger.sarif").exists());
    // The receipts are outside the checkout, where nothing the pull
    // request commits can be.
    let ledger = output
        .lines()
        .find_map(|l| l.strip_prefix("ledger="))
        .expect("the action names its ledger");
    assert!(
        Path::new(ledger).join("transcripts/pr.json").exists()
            && !ledger.starts_with(good.path().to_str().unwrap()),
        "{ledger}"
    );
    assert!(!good.path().join(".agent-ledger").exists());

    let bad = initialised("github");
    on_branch(bad.path(), "remove the test", |r| {
        std::fs::remove_file(r.join("tests/test_calc.py")).unwrap();
    });
    let (code, output, _runner) = run_github_gate(bad.path());
    assert_eq!(code, 4, "{output}");
    assert!(output.contains("exit-code=4"), "{output}");
}

#[test]
fn the_gitlab_gate_init_writes_passes_a_good_branch_and_fails_one_that_deletes_a_test() {
    let good = initialised("gitlab");
    on_branch(good.path(), "docstring", |r| {
        write(
            &r.join("src/calc.py"),
            "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n",
        );
    });
    assert_eq!(run_gitlab_gate(good.path()), 0);
    let bad = initialised("gitlab");
    on_branch(bad.path(), "remove the test", |r| {
        std::fs::remove_file(r.join("tests/test_calc.py")).unwrap();
    });
    assert_eq!(run_gitlab_gate(bad.path()), 4);
}

/// Criss-cross merges leave two merge bases; git names one by commit
/// dates the branch's author sets, and a diff from it can leave out a test
/// the branch deletes. Refused, nothing captured.
#[test]
fn a_range_with_two_merge_bases_is_refused() {
    let repo = forked_repo();
    let root = repo.path();
    git(root, &["checkout", "-q", "main"]);
    write(
        &root.join("tests/test_new.py"),
        "from src.calc import add\n\ndef test_new():\n    assert add(2, 2) == 4\n",
    );
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "main adds a test"]);
    git(root, &["checkout", "-q", "agent"]);
    write(
        &root.join("src/calc.py"),
        "def add(a, b):\n    return a + b\n# c1\n",
    );
    git(root, &["commit", "-q", "-am", "c1"]);
    git(root, &["checkout", "-q", "main"]);
    git(root, &["merge", "-q", "--no-edit", "agent"]);
    git(root, &["checkout", "-q", "agent"]);
    git(root, &["merge", "-q", "--no-edit", "main~1"]);
    git(root, &["rm", "-q", "tests/test_new.py"]);
    git(root, &["commit", "-q", "-m", "delete the new test"]);
    assert_eq!(
        git(root, &["merge-base", "--all", "main", "agent"])
            .lines()
            .count(),
        2
    );
    let out = run(root, &["capture", "--run", "pr", "--git", "main..agent"]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("2 merge bases"), "{}", out.stderr);
    assert!(!root.join(".agent-ledger/transcripts/pr.json").exists());
}

/// A receipt or patch edited after capture no longer is the diff of its
/// commits: `check` recomputes it and refuses.
#[test]
fn a_range_receipt_edited_after_capture_is_refused() {
    let repo = forked_repo();
    let root = repo.path();
    on_branch(root, "remove the test", |r| {
        std::fs::remove_file(r.join("tests/test_calc.py")).unwrap();
    });
    run(root, &["capture", "--run", "pr", "--git", "main..agent"]).assert_code(0);
    // Swap in a harmless patch, with the receipt's digest and size fixed.
    let harmless = "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n+    \"\"\"Adds.\"\"\"\n     return a + b\n";
    let dir = root.join(".agent-ledger/transcripts");
    std::fs::write(dir.join("pr.patch"), harmless).unwrap();
    let mut receipt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("pr.json")).unwrap()).unwrap();
    receipt["body"]["sha256"] = agent_ledger::digest::sha256_hex(harmless.as_bytes()).into();
    receipt["body"]["bytes"] = harmless.len().into();
    std::fs::write(
        dir.join("pr.json"),
        serde_json::to_vec_pretty(&receipt).unwrap(),
    )
    .unwrap();
    let out = run(root, &["check", "--run", "pr"]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("changed after capture"),
        "{}",
        out.stderr
    );
    assert!(!root.join(".agent-ledger/verdicts/pr.json").exists());
}

/// The branch moves the ledger in its own `agent-ledger.toml` and commits a
/// harmless receipt where the base's configuration puts the ledger: capture
/// still writes where `check` reads (the base's ledger), finds the
/// committed receipt there and refuses, and the gate does not pass.
#[test]
fn a_branch_cannot_move_the_ledger_or_commit_a_receipt_of_its_own() {
    let repo = forked_repo();
    let root = repo.path();
    let forge = tempdir();
    let harmless = forge.path().join("harmless.diff");
    write(
        &harmless,
        "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n+    \"\"\"Adds.\"\"\"\n     return a + b\n",
    );
    let forged = forge.path().join("ledger");
    run(
        root,
        &[
            "--ledger",
            forged.to_str().unwrap(),
            "capture",
            "--run",
            "pr",
            "--body",
            harmless.to_str().unwrap(),
        ],
    )
    .assert_code(0);
    on_branch(root, "evil", |r| {
        std::fs::remove_file(r.join("tests/test_calc.py")).unwrap();
        let toml = std::fs::read_to_string(r.join("agent-ledger.toml")).unwrap();
        assert!(toml.contains("ledger = \".agent-ledger\""), "{toml}");
        write(
            &r.join("agent-ledger.toml"),
            toml.replace("ledger = \".agent-ledger\"", "ledger = \".l2\""),
        );
        for f in ["pr.json", "pr.patch"] {
            std::fs::create_dir_all(r.join(".agent-ledger/transcripts")).unwrap();
            std::fs::copy(
                forged.join("transcripts").join(f),
                r.join(".agent-ledger/transcripts").join(f),
            )
            .unwrap();
        }
        git(r, &["add", "-f", ".agent-ledger"]);
    });
    let out = run(root, &["capture", "--run", "pr", "--git", "main..agent"]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("committed in the checked-out HEAD"),
        "{}",
        out.stderr
    );
    assert!(
        !root.join(".l2").exists(),
        "capture followed the branch's ledger"
    );
    // What the gate would run next, with the base the action passes:
    // refused, since HEAD holds the receipt.
    let fork = git(root, &["merge-base", "main", "agent"]);
    let out = run(root, &["check", "--run", "pr", "--base", &fork]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("committed in the repository's HEAD"),
        "{}",
        out.stderr
    );
}

/// A branch that commits the ledger's path as a symbolic link would have
/// `capture` and `check` write its records outside the checkout (the
/// GitLab template keeps its ledger in the checkout, by `--ledger`).
#[test]
fn a_ledger_committed_as_a_symlink_is_never_written_through() {
    let repo = forked_repo();
    let root = repo.path();
    let elsewhere = tempdir();
    let target = elsewhere.path().join("records");
    std::fs::create_dir(&target).unwrap();
    on_branch(root, "link", |r| {
        std::os::unix::fs::symlink(&target, r.join(".agent-ledger")).unwrap();
    });
    for ledger in [None, Some(".agent-ledger")] {
        let mut args = Vec::new();
        if let Some(l) = ledger {
            args.extend(["--ledger", l]);
        }
        args.extend(["capture", "--run", "pr", "--git", "main..agent"]);
        let out = run(root, &args);
        assert_eq!(out.code, 65, "{ledger:?}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("is reached through this symbolic link"),
            "{}",
            out.stderr
        );
        let mut check = Vec::new();
        if let Some(l) = ledger {
            check.extend(["--ledger", l]);
        }
        check.extend(["check", "--run", "pr"]);
        assert_eq!(run(root, &check).code, 65);
    }
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "records were written through the link"
    );
}

/// The second review: a link above a nested ledger (`ledger =
/// "ci/ledger"`, the branch commits `ci` as a link), and a link inside the
/// ledger (`.agent-ledger/transcripts`), were followed.
#[test]
fn links_above_or_inside_the_ledger_are_never_written_through() {
    for (ledger, link) in [
        ("ci/ledger", "ci"),
        (".agent-ledger", ".agent-ledger/transcripts"),
    ] {
        let repo = forked_repo();
        let root = repo.path();
        let elsewhere = tempdir();
        let target = elsewhere.path().join("records");
        std::fs::create_dir(&target).unwrap();
        on_branch(root, "link", |r| {
            std::fs::create_dir_all(r.join(link).parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&target, r.join(link)).unwrap();
        });
        let out = run(
            root,
            &[
                "--ledger",
                ledger,
                "capture",
                "--run",
                "pr",
                "--git",
                "main..agent",
            ],
        );
        assert_eq!(out.code, 65, "{ledger}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            0,
            "{ledger}: records were written through the link"
        );
    }
}

#[test]
fn a_range_side_that_is_not_one_commit_is_refused() {
    let repo = forked_repo();
    let root = repo.path();
    let out = run(root, &["capture", "--run", "r", "--git", "^main..agent"]);
    assert_eq!(out.code, 66, "{}", out.stderr);
    assert!(
        out.stderr.contains("`^main` is not a commit"),
        "{}",
        out.stderr
    );
}

/// A test under a name that is not UTF-8 (Latin-1 `é`): plugins see paths
/// as text, so no property could read what the patch does to it. A branch
/// that weakens it is rejected, naming why, rather than judged blind.
#[test]
fn a_patch_touching_a_path_that_is_not_utf8_is_rejected() {
    use std::os::unix::ffi::OsStrExt;
    let repo = forked_repo();
    let root = repo.path();
    let name = std::ffi::OsStr::from_bytes(b"tests/test_\xe9.py");
    git(root, &["checkout", "-q", "main"]);
    write(
        &root.join(name),
        "from src.calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "a latin-1 test"]);
    git(root, &["branch", "-f", "agent", "main"]);
    on_branch(root, "weaken it", |r| {
        write(
            &r.join(name),
            "from src.calc import add\n\ndef test_add():\n    pass\n",
        );
    });
    let out = gate(root, "pr");
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("not UTF-8"), "{}", out.stdout);
}

/// Without `--base`, the merge base comes from a receipt in the ledger the
/// working tree's configuration names; when the base's configuration keeps
/// the ledger elsewhere, there are two ledgers and `check` refuses rather
/// than judge one receipt on the other's word.
#[test]
fn a_merge_base_read_from_another_ledger_than_the_bases_is_refused() {
    let repo = forked_repo();
    let root = repo.path();
    on_branch(root, "move the ledger", |r| {
        let toml = std::fs::read_to_string(r.join("agent-ledger.toml")).unwrap();
        write(
            &r.join("agent-ledger.toml"),
            toml.replace("ledger = \".agent-ledger\"", "ledger = \".l2\""),
        );
    });
    run(root, &["capture", "--run", "pr", "--git", "main..agent"]).assert_code(0);
    assert!(root.join(".agent-ledger/transcripts/pr.json").exists());
    copy_dir(&root.join(".agent-ledger"), &root.join(".l2"));
    let out = run(root, &["check", "--run", "pr"]);
    assert_eq!(out.code, 65, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("pass `--base REV`"), "{}", out.stderr);
}
