//! Helpers: run the binary, find fixtures, make temp trees.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod components;
pub use components::component;
pub mod wasm_names;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

pub fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "unexpected exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-ledger"));
    cmd.current_dir(dir)
        // CI sets `CI`, which makes a lapse of network isolation an
        // error; the tests that want it say so.
        .env_remove("CI")
        .env("AGENT_LEDGER_RUNS_DIR", runs_dir())
        // The tests run as root on CI machines; `trace exec` refuses to run
        // an agent as host root without this (its own test leaves it out).
        .env("AGENT_LEDGER_ALLOW_ROOT_AGENT", "1");
    cmd
}

/// Whether the tests run as uid 0 of the host (root in the initial user
/// namespace): what `check` and `trace exec` treat differently as root.
pub fn host_root() -> bool {
    let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap();
    let identity = uid_map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"];
    identity
        && std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// The run registry of the running test: its own, so that a run one test
/// begins does not refuse another test's unauthenticated adapter calls.
/// Tests run on threads named after them.
pub fn runs_dir() -> PathBuf {
    let name = std::thread::current()
        .name()
        .unwrap_or("main")
        .replace("::", "-");
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("runs")
        .join(format!("{name}-{}", std::process::id()))
}

pub fn run(dir: &Path, args: &[&str]) -> Output {
    run_with_stdin(dir, args, None)
}

pub fn run_with_stdin(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    run_command(command(dir), args, stdin)
}

/// Runs `cmd` (as [`command`] made it, with any environment added) with
/// `args`, feeding it `stdin`.
pub fn run_command(mut cmd: Command, args: &[&str], stdin: Option<&[u8]>) -> Output {
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn agent-ledger");
    if let Some(bytes) = stdin {
        use std::io::Write;
        // A command that refuses before reading stdin closes the pipe early.
        let _ = child.stdin.take().unwrap().write_all(bytes);
    }
    let out = child.wait_with_output().expect("wait for agent-ledger");
    let out = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    check_json_output(args, &out);
    out
}

/// Every `--format json` document any test sees is held to its command's
/// checked-in schema (`schemas/`): the typed outputs are what they say.
fn check_json_output(args: &[&str], out: &Output) {
    let json =
        args.windows(2).any(|w| w == ["--format", "json"]) || args.contains(&"--format=json");
    if !json || out.stdout.trim().is_empty() {
        return;
    }
    // The subcommand's words, global flags and their values left out.
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if matches!(*a, "--ledger" | "--network-isolation") {
            it.next();
        } else if a.starts_with('-') {
            break;
        } else {
            words.push(*a);
            if words.len() == 2 {
                break;
            }
        }
    }
    let value: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: --format json printed no JSON document ({e}):\n{}",
            out.stdout
        )
    });
    // A failure prints the error document, unless the command's own
    // document carries it (`batch` with a bad line, a refused plugin).
    let failed = out.code >= 64 && value.get("error").is_some_and(|e| e.is_object());
    let stem = if failed {
        "error"
    } else {
        match words.as_slice() {
            ["capture", ..] => "transcript",
            ["classify", ..] => "verdict",
            ["replay", ..] if out.code == 2 => "output-replay-incomplete",
            ["replay", ..] => "properties",
            ["check", ..] => "output-check",
            ["lock", ..] => "output-lock",
            ["pack", ..] => "archive-manifest",
            ["report", ..] => "report-summary",
            ["batch", ..] => "output-batch",
            ["init", ..] => "output-init",
            ["merge", ..] => "output-merge",
            ["verify", ..] => "output-verify",
            ["sign", ..] => "output-sign",
            ["keygen", ..] => "output-keygen",
            ["reconcile", ..] => "output-reconcile",
            ["flake", "observe"] => "output-flake-observe",
            ["flake", _] => "output-flake-list",
            ["plugin", "new"] => "output-plugin-new",
            ["plugin", "precompile"] => "output-plugin-precompile",
            ["plugin", "inspect"] => "output-plugin-inspect",
            ["plugin", "test"] => "output-plugin-test",
            ["swebench", "import"] => "output-swebench-import",
            ["trace", "begin"] => "output-trace-begin",
            ["trace", "exec"] => "output-trace-exec",
            ["trace", "write" | "delete"] => "output-trace-lines",
            ["trace", "list"] => "output-trace-list",
            ["trace", "abort"] => "output-trace-abort",
            // `trace end` prints the patch on stdout.
            _ => return,
        }
    };
    crate::schemas::assert_matches(stem, &value);
}

