//! Hermetic git: no configuration but the repository's, no attributes from
//! the tree, no hooks or fsmonitor. Each test first shows its marker appear
//! when plain git runs with the same setup, so none can pass vacuously.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A patch that adds `src/.gitattributes` selecting the `evil` filter, diff
/// and merge drivers for every path below it, then a file there. The file in
/// `tests/` between them makes git drop its cached attributes of `src/`, so
/// plain `git apply` reads the new `.gitattributes` before it writes
/// `src/new.py`.
const ATTRIBUTES_PATCH: &str = "\
diff --git a/src/.gitattributes b/src/.gitattributes
new file mode 100644
--- /dev/null
+++ b/src/.gitattributes
@@ -0,0 +1 @@
+* filter=evil diff=evil merge=evil
diff --git a/tests/new.txt b/tests/new.txt
new file mode 100644
--- /dev/null
+++ b/tests/new.txt
@@ -0,0 +1 @@
+x
diff --git a/src/new.py b/src/new.py
new file mode 100644
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1 @@
+x = 1
";

/// A scratch area: a `$HOME`, and scripts that record each call in a marker
/// file before passing their input through.
struct Traps {
    dir: tempfile::TempDir,
}

impl Traps {
    fn new() -> Traps {
        let traps = Traps { dir: tempdir() };
        std::fs::create_dir_all(traps.home()).unwrap();
        std::fs::create_dir_all(traps.hooks()).unwrap();
        traps.script(&traps.dir.path().join("evil.sh"));
        traps.script(&traps.hooks().join("post-index-change"));
        traps
    }