/// agent-ledger with a hard limit of 1024 open descriptors (`ulimit -n
/// 1024`, a usual default), which its own raise cannot pass.
pub fn agent_ledger_with_1024_descriptors() -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(r#"ulimit -n 1024 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_agent-ledger"));
    c
}

/// `command` (program, arguments, directory, environment) run as the last
/// arguments of `outer`: `outer` gets them and `command`'s directory and
/// environment.
pub fn wrapped(mut outer: Command, command: &Command) -> Command {
    outer
        .arg(command.get_program())
        .args(command.get_args())
        .current_dir(command.get_current_dir().unwrap());
    for (k, v) in command.get_envs() {
        match v {
            Some(v) => outer.env(k, v),
            None => outer.env_remove(k),
        };
    }
    outer
}

/// `command` run as the arguments of `sh -c SCRIPT sh …` inside `unshare
/// --user --map-root-user`: SCRIPT sets the namespace up, then `exec "$@"`.
pub fn in_user_namespace(script: &str, command: &Command) -> Command {
    let mut outer = Command::new("unshare");
    outer.args(["--user", "--map-root-user", "sh", "-c", script, "sh"]);
    wrapped(outer, command)
}

/// `command` run as uid 1000 (gid 1000) in a user namespace of its own:
/// not root, as on a CI runner, with this user's files still its own.
pub fn as_unprivileged(command: &Command) -> Command {
    let mut outer = Command::new("unshare");
    outer.args(["--user", "--map-user=1000", "--map-group=1000"]);
    wrapped(outer, command)
}

/// A temporary directory that is a git repository (empty, no commit):
/// `capture` keeps its ledger only in a repository or under `--ledger`.
/// [`plain_tempdir`] is one that is not.
pub fn tempdir() -> tempfile::TempDir {
    let dir = plain_tempdir();
    git(dir.path(), &["init", "-q"]);
    dir
}

/// A temporary directory outside any repository.
pub fn plain_tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// Captures the shipped complete diff as `run` in `dir/.agent-ledger`.
pub fn capture_complete(dir: &Path, run_id: &str) {
    let body = fixture("capture/complete-multifile.diff");
    run(
        dir,
        &["capture", "--run", run_id, "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
}

/// Lays a small fixture tree under `dir/tests/fixtures`.
pub fn fixture_tree(dir: &Path) {
    write(&dir.join("tests/fixtures/a.json"), "{\"a\": 1}\n");
    write(&dir.join("tests/fixtures/nested/b.txt"), "bee\n");
}

/// Runs git in `dir`, panicking with its stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A shared compiled-component cache, so each component compiles once per
/// test run rather than once per test.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("component-cache")
}

/// A git repository built from `fixtures/repos/demo`, with the example oracle
/// component copied in, committed as the base revision.
pub struct DemoRepo {
    pub dir: tempfile::TempDir,
    pub base: String,
}

impl DemoRepo {
    pub fn new() -> DemoRepo {
        Self::with(|_| {})
    }

    /// Builds the demo repository; `edit` may change the tree before the
    /// base commit.
    pub fn with(edit: impl FnOnce(&Path)) -> DemoRepo {
        let dir = tempdir();
        let root = dir.path();
        copy_dir(&fixture("repos/demo"), root);
        std::fs::copy(
            component("retry_oracle"),
            root.join("oracles/retry_oracle.wasm"),
        )
        .unwrap();
        edit(root);
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "base"]);
        let base = git(root, &["rev-parse", "HEAD"]);
        DemoRepo { dir, base }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Captures `fixtures/patches/NAME.diff` as run `run_id`.
    pub fn capture(&self, run_id: &str, patch: &str) {
        let body = fixture(&format!("patches/{patch}.diff"));
        run(
            self.path(),
            &["capture", "--run", run_id, "--body", body.to_str().unwrap()],
        )
        .assert_code(0);
    }

    /// `check` with the shared cache and JSON output.
    pub fn check(&self, run_id: &str, extra: &[&str]) -> Output {
        let cache = cache_dir();
        let mut args = vec![
            "check",
            "--run",
            run_id,
            "--base",
            &self.base,
            "--cache-dir",
            cache.to_str().unwrap(),
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        run(self.path(), &args)
    }

    /// The stored property record of a run.
    pub fn properties(&self, run_id: &str) -> serde_json::Value {
        let bytes = std::fs::read(
            self.path()
                .join(format!(".agent-ledger/properties/{run_id}.json")),
        )
        .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// A digest of every file in the repository outside the ledger, `.git`
    /// included: what no replay may change.
    pub fn digest(&self) -> String {
        let mut entries = Vec::new();
        walk(self.path(), self.path(), &mut entries);
        entries.sort();
        agent_ledger::digest::sha256_hex(entries.join("\n").as_bytes())
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == ".agent-ledger" {
            continue;
        }
        let ft = entry.file_type().unwrap();
        if ft.is_dir() {
            walk(root, &path, out);
        } else if ft.is_symlink() {
            out.push(format!(
                "{rel} -> {}",
                std::fs::read_link(&path).unwrap().display()
            ));
        } else {
            out.push(format!(
                "{rel} {}",
                agent_ledger::digest::sha256_hex(&std::fs::read(&path).unwrap())
            ));
        }
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The outcome of one property in a property record.
pub fn outcome<'a>(record: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    record["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no property `{name}` in {record:#}"))
}

/// The patch `edit` makes on top of the base, as `git diff --binary` writes
/// it (renames detected), the ledger left out; the repository is back at
/// the base afterwards.
pub fn patch_of(repo: &DemoRepo, edit: impl FnOnce(&Path)) -> Vec<u8> {
    let root = repo.path();
    edit(root);
    git(root, &["add", "-A", "--", ".", ":!.agent-ledger"]);
    let out = Command::new("git")
        .args(["diff", "--cached", "--binary", "-M", &repo.base])
        .current_dir(root)
        .output()
        .expect("run git diff");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty(), "the edit changed nothing");
    git(root, &["reset", "-q", "--hard", &repo.base]);
    out.stdout
}

/// Captures `patch` as run `r` and checks it: the trial must be `reject`.
/// Returns the property record.
pub fn rejected(repo: &DemoRepo, patch: &[u8]) -> serde_json::Value {
    run_with_stdin(
        repo.path(),
        &["capture", "--run", "r", "--body", "-"],
        Some(patch),
    )
    .assert_code(0);
    let before = repo.digest();
    let out = repo.check("r", &[]);
    out.assert_code(4);
    assert_eq!(out.json()["verdict"]["verdict"], "reject");
    assert_eq!(repo.digest(), before, "the replay changed the repository");
    repo.properties("r")
}

/// Asserts `property` missed with a finding on `path` whose message holds
/// `needle`.
#[track_caller]
pub fn assert_miss(record: &serde_json::Value, property: &str, path: &str, needle: &str) {
    let p = outcome(record, property);
    assert_eq!(p["outcome"], "miss", "{property}: {p:#}");
    assert!(
        p["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == path && f["message"].as_str().unwrap().contains(needle)),
        "{property}: no finding on `{path}` with `{needle}`: {p:#}"
    );
}