    fn script(&self, path: &Path) {
        write(
            path,
            format!(
                "#!/bin/sh\necho \"$0 $*\" >> '{}'\nexec cat \"$@\"\n",
                self.marker().display()
            ),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn hooks(&self) -> PathBuf {
        self.dir.path().join("hooks")
    }

    fn evil(&self) -> String {
        self.dir.path().join("evil.sh").display().to_string()
    }

    fn marker(&self) -> PathBuf {
        self.dir.path().join("marker")
    }

    /// The `evil` drivers, as `git config` lines.
    fn drivers(&self) -> Vec<(String, String)> {
        let evil = self.evil();
        [
            ("filter.evil.smudge", evil.clone()),
            ("filter.evil.clean", evil.clone()),
            ("diff.evil.textconv", evil.clone()),
            ("diff.evil.command", evil.clone()),
            ("merge.evil.driver", format!("{evil} %O %A %B")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Writes `$HOME/.gitconfig` from `key = value` pairs.
    fn global_config(&self, pairs: &[(String, String)]) {
        let mut text = String::new();
        for (key, value) in pairs {
            let (section, rest) = key.split_once('.').unwrap();
            let (sub, name) = rest
                .rsplit_once('.')
                .map_or((None, rest), |(s, n)| (Some(s), n));
            match sub {
                Some(sub) => text.push_str(&format!("[{section} \"{sub}\"]\n")),
                None => text.push_str(&format!("[{section}]\n")),
            }
            text.push_str(&format!("\t{name} = {value}\n"));
        }
        write(&self.home().join(".gitconfig"), text);
    }

    /// Runs plain git in `dir` with this `$HOME` and nothing else hermetic;
    /// returns whether the marker appeared (and removes it).
    fn plain_git_trips(&self, dir: &Path, args: &[&str]) -> bool {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("HOME", self.home())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_CONFIG_NOSYSTEM")
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.tripped()
    }

    /// Whether the marker exists; removes it.
    fn tripped(&self) -> bool {
        std::fs::remove_file(self.marker()).is_ok()
    }

    /// `agent-ledger ARGS` in `dir` with this `$HOME`.
    fn agent_ledger(&self, dir: &Path, args: &[&str]) -> Output {
        let out = command(dir)
            .args(args)
            .env("HOME", self.home())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_CONFIG_NOSYSTEM")
            .output()
            .expect("run agent-ledger");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A copy of the repository (its `.git` included) for plain git to trip in.
fn scratch_copy(repo: &DemoRepo) -> tempfile::TempDir {
    let copy = tempdir();
    copy_dir(repo.path(), copy.path());
    copy
}

/// `check` of run `r`, JSON, with the shared cache; `extra` appended.
fn check(traps: &Traps, repo: &DemoRepo, extra: &[&str]) -> Output {
    let cache = cache_dir();
    let mut args = vec![
        "check",
        "--run",
        "r",
        "--base",
        &repo.base,
        "--cache-dir",
        cache.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    traps.agent_ledger(repo.path(), &args)
}

/// Captures `ATTRIBUTES_PATCH` as run `r`, checks it with a test command
/// (which applies the patch before its bounds are judged, so git does see
/// the `.gitattributes`), and asserts the marker stays away.
fn attributes_patch_is_inert(traps: &Traps, repo: &DemoRepo) {
    let patch = traps.dir.path().join("attributes.diff");
    write(&patch, ATTRIBUTES_PATCH);
    let copy = scratch_copy(repo);
    assert!(
        traps.plain_git_trips(copy.path(), &["apply", "--index", patch.to_str().unwrap()]),
        "plain git apply did not run the driver: the test would prove nothing"
    );

    traps
        .agent_ledger(
            repo.path(),
            &["capture", "--run", "r", "--body", patch.to_str().unwrap()],
        )
        .assert_code(0);
    let out = check(traps, repo, &["--test-cmd", "true", "--allow-network"]);
    assert!(
        !traps.tripped(),
        "a driver selected by the patch's .gitattributes ran\n{}\n{}",
        out.stdout,
        out.stderr
    );
    out.assert_code(4);
    let applies = outcome(&repo.properties("r"), "patch_applies").clone();
    assert_eq!(applies["outcome"], "miss", "{applies:#}");
    assert_eq!(
        applies["findings"][0]["path"], "src/.gitattributes",
        "{applies:#}"
    );
}

#[test]
fn a_patch_gitattributes_cannot_select_a_driver_from_the_repository_config() {
    let traps = Traps::new();
    let repo = DemoRepo::new();
    for (key, value) in traps.drivers() {
        git(repo.path(), &["config", &key, &value]);
    }
    attributes_patch_is_inert(&traps, &repo);
}

#[test]
fn a_patch_gitattributes_cannot_select_a_driver_from_the_global_config() {
    let traps = Traps::new();
    traps.global_config(&traps.drivers());
    let repo = DemoRepo::new();
    attributes_patch_is_inert(&traps, &repo);
}

#[test]
fn base_gitattributes_do_not_select_a_driver_from_the_global_config() {
    let traps = Traps::new();
    // Committed before `$HOME/.gitconfig` defines the drivers.
    let repo = DemoRepo::with(|root| {
        write(
            &root.join(".gitattributes"),
            "* filter=evil diff=evil merge=evil\n",
        )
    });
    traps.global_config(&traps.drivers());
    let copy = scratch_copy(&repo);
    std::fs::remove_file(copy.path().join("src/retry.py")).unwrap();
    assert!(
        traps.plain_git_trips(copy.path(), &["checkout-index", "-f", "src/retry.py"]),
        "plain git checkout-index did not run the smudge filter"
    );

    repo.capture("r", "good");
    let out = check(&traps, &repo, &[]);
    assert!(
        !traps.tripped(),
        "a global filter ran\n{}\n{}",
        out.stdout,
        out.stderr
    );
    out.assert_code(0);
}

#[test]
fn global_hooks_and_fsmonitor_do_not_run() {
    let traps = Traps::new();
    traps.global_config(&[
        ("core.hooksPath".into(), traps.hooks().display().to_string()),
        ("core.fsmonitor".into(), traps.evil()),
    ]);
    let repo = DemoRepo::new();
    let copy = scratch_copy(&repo);
    // Reading the index runs the fsmonitor; writing it, `post-index-change`.
    assert!(
        traps.plain_git_trips(copy.path(), &["read-tree", "HEAD"]),
        "plain git read-tree ran neither the hook nor the fsmonitor"
    );
    traps.global_config(&[("core.hooksPath".into(), traps.hooks().display().to_string())]);
    assert!(
        traps.plain_git_trips(copy.path(), &["read-tree", "HEAD"]),
        "plain git read-tree did not run the post-index-change hook"
    );
    traps.global_config(&[("core.fsmonitor".into(), traps.evil())]);
    assert!(
        traps.plain_git_trips(copy.path(), &["diff-files"]),
        "plain git diff-files did not run the fsmonitor"
    );
    traps.global_config(&[
        ("core.hooksPath".into(), traps.hooks().display().to_string()),
        ("core.fsmonitor".into(), traps.evil()),
    ]);

    repo.capture("r", "good");
    let out = check(&traps, &repo, &[]);
    assert!(
        !traps.tripped(),
        "a global hook or fsmonitor ran\n{}\n{}",
        out.stdout,
        out.stderr
    );
    out.assert_code(0);
}

#[test]
fn a_patch_touching_gitmodules_or_gitattributes_is_a_patch_applies_miss() {
    for (name, path) in [
        ("gitmodules", ".gitmodules"),
        ("gitattributes", ".gitattributes"),
    ] {
        let repo = DemoRepo::new();
        let scratch = tempdir();
        let patch = scratch.path().join(format!("{name}.diff"));
        write(
            &patch,
            format!(
                "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,2 @@\n+[submodule \"x\"]\n+\turl = https://example.com/x.git\n"
            ),
        );
        run(
            repo.path(),
            &["capture", "--run", "r", "--body", patch.to_str().unwrap()],
        )
        .assert_code(0);
        let out = repo.check("r", &[]);
        out.assert_code(4);
        let applies = outcome(&repo.properties("r"), "patch_applies").clone();
        assert_eq!(applies["outcome"], "miss", "{path}: {applies:#}");
        assert_eq!(applies["findings"][0]["path"], path, "{applies:#}");
        assert!(
            applies["findings"][0]["message"]
                .as_str()
                .unwrap()
                .contains("protected"),
            "{applies:#}"
        );
    }
}

/// Reconcile reads the agent's working tree with `git status`: a global
/// fsmonitor, hook or excludes file must not run or hide anything there.
#[test]
fn reconcile_ignores_the_global_config() {
    let traps = Traps::new();
    let excludes = traps.dir.path().join("excludes");
    write(&excludes, "ghost.txt\n");
    traps.global_config(&[
        ("core.hooksPath".into(), traps.hooks().display().to_string()),
        ("core.fsmonitor".into(), traps.evil()),
        ("core.excludesFile".into(), excludes.display().to_string()),
    ]);
    let repo = tempdir();
    let root = repo.path();
    git(root, &["init", "-q"]);
    write(&root.join("a.txt"), "a\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    write(&root.join("ghost.txt"), "untraced\n");
    assert!(
        traps.plain_git_trips(root, &["status", "--porcelain"]),
        "plain git status did not run the fsmonitor"
    );

    write(&root.join("trace.jsonl"), "");
    let out = traps.agent_ledger(root, &["reconcile", "--trace", "trace.jsonl"]);
    assert!(
        !traps.tripped(),
        "a global fsmonitor or hook ran\n{}\n{}",
        out.stdout,
        out.stderr
    );
    out.assert_code(1);
    assert!(out.stdout.contains("ghost.txt"), "{}", out.stdout);
}
