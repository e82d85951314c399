//! Agent runs the gate can trust: `trace begin` (a clean workspace and a
//! per-run key), every line chained and MACed, `trace exec` in the sandbox,
//! `trace end`, and every way a hostile agent with a raw shell would try to
//! make `reconcile` or `span_bijection` pass over an untraced change.

use crate::support::*;
use sha2::Digest;
use std::path::{Path, PathBuf};

/// A begun run: the source repository, a state directory holding the trace
/// and its key, and the workspace.
struct Run {
    repo: DemoRepo,
    _scratch: tempfile::TempDir,
    trace: PathBuf,
    workspace: PathBuf,
}

impl Run {
    fn begin(agent: &str) -> Run {
        Self::begin_in(DemoRepo::new(), agent)
    }

    fn begin_in(repo: DemoRepo, agent: &str) -> Run {
        let scratch = tempdir();
        let trace = scratch.path().join("state/trace.jsonl");
        let workspace = scratch.path().join("ws");
        let out = run(
            repo.path(),
            &[
                "trace",
                "begin",
                "--agent",
                agent,
                "--trace",
                trace.to_str().unwrap(),
                "--workspace",
                workspace.to_str().unwrap(),
            ],
        );
        out.assert_code(0);
        Run {
            repo,
            _scratch: scratch,
            trace,
            workspace,
        }
    }

    fn key_file(&self) -> PathBuf {
        PathBuf::from(format!("{}.key", self.trace.display()))
    }

    /// agent-ledger in the workspace, with the trace in the environment.
    fn al(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = command(&self.workspace);
        cmd.env("AGENT_LEDGER_TRACE", &self.trace);
        run_command(cmd, args, stdin)
    }

    fn write(&self, path: &str, bytes: &[u8]) -> Output {
        self.al(&["trace", "write", path], Some(bytes))
    }

    fn reconcile(&self, extra: &[&str]) -> Output {
        let mut args = vec!["reconcile", "--repo", self.workspace.to_str().unwrap()];
        args.extend_from_slice(extra);
        self.al(&args, None)
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.trace)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn set_lines(&self, lines: &[String]) {
        std::fs::write(&self.trace, lines.join("\n") + "\n").unwrap();
    }

    /// A change made the way a raw shell makes it: no adapter.
    fn shell_write(&self, path: &str, bytes: &str) {
        write(&self.workspace.join(path), bytes);
    }
}

/// Writes the index of the repository at `dir` (after `git add -A` when
/// `add`) as a binary diff to `out`, and returns `out`.
fn staged_diff(dir: &Path, out: &Path, add: bool) -> PathBuf {
    if add {
        git(dir, &["add", "-A"]);
    }
    git(
        dir,
        &[
            "diff",
            "--cached",
            "--binary",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    out.to_path_buf()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The hostile agent's line pair: an open and a close span for `path`
/// whose `after` is the sha256 of what the shell wrote there.
fn forged_pair(path: &str, after: &str) -> [String; 2] {
    let open = serde_json::json!({"schema": 1, "span": "f0rged", "event": "open",
        "op": "write", "path": path, "before": null, "after": null,
        "status": "open", "error": null, "ts": "2026-11-30T10:00:00Z"});
    let mut close = open.clone();
    close["event"] = "close".into();
    close["status"] = "closed".into();
    close["after"] = after.into();
    [open.to_string(), close.to_string()]
}

#[track_caller]
fn assert_forged(out: &Output, line: usize) {
    out.assert_code(5);
    assert!(
        out.stdout.starts_with("forged: the trace ")
            && out.stdout.contains(&format!(": line {line}: forged")),
        "{}",
        out.stdout
    );
}

/// Captures the patch in `diff` with the run's trace as `run_id` and checks
/// it with `span_bijection` alone: the exit code must be `code`; returns the
/// property's result.
fn span_bijection_of(r: &Run, run_id: &str, diff: &Path, code: i32) -> serde_json::Value {
    outcome(&checked_with_trace(r, run_id, diff, code), "span_bijection").clone()
}

/// Captures `diff` with the run's trace and checks it with `span_bijection`
/// configured, expecting exit `code`; the property record.
fn checked_with_trace(r: &Run, run_id: &str, diff: &Path, code: i32) -> serde_json::Value {
    let config = r.trace.with_file_name("ledger.toml");
    std::fs::write(
        &config,
        "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"span_bijection\"\nplugin = \"builtin:span_bijection\"\n",
    )
    .unwrap();
    let (body, trace) = (diff.to_str().unwrap(), r.trace.to_str().unwrap());
    run(
        r.repo.path(),
        &["capture", "--run", run_id, "--body", body, "--trace", trace],
    )
    .assert_code(0);
    r.repo
        .check(run_id, &["--config", config.to_str().unwrap()])
        .assert_code(code);
    r.repo.properties(run_id)
}

// ---- 1. the authenticated trace --------------------------------------------

#[test]
fn an_honest_begun_run_reconciles_authenticated_and_ends_with_its_patch() {
    let r = Run::begin("agent-1");
    let key = std::fs::read_to_string(r.key_file()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(r.key_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the key file is 0600");
    r.write("docs/notes.md", b"# notes\n").assert_code(0);
    r.al(&["trace", "delete", "README.md"], None).assert_code(0);
    r.al(
        &[
            "trace",
            "exec",
            "--writes",
            "build/out.txt",
            "--",
            "sh",
            "-c",
            "mkdir -p build && echo built > build/out.txt",
        ],
        None,
    )
    .assert_code(0);
    let out = r.reconcile(&["--require-mutation", "--format", "json"]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["authenticated"]["agent"], "agent-1");
    assert_eq!(v["authenticated"]["sealed"], false);
    assert_eq!(
        v["authenticated"]["key_sha256"],
        sha256(&hex::decode(key.trim()).unwrap())
    );
    // Every span line names the agent the run was begun for.
    for line in &r.lines()[1..] {
        assert!(line.contains("\"agent\":\"agent-1\""), "{line}");
    }

    let end = r.al(&["trace", "end"], None);
    end.assert_code(0);
    assert!(end.stdout.starts_with("diff --git "), "{}", end.stdout);
    for path in ["docs/notes.md", "README.md", "build/out.txt"] {
        assert!(end.stdout.contains(&format!("b/{path}")), "{}", end.stdout);
    }
    assert!(end.stderr.contains("sealed"), "{}", end.stderr);
    let last = r.lines().pop().unwrap();
    assert!(last.contains("\"event\":\"end\""), "{last}");
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(0);
    assert_eq!(out.json()["authenticated"]["sealed"], true);
    // Sealed: nothing more is traced.
    let late = r.write("late.txt", b"x");
    late.assert_code(65);
    assert!(late.stderr.contains("was ended"), "{}", late.stderr);
    assert!(!r.workspace.join("late.txt").exists());
    // The key never reaches any output.
    for o in [&out, &end, &late] {
        assert!(!o.stdout.contains(key.trim()) && !o.stderr.contains(key.trim()));
    }

    // The patch trace end printed captures as is, with the trace.
    let cap = run_command(
        command(r.repo.path()),
        &[
            "capture",
            "--run",
            "traced",
            "--body",
            "-",
            "--trace",
            r.trace.to_str().unwrap(),
            "--format",
            "json",
        ],
        Some(end.stdout.as_bytes()),
    );
    cap.assert_code(0);
    let receipt = cap.json();
    assert_eq!(receipt["trace_auth"]["agent"], "agent-1");
    assert_eq!(receipt["trace_auth"]["sealed"], true);
    assert_eq!(receipt["trace_auth"]["verified"], "hmac-sha256");
    assert_eq!(
        receipt["trace_auth"]["key_sha256"],
        v["authenticated"]["key_sha256"]
    );
    crate::schemas::assert_matches("transcript", &receipt);
    // The key's digest is in the ledger, the key is not.
    let ledger = r.repo.path().join(".agent-ledger");
    for entry in walk(&ledger) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
        assert!(!text.contains(key.trim()), "{}", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn hand_written_lines_over_a_shell_ghost_are_forged_not_reconciled() {
    let r = Run::begin("a1");
    r.write("ok.txt", b"fine\n").assert_code(0);
    r.shell_write("ghost.txt", "written by a shell redirect\n");
    let ghost_sha = sha256(b"written by a shell redirect\n");
    let honest = r.lines();

    // The two lines the seed's issue describes, appended as schema 1.
    let mut lines = honest.clone();
    lines.extend(forged_pair("ghost.txt", &ghost_sha));
    r.set_lines(&lines);
    assert_forged(&r.reconcile(&[]), 4);

    // The same pair dressed as schema 2: this run's id, a correct `prev`
    // for each line, and a made-up MAC.
    let mut lines = honest.clone();
    for raw in forged_pair("ghost.txt", &ghost_sha) {
        let mut v: serde_json::Value = serde_json::from_str(&raw).unwrap();
        let begin: serde_json::Value = serde_json::from_str(&honest[0]).unwrap();
        v["schema"] = 2.into();
        v["agent"] = "a1".into();
        v["run"] = begin["run"].clone();
        v["prev"] = sha256(lines.last().unwrap().as_bytes()).into();
        v["mac"] = "00".repeat(32).into();
        lines.push(v.to_string());
    }
    r.set_lines(&lines);
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(5);
    assert_eq!(out.json()["result"], "forged");
    assert_eq!(out.json()["line"], 4);
    assert!(
        out.json()["reason"].as_str().unwrap().contains("MAC"),
        "{}",
        out.stdout
    );
    // capture refuses to store it, naming the line.
    let cap = run_command(
        command(r.repo.path()),
        &[
            "capture",
            "--run",
            "forged",
            "--body",
            fixture("capture/complete-multifile.diff").to_str().unwrap(),
            "--trace",
            r.trace.to_str().unwrap(),
        ],
        None,
    );
    cap.assert_code(65);
    assert!(cap.stderr.contains("line 4: forged"), "{}", cap.stderr);
    assert!(!r.repo.path().join(".agent-ledger/transcripts").exists());

    // Without the forgery the shell write is what it is: a ghost.
    r.set_lines(&honest);
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!(["ghost.txt"])
    );
}

#[test]
fn an_edited_line_is_forged() {
    let r = Run::begin("a1");
    r.write("a.txt", b"one\n").assert_code(0);
    r.write("b.txt", b"two\n").assert_code(0);
    // The shell rewrites a.txt; the agent edits its close line to match.
    r.shell_write("a.txt", "evil\n");
    let mut lines = r.lines();
    lines[2] = lines[2].replace(&sha256(b"one\n"), &sha256(b"evil\n"));
    r.set_lines(&lines);
    // The next line's `prev` no longer names it.
    assert_forged(&r.reconcile(&[]), 4);
    // The last line edited: its MAC gives it away.
    let mut lines = r.lines();
    let n = lines.len() - 1;
    lines[n] = lines[n].replace(&sha256(b"two\n"), &sha256(b"evil\n"));
    lines[2] = lines[2].replace(&sha256(b"evil\n"), &sha256(b"one\n"));
    r.set_lines(&lines);
    assert_forged(&r.reconcile(&[]), 5);
}

#[test]
fn a_removed_or_reordered_line_is_forged() {
    let r = Run::begin("a1");
    r.write("a.txt", b"one\n").assert_code(0);
    r.write("b.txt", b"two\n").assert_code(0);
    let honest = r.lines();
    let mut removed = honest.clone();
    removed.remove(2);
    r.set_lines(&removed);
    assert_forged(&r.reconcile(&[]), 3);
    let mut swapped = honest.clone();
    swapped.swap(1, 3);
    r.set_lines(&swapped);
    let out = r.reconcile(&[]);
    out.assert_code(5);
    // The begin line removed: the trace cannot pass for unauthenticated.
    r.set_lines(&honest[1..]);
    assert_forged(&r.reconcile(&[]), 1);
    // The whole trace replaced by an unauthenticated one claiming a ghost:
    // the run's key is still beside it.
    r.shell_write("ghost.txt", "g\n");
    let mut fake: Vec<String> = Vec::new();
    fake.extend(forged_pair("ghost.txt", &sha256(b"g\n")));
    r.set_lines(&fake);
    let out = r.reconcile(&[]);
    assert_forged(&out, 1);
    assert!(out.stdout.contains("no begin line"), "{}", out.stdout);
    // Emptied.
    std::fs::write(&r.trace, "").unwrap();
    assert_forged(&r.reconcile(&[]), 1);
}

#[test]
fn a_line_from_another_run_is_forged() {
    let r = Run::begin("a1");
    let other = Run::begin("a1");
    r.write("a.txt", b"one\n").assert_code(0);
    other.shell_write("ghost.txt", "g\n");
    // The other run traces the same ghost honestly; its lines are pasted
    // into this run's trace, as they are and with this run's id and links.
    other.write("ghost.txt", b"g\n").assert_code(0);
    r.shell_write("ghost.txt", "g\n");
    let theirs = other.lines();
    let mut lines = r.lines();
    lines.extend(theirs[1..].iter().cloned());
    r.set_lines(&lines);
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(5);
    assert!(
        out.json()["reason"]
            .as_str()
            .unwrap()
            .contains("belongs to run"),
        "{}",
        out.stdout
    );
    let begin: serde_json::Value = serde_json::from_str(&r.lines()[0]).unwrap();
    let mut lines: Vec<String> = r.lines()[..3].to_vec();
    for raw in &theirs[1..] {
        let mut v: serde_json::Value = serde_json::from_str(raw).unwrap();
        v["run"] = begin["run"].clone();
        v["prev"] = sha256(lines.last().unwrap().as_bytes()).into();
        lines.push(v.to_string());
    }
    r.set_lines(&lines);
    assert_forged(&r.reconcile(&[]), 4);
    // Its begin line, with its own key beside: not this trace's key.
    let out = other.reconcile(&["--trace-key", r.key_file().to_str().unwrap()]);
    assert_forged(&out, 1);
    assert!(out.stdout.contains("another run"), "{}", out.stdout);
}

#[test]
fn a_second_begin_line_and_lines_after_the_end_are_forged() {
    let r = Run::begin("a1");
    r.write("a.txt", b"one\n").assert_code(0);
    let honest = r.lines();
    let mut twice = honest.clone();
    twice.push(honest[0].clone());
    r.set_lines(&twice);
    assert_forged(&r.reconcile(&[]), 4);
    r.set_lines(&honest);
    r.al(&["trace", "end"], None).assert_code(0);
    let mut after = r.lines();
    after.push(honest[1].clone());
    r.set_lines(&after);
    let out = r.reconcile(&[]);
    assert_forged(&out, 5);
    assert!(
        out.stdout.contains("follows the end line"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_begun_trace_needs_its_key() {
    let r = Run::begin("a1");
    r.write("a.txt", b"one\n").assert_code(0);
    let moved = r.trace.with_file_name("elsewhere.key");
    std::fs::rename(r.key_file(), &moved).unwrap();
    let out = r.reconcile(&[]);
    out.assert_code(65);
    assert!(out.stderr.contains("--trace-key"), "{}", out.stderr);
    r.reconcile(&["--trace-key", moved.to_str().unwrap()])
        .assert_code(0);
}

#[test]
fn a_trace_without_a_begin_line_is_judged_as_before_and_says_so() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("trace.jsonl");
    let t = trace.to_str().unwrap();
    run_with_stdin(
        repo.path(),
        &["trace", "write", "notes.txt", "--trace", t],
        Some(b"n\n"),
    )
    .assert_code(0);
    let out = run(repo.path(), &["reconcile", "--trace", t]);
    out.assert_code(0);
    assert!(
        out.stdout
            .contains("trace: unauthenticated (no begin line)"),
        "{}",
        out.stdout
    );
    let out = run(
        repo.path(),
        &["reconcile", "--trace", t, "--format", "json"],
    );
    assert_eq!(out.json()["authenticated"], serde_json::Value::Null);
    let cap = run(
        repo.path(),
        &[
            "capture",
            "--run",
            "legacy",
            "--body",
            fixture("capture/complete-multifile.diff").to_str().unwrap(),
            "--trace",
            t,
            "--format",
            "json",
        ],
    );
    cap.assert_code(0);
    let receipt = cap.json();
    assert_eq!(receipt["trace_auth"], serde_json::Value::Null);
    assert_eq!(receipt["notes"][0]["code"], "unauthenticated_trace");
}

// ---- 2. the clean workspace -------------------------------------------------

#[test]
fn the_workspace_is_made_clean_at_the_pinned_revision() {
    let repo = DemoRepo::new();
    // The developer's own dirty files never reach the workspace.
    write(&repo.path().join("README.md"), "dirty\n");
    write(&repo.path().join("scratch.txt"), "mine\n");
    let r = Run::begin_in(repo, "a1");
    assert!(!r.workspace.join("scratch.txt").exists());
    assert_ne!(
        std::fs::read_to_string(r.workspace.join("README.md")).unwrap(),
        "dirty\n"
    );
    r.reconcile(&[]).assert_code(0);
    let begin: serde_json::Value = serde_json::from_str(&r.lines()[0]).unwrap();
    assert_eq!(begin["base"], r.repo.base.as_str());
    assert_eq!(
        begin["workspace"],
        r.workspace.canonicalize().unwrap().to_str().unwrap()
    );
}

#[test]
fn begin_refuses_a_trace_inside_the_repository_or_an_existing_workspace() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let inside = repo.path().join("trace.jsonl");
    let out = run(
        repo.path(),
        &[
            "trace",
            "begin",
            "--agent",
            "a",
            "--trace",
            inside.to_str().unwrap(),
            "--workspace",
            scratch.path().join("ws").to_str().unwrap(),
        ],
    );
    out.assert_code(64);
    assert!(
        out.stderr.contains("inside the repository"),
        "{}",
        out.stderr
    );
    assert!(!inside.exists());
    // A workspace inside the trace's directory would be hidden from exec.
    let trace = scratch.path().join("trace.jsonl");
    let out = run(
        repo.path(),
        &[
            "trace",
            "begin",
            "--agent",
            "a",
            "--trace",
            trace.to_str().unwrap(),
            "--workspace",
            scratch.path().join("ws").to_str().unwrap(),
        ],
    );
    out.assert_code(64);
    assert!(out.stderr.contains("hides"), "{}", out.stderr);
    // An existing workspace is never reused or overwritten.
    std::fs::create_dir_all(scratch.path().join("taken")).unwrap();
    let trace = scratch.path().join("st/trace.jsonl");
    let out = run(
        repo.path(),
        &[
            "trace",
            "begin",
            "--agent",
            "a",
            "--trace",
            trace.to_str().unwrap(),
            "--workspace",
            scratch.path().join("taken").to_str().unwrap(),
        ],
    );
    out.assert_code(73);
    assert!(!trace.exists());
}

#[test]
fn the_default_workspace_is_beside_the_ledger() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("st/trace.jsonl");
    let out = run(
        repo.path(),
        &[
            "trace",
            "begin",
            "--agent",
            "a",
            "--run",
            "r-1",
            "--trace",
            trace.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    out.assert_code(0);
    let ws = repo.path().join(".agent-ledger-workspaces/r-1");
    assert_eq!(
        out.json()["workspace"],
        ws.canonicalize().unwrap().to_str().unwrap()
    );
    assert!(ws.join("src/retry.py").exists());
}

// ---- 3. trace exec ----------------------------------------------------------

#[test]
fn a_ghost_written_by_a_shell_inside_trace_exec_is_caught() {
    let r = Run::begin("a1");
    let out = r.al(
        &[
            "trace",
            "exec",
            "--writes",
            "out.txt",
            "--",
            "sh",
            "-c",
            "echo a > out.txt; echo b > sneaky.txt; rm README.md",
        ],
        None,
    );
    out.assert_code(1);
    assert!(
        out.stderr.contains("  README.md\n  sneaky.txt\n"),
        "{}",
        out.stderr
    );
    let rec = r.reconcile(&["--format", "json"]);
    rec.assert_code(1);
    assert_eq!(
        rec.json()["report"]["ghosts"],
        serde_json::json!(["README.md", "sneaky.txt"])
    );
    // The declared output got its span from the adapter itself.
    assert!(
        r.lines()
            .iter()
            .any(|l| l.contains("\"path\":\"out.txt\"") && l.contains("\"event\":\"close\""))
    );
}

#[test]
fn trace_exec_cannot_read_or_touch_the_trace_or_its_key() {
    let r = Run::begin("a1");
    r.write("a.txt", b"one\n").assert_code(0);
    let key = std::fs::read_to_string(r.key_file()).unwrap();
    let before = std::fs::read(&r.trace).unwrap();
    let script = format!(
        "cat '{trace}'; echo forged >> '{trace}'; rm -f '{key}'; ls -a '{dir}'; cat /proc/net/dev; cat '{key}'",
        key = r.key_file().display(),
        trace = r.trace.display(),
        dir = r.trace.parent().unwrap().display()
    );
    let out = r.al(&["trace", "exec", "--", "sh", "-c", &script], None);
    // The command fails (it could do none of it): exit 6, not a verdict.
    out.assert_code(6);
    assert!(!out.stdout.contains(key.trim()), "{}", out.stdout);
    assert!(!out.stdout.contains("\"event\""), "{}", out.stdout);
    assert_eq!(std::fs::read(&r.trace).unwrap(), before);
    assert_eq!(std::fs::read_to_string(r.key_file()).unwrap(), key);
    // No network: only a loopback in the sandbox's namespace.
    let ifaces: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains(':') && !l.contains('|'))
        .map(|l| l.split(':').next().unwrap().trim())
        .collect();
    assert_eq!(ifaces, ["lo"], "{}", out.stdout);
    r.reconcile(&[]).assert_code(0);
}

// ---- 4. the seed's limits ---------------------------------------------------

#[test]
fn paths_differing_only_in_case_or_normalisation_are_flagged() {
    let r = Run::begin("a1");
    r.write("Notes.md", b"a\n").assert_code(0);
    r.write("notes.md", b"b\n").assert_code(0);
    r.write("caf\u{e9}.txt", b"c\n").assert_code(0);
    r.write("cafe\u{301}.txt", b"d\n").assert_code(0);
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["aliases"],
        serde_json::json!([
            ["cafe\u{301}.txt", "caf\u{e9}.txt"],
            ["Notes.md", "notes.md"]
        ])
    );
    let human = r.reconcile(&[]);
    assert!(
        human
            .stdout
            .contains("aliases (one file on case- or normalisation-insensitive file systems):\n")
            && human.stdout.contains("\n  Notes.md = notes.md\n"),
        "{}",
        human.stdout
    );
    // A traced write whose alias a shell made.
    let r = Run::begin("a1");
    r.write("Makefile", b"all:\n").assert_code(0);
    r.shell_write("makefile", "all:\n");
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["aliases"],
        serde_json::json!([["Makefile", "makefile"]])
    );
}

fn ignoring_repo(policy: Option<&str>) -> DemoRepo {
    let policy = policy.map(str::to_string);
    DemoRepo::with(move |root| {
        write(&root.join(".gitignore"), "*.log\nbuild/\n");
        if let Some(p) = policy {
            let config = root.join("agent-ledger.toml");
            let mut text = std::fs::read_to_string(&config).unwrap();
            text = text.replace(
                "[fixtures]",
                &format!("[trace]\nignored = \"{p}\"\n\n[fixtures]"),
            );
            std::fs::write(config, text).unwrap();
        }
    })
}

#[test]
fn ignored_paths_are_ghosts_under_deny_and_not_read_under_allow() {
    for (policy, code) in [(None, 1), (Some("deny"), 1), (Some("allow"), 0)] {
        let r = Run::begin_in(ignoring_repo(policy), "a1");
        r.write("kept.txt", b"k\n").assert_code(0);
        r.shell_write("debug.log", "untraced\n");
        let out = r.reconcile(&["--format", "json"]);
        out.assert_code(code);
        if code == 1 {
            assert_eq!(
                out.json()["report"]["ghosts"],
                serde_json::json!(["debug.log"]),
                "{policy:?}"
            );
        }
        // trace exec sees the same delta: an undeclared ignored write.
        let out = r.al(
            &[
                "trace",
                "exec",
                "--",
                "sh",
                "-c",
                "mkdir -p build && echo x > build/o.bin",
            ],
            None,
        );
        out.assert_code(if code == 1 { 1 } else { 0 });
    }
    // Under deny, a traced write to an ignored path reconciles and is in
    // the patch trace end prints.
    let r = Run::begin_in(ignoring_repo(None), "a1");
    r.write("trace.log", b"traced\n").assert_code(0);
    r.reconcile(&[]).assert_code(0);
    let end = r.al(&["trace", "end"], None);
    end.assert_code(0);
    assert!(end.stdout.contains("b/trace.log"), "{}", end.stdout);
}

#[test]
fn an_unknown_ignored_setting_is_refused() {
    let repo = ignoring_repo(Some("sometimes"));
    let scratch = tempdir();
    let trace = scratch.path().join("st/trace.jsonl");
    let out = run(
        repo.path(),
        &[
            "trace",
            "begin",
            "--agent",
            "a",
            "--trace",
            trace.to_str().unwrap(),
            "--workspace",
            scratch.path().join("ws").to_str().unwrap(),
        ],
    );
    out.assert_code(65);
    assert!(out.stderr.contains("sometimes"), "{}", out.stderr);
    assert!(!trace.exists() && !scratch.path().join("ws").exists());
}

#[test]
fn a_second_agent_cannot_write_in_a_run_and_two_agents_in_a_trace_are_refused() {
    let r = Run::begin("a1");
    r.write("mine.txt", b"1\n").assert_code(0);
    let out = r.al(
        &["trace", "write", "--agent", "a2", "theirs.txt"],
        Some(b"2\n"),
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("agent `a2` may not write `theirs.txt`")
            && out.stderr.contains("belong to agent `a1`"),
        "{}",
        out.stderr
    );
    assert!(!r.workspace.join("theirs.txt").exists());
    r.reconcile(&[]).assert_code(0);
    // Its trace gone, the run is no longer registered, and unauthenticated
    // calls are taken again.
    drop(r);

    // An unauthenticated trace two agents wrote: refused, with the paths.
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let t = scratch.path().join("trace.jsonl");
    for (agent, path) in [("a1", "x.txt"), ("a2", "y.txt"), ("a1", "z.txt")] {
        run_with_stdin(
            repo.path(),
            &[
                "trace",
                "write",
                path,
                "--agent",
                agent,
                "--trace",
                t.to_str().unwrap(),
            ],
            Some(b"v\n"),
        )
        .assert_code(0);
    }
    let out = run(
        repo.path(),
        &[
            "reconcile",
            "--trace",
            t.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["agents"],
        serde_json::json!([
            {"agent": "a1", "paths": ["x.txt", "z.txt"]},
            {"agent": "a2", "paths": ["y.txt"]}
        ])
    );
    let human = run(repo.path(), &["reconcile", "--trace", t.to_str().unwrap()]);
    assert!(
        human.stdout.contains("more than one agent wrote this workspace:\n  agent `a1`: x.txt, z.txt\n  agent `a2`: y.txt\n"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_no_op_begun_run_still_exits_3_under_require_mutation() {
    let r = Run::begin("a1");
    let out = r.reconcile(&["--require-mutation"]);
    out.assert_code(3);
    assert!(out.stdout.starts_with("no mutation"), "{}", out.stdout);
    let end = r.al(&["trace", "end", "--require-mutation"], None);
    end.assert_code(3);
    assert!(end.stdout.is_empty(), "no patch: {}", end.stdout);
    assert_eq!(r.lines().len(), 1, "not sealed");
    r.reconcile(&[]).assert_code(0);
}

// ---- span_bijection ---------------------------------------------------------

#[test]
fn span_bijection_holds_on_a_begun_run_and_names_an_unauthenticated_one() {
    let r = Run::begin("a1");
    let fixed = std::fs::read_to_string(r.workspace.join("src/retry.py"))
        .unwrap()
        .replace("2 ** attempt", "2 ** (attempt - 1)");
    r.write("src/retry.py", fixed.as_bytes()).assert_code(0);
    let end = r.al(&["trace", "end"], None);
    end.assert_code(0);
    let config = r.trace.with_file_name("ledger.toml");
    std::fs::write(
        &config,
        "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"span_bijection\"\nplugin = \"builtin:span_bijection\"\n",
    )
    .unwrap();
    let config = ["--config", config.to_str().unwrap()];
    let capture = |run_id: &str, trace: &Path| {
        run_command(
            command(r.repo.path()),
            &[
                "capture",
                "--run",
                run_id,
                "--body",
                "-",
                "--trace",
                trace.to_str().unwrap(),
            ],
            Some(end.stdout.as_bytes()),
        )
        .assert_code(0);
    };
    capture("begun", &r.trace);
    r.repo.check("begun", &config).assert_code(0);
    let p = outcome(&r.repo.properties("begun"), "span_bijection").clone();
    assert_eq!(p["outcome"], "holds", "{p}");
    assert_eq!(p["findings"], serde_json::json!([]));

    // The same spans with no begin line, no MACs: holds, and says so.
    let legacy = r.trace.with_file_name("legacy.jsonl");
    let stripped: Vec<String> = r.lines()[1..r.lines().len() - 1]
        .iter()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            for f in ["run", "prev", "mac"] {
                o.remove(f);
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&legacy, stripped.join("\n") + "\n").unwrap();
    capture("legacy", &legacy);
    r.repo.check("legacy", &config).assert_code(0);
    let p = outcome(&r.repo.properties("legacy"), "span_bijection").clone();
    assert_eq!(p["outcome"], "holds", "{p}");
    assert!(
        p["findings"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("unauthenticated trace"),
        "{p}"
    );
}

// ---- 5. OpenTelemetry export ------------------------------------------------

/// Every key `mine` has, `theirs` has too, recursively: what the export
/// wrote is all fields the OTLP protobuf types know (serde would otherwise
/// skip an unknown one silently).
fn known_fields(mine: &serde_json::Value, theirs: &serde_json::Value, at: &str) {
    match (mine, theirs) {
        (serde_json::Value::Object(m), serde_json::Value::Object(t)) => {
            for (k, v) in m {
                let Some(tv) = t.get(k) else {
                    panic!("`{at}.{k}` is not an OTLP field");
                };
                known_fields(v, tv, &format!("{at}.{k}"));
            }
        }
        (serde_json::Value::Array(m), serde_json::Value::Array(t)) => {
            assert_eq!(m.len(), t.len(), "{at}");
            for (i, (a, b)) in m.iter().zip(t).enumerate() {
                known_fields(a, b, &format!("{at}[{i}]"));
            }
        }
        _ => {}
    }
}

#[test]
fn export_writes_the_run_as_otlp_json() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode};
    let r = Run::begin("agent-7");
    r.write("a.txt", b"one\n").assert_code(0);
    r.al(&["trace", "delete", "README.md"], None).assert_code(0);
    r.al(
        &[
            "trace", "exec", "--writes", "b.txt", "--", "sh", "-c", "exit 3",
        ],
        None,
    )
    .assert_code(6);
    let out_file = r.trace.with_file_name("otlp.json");
    let o = out_file.to_str().unwrap();
    r.al(&["trace", "export", "--otlp", o], None).assert_code(0);
    // Never overwritten.
    r.al(&["trace", "export", "--otlp", o], None)
        .assert_code(73);
    let text = std::fs::read_to_string(&out_file).unwrap();
    let request: ExportTraceServiceRequest =
        serde_json::from_str(&text).expect("OTLP/JSON the protobuf types parse");
    let mine: serde_json::Value = serde_json::from_str(&text).unwrap();
    known_fields(&mine, &serde_json::to_value(&request).unwrap(), "");

    assert_eq!(request.resource_spans.len(), 1);
    let rs = &request.resource_spans[0];
    let spans = &rs.scope_spans[0].spans;
    assert_eq!(spans.len(), 4, "the run and its three tool calls");
    let root = &spans[0];
    assert_eq!(root.name, "invoke_agent agent-7");
    assert!(root.parent_span_id.is_empty());
    assert_eq!(root.trace_id.len(), 16);
    let attr = |span: &opentelemetry_proto::tonic::trace::v1::Span, key: &str| {
        span.attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.as_ref())
            .and_then(|v| v.value.clone())
    };
    assert_eq!(
        attr(root, "gen_ai.operation.name"),
        Some(Any::StringValue("invoke_agent".into()))
    );
    assert_eq!(
        attr(root, "agent_ledger.trace.authenticated"),
        Some(Any::BoolValue(true))
    );
    let mut ids = std::collections::BTreeSet::new();
    for (span, (op, path, code)) in spans[1..].iter().zip([
        ("write", "a.txt", StatusCode::Ok),
        ("delete", "README.md", StatusCode::Ok),
        ("write", "b.txt", StatusCode::Error),
    ]) {
        assert_eq!(span.trace_id, root.trace_id);
        assert_eq!(span.parent_span_id, root.span_id);
        assert_eq!(span.span_id.len(), 8);
        assert!(ids.insert(span.span_id.clone()));
        assert_eq!(span.name, format!("execute_tool {op}"));
        assert_eq!(span.kind, SpanKind::Internal as i32);
        assert_eq!(span.status.as_ref().unwrap().code, code as i32);
        assert!(span.start_time_unix_nano > 1_700_000_000_000_000_000);
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
        assert_eq!(
            attr(span, "gen_ai.tool.name"),
            Some(Any::StringValue(op.into()))
        );
        assert_eq!(attr(span, "file.path"), Some(Any::StringValue(path.into())));
        assert_eq!(
            attr(span, "gen_ai.agent.id"),
            Some(Any::StringValue("agent-7".into()))
        );
    }
    assert_eq!(
        attr(&spans[1], "agent_ledger.after_sha256"),
        Some(Any::StringValue(sha256(b"one\n")))
    );
    assert!(
        spans[3]
            .status
            .as_ref()
            .unwrap()
            .message
            .contains("status 3"),
        "{:?}",
        spans[3].status
    );

    // A forged trace is not exported.
    let mut lines = r.lines();
    lines.swap(1, 2);
    r.set_lines(&lines);
    let out = r.al(&["trace", "export", "--otlp", "-"], None);
    out.assert_code(65);
    assert!(out.stderr.contains("does not verify"), "{}", out.stderr);
}

// ---- the workspace's own git state is not the judge ----------------------

#[test]
fn a_ghost_hidden_by_the_workspaces_index_or_head_is_still_caught() {
    // assume-unchanged on a file the shell rewrote: git status would say
    // clean; the judge reads a private index made from the base.
    let r = Run::begin("a1");
    r.write("ok.txt", b"ok\n").assert_code(0);
    r.shell_write("README.md", "rewritten behind the adapter\n");
    git(
        &r.workspace,
        &["update-index", "--assume-unchanged", "README.md"],
    );
    assert!(
        !git(&r.workspace, &["status", "--porcelain"]).contains("README.md"),
        "git itself is fooled"
    );
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!(["README.md"])
    );

    // The change committed: HEAD is no longer the run's base.
    let r = Run::begin("a1");
    r.shell_write("ghost.txt", "g\n");
    git(&r.workspace, &["add", "ghost.txt"]);
    git(&r.workspace, &["commit", "-qm", "hide"]);
    let out = r.reconcile(&[]);
    out.assert_code(65);
    assert!(out.stderr.contains("HEAD was moved"), "{}", out.stderr);
    r.al(&["trace", "end"], None).assert_code(65);
    let w = r.write("x.txt", b"x\n");
    w.assert_code(65);
    assert!(!r.workspace.join("x.txt").exists());

    // `.git` pointed at another git directory.
    let r = Run::begin("a1");
    r.shell_write("ghost.txt", "g\n");
    let other = r.repo.path().join(".git");
    std::fs::write(
        r.workspace.join(".git"),
        format!("gitdir: {}\n", other.display()),
    )
    .unwrap();
    let out = r.reconcile(&[]);
    out.assert_code(65);
    assert!(out.stderr.contains("`.git` was replaced"), "{}", out.stderr);
}

#[test]
fn a_receipt_whose_trace_auth_disagrees_with_its_trace_is_refused() {
    let r = Run::begin("a1");
    r.write("notes.md", b"n\n").assert_code(0);
    let end = r.al(&["trace", "end"], None);
    end.assert_code(0);
    run_command(
        command(r.repo.path()),
        &[
            "capture",
            "--run",
            "t",
            "--body",
            "-",
            "--trace",
            r.trace.to_str().unwrap(),
        ],
        Some(end.stdout.as_bytes()),
    )
    .assert_code(0);
    let receipt = r.repo.path().join(".agent-ledger/transcripts/t.json");
    let text = std::fs::read_to_string(&receipt).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Another key's digest, and then no trace_auth at all (as if the
    // trace had been captured unauthenticated).
    v["trace_auth"]["key_sha256"] = "ab".repeat(32).into();
    std::fs::write(&receipt, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = r.repo.check("t", &[]);
    out.assert_code(65);
    assert!(
        out.stderr
            .contains("field `trace_auth` does not follow from the stored trace"),
        "{}",
        out.stderr
    );
    v.as_object_mut().unwrap().remove("trace_auth");
    std::fs::write(&receipt, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = r.repo.check("t", &[]);
    out.assert_code(65);
    assert!(out.stderr.contains("trace_auth"), "{}", out.stderr);
}

// ---- continuity, modes, the judged snapshot, git state, the key pin ---------

/// The `breaks` of a reconcile report: (path, previous span or null).
fn breaks(out: &Output) -> Vec<(String, serde_json::Value)> {
    out.json()["report"]["breaks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["path"].as_str().unwrap().to_string(),
                b["previous"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_traced_call_cannot_adopt_a_change_made_outside_the_trace() {
    // A shell redirect, then a no-op call declaring the path: the span's
    // `before` is the shell's bytes, not the base's.
    let r = Run::begin("a1");
    r.shell_write("src/retry.py", "EVIL\n");
    r.al(
        &["trace", "exec", "--writes", "src/retry.py", "--", "true"],
        None,
    )
    .assert_code(0);
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        breaks(&out),
        [("src/retry.py".to_string(), serde_json::Value::Null)]
    );
    let end = r.al(&["trace", "end"], None);
    end.assert_code(1);
    assert_eq!(end.stdout, "", "no patch for a run that does not reconcile");

    // The same through `trace write` of the same bytes, and for a deletion.
    let r = Run::begin("a1");
    r.shell_write("src/retry.py", "EVIL\n");
    r.write("src/retry.py", b"EVIL\n").assert_code(0);
    std::fs::remove_file(r.workspace.join("README.md")).unwrap();
    r.al(
        &["trace", "exec", "--writes", "README.md", "--", "true"],
        None,
    )
    .assert_code(0);
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    let got: Vec<String> = breaks(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(got, ["src/retry.py", "README.md"]);

    // Between two traced calls: the second call's `before` is not what the
    // first one left.
    let r = Run::begin("a1");
    r.write("notes.md", b"one\n").assert_code(0);
    r.shell_write("notes.md", "EVIL\n");
    r.write("notes.md", b"EVIL\n").assert_code(0);
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    let b = breaks(&out);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].0, "notes.md");
    assert!(b[0].1.is_string(), "names the span before it: {:?}", b[0]);
    assert!(out.stdout.contains("\"breaks\""));
    let human = r.reconcile(&[]);
    assert!(
        human.stdout.contains(
            "breaks (changed outside the trace between two tool calls):\n  notes.md (span "
        ),
        "{}",
        human.stdout
    );

    // Honest: every call starts from what the one before it left.
    let r = Run::begin("a1");
    r.write("notes.md", b"one\n").assert_code(0);
    r.write("notes.md", b"two\n").assert_code(0);
    r.al(&["trace", "delete", "notes.md"], None).assert_code(0);
    r.write("notes.md", b"three\n").assert_code(0);
    r.reconcile(&[]).assert_code(0);
}

#[test]
fn an_undeclared_change_is_recorded_and_only_a_traced_call_can_own_it() {
    let r = Run::begin("a1");
    r.al(
        &[
            "trace",
            "exec",
            "--",
            "sh",
            "-c",
            "echo changed > README.md",
        ],
        None,
    )
    .assert_code(1);
    // The adapter saw the change and wrote it down, as a failed span.
    let lines = r.lines();
    let undeclared = lines
        .iter()
        .find(|l| l.contains("\"path\":\"README.md\"") && l.contains("\"event\":\"close\""))
        .expect("a span for the undeclared change");
    assert!(undeclared.contains("\"status\":\"error\""), "{undeclared}");
    assert!(undeclared.contains("undeclared"), "{undeclared}");
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!(["README.md"])
    );
    // A later traced call on the path starts from what the command left:
    // the change is in the trace, so owning it breaks nothing.
    r.write("README.md", b"final\n").assert_code(0);
    r.reconcile(&[]).assert_code(0);
}

#[test]
fn a_mode_or_type_change_on_an_owned_path_is_a_hash_miss() {
    use std::os::unix::fs::PermissionsExt;
    let r = Run::begin("a1");
    r.write("tool.sh", b"echo hi\n").assert_code(0);
    r.write("link.txt", b"README.md").assert_code(0);
    r.reconcile(&[]).assert_code(0);
    // chmod +x, and the file replaced by a symlink whose target text is the
    // bytes the span recorded: same content hash, other entries.
    let tool = r.workspace.join("tool.sh");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let link = r.workspace.join("link.txt");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("README.md", &link).unwrap();
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    let misses = &out.json()["report"]["hash_misses"];
    assert_eq!(misses[0]["path"], "link.txt");
    assert_eq!(
        misses[0]["actual"],
        format!("120000:{}", sha256(b"README.md"))
    );
    assert_eq!(misses[1]["path"], "tool.sh");
    assert_eq!(
        misses[1]["actual"],
        format!("100755:{}", sha256(b"echo hi\n"))
    );

    // Made by a traced command that declared it, a mode change is traced.
    let r = Run::begin("a1");
    r.al(
        &[
            "trace",
            "exec",
            "--writes",
            "run.sh",
            "--",
            "sh",
            "-c",
            "echo x > run.sh && chmod +x run.sh",
        ],
        None,
    )
    .assert_code(0);
    r.reconcile(&[]).assert_code(0);
    let end = r.al(&["trace", "end"], None);
    end.assert_code(0);
    assert!(
        end.stdout.contains("new file mode 100755"),
        "{}",
        end.stdout
    );
}

#[test]
fn the_repositorys_git_directory_cannot_hide_a_change_or_run_a_program() {
    // `info/attributes` marks every file as text: a CRLF rewrite would
    // normalise to the base's bytes in git's own status.
    let r = Run::begin("a1");
    let info = r.repo.path().join(".git/info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("attributes"), "* text\n").unwrap();
    let readme = std::fs::read_to_string(r.workspace.join("README.md")).unwrap();
    // (A private index read from the base has no stat data, so git would
    // compare every file through its clean conversion: CRLF becomes LF.)
    r.shell_write("README.md", &readme.replace('\n', "\r\n"));
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!(["README.md"])
    );

    // A clean filter in the repository's config, selected by
    // `info/attributes`: it would run as the adapter, which can read the key.
    let r = Run::begin("a1");
    let stolen = r.repo.path().join("../stolen");
    let info = r.repo.path().join(".git/info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("attributes"), "* filter=steal\n").unwrap();
    git(
        r.repo.path(),
        &[
            "config",
            "filter.steal.clean",
            &format!("sh -c 'touch {}; cat'", stolen.display()),
        ],
    );
    r.shell_write("README.md", "changed\n");
    r.al(
        &[
            "trace",
            "exec",
            "--writes",
            "out.txt",
            "--",
            "sh",
            "-c",
            "echo o > out.txt",
        ],
        None,
    )
    .assert_code(0);
    r.reconcile(&[]).assert_code(1);
    r.al(&["trace", "end"], None).assert_code(1);
    assert!(!stolen.exists(), "the repository's filter ran");
}

#[test]
fn what_git_never_lists_in_the_workspace_is_a_ghost() {
    let r = Run::begin("a1");
    r.write("ok.txt", b"ok\n").assert_code(0);
    // A regular file named `.git` below the top, and a ledger the agent
    // made in its workspace (capture runs in the repository, not here).
    r.shell_write("docs/.git", "payload\n");
    r.shell_write(".agent-ledger/x/evil.py", "payload\n");
    let out = r.reconcile(&["--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!([".agent-ledger/x/evil.py", "docs/.git"])
    );
}

#[test]
fn a_pinned_key_refuses_a_trace_replaced_with_its_key() {
    let r = Run::begin("a1");
    r.write("ok.txt", b"ok\n").assert_code(0);
    let key = std::fs::read_to_string(r.key_file()).unwrap();
    let pin = sha256(&hex::decode(key.trim()).unwrap());
    r.reconcile(&["--trace-key-sha256", &pin]).assert_code(0);
    // Whoever can write the trace's directory replaces the trace and its key
    // together with another run's: the begin line and the key agree.
    let other = Run::begin_in(DemoRepo::new(), "a1");
    std::fs::copy(&other.trace, &r.trace).unwrap();
    std::fs::copy(other.key_file(), r.key_file()).unwrap();
    let out = r.reconcile(&["--trace-key-sha256", &pin]);
    assert_forged(&out, 1);
    assert!(
        out.stdout.contains("was pinned as sha256"),
        "{}",
        out.stdout
    );
    // The pin from the environment, for trace end and capture too.
    let mut end = command(&r.workspace);
    end.env("AGENT_LEDGER_TRACE", &r.trace)
        .env("AGENT_LEDGER_TRACE_KEY_SHA256", &pin);
    run_command(end, &["trace", "end"], None).assert_code(5);
    let cap = run_command(
        command(r.repo.path()),
        &[
            "capture",
            "--run",
            "replaced",
            "--body",
            fixture("capture/complete-multifile.diff").to_str().unwrap(),
            "--trace",
            r.trace.to_str().unwrap(),
            "--trace-key-sha256",
            &pin,
        ],
        None,
    );
    cap.assert_code(65);
    assert!(cap.stderr.contains("pinned"), "{}", cap.stderr);
    // A malformed pin is a usage error naming the flag.
    let bad = r.reconcile(&["--trace-key-sha256", "xyz"]);
    bad.assert_code(64);
    assert!(bad.stderr.contains("--trace-key-sha256"), "{}", bad.stderr);
}

#[test]
fn span_bijection_finds_breaks_and_mode_changes_in_the_patch() {
    let r = Run::begin("a1");
    r.write("tool.sh", b"echo hi\n").assert_code(0);
    // Untraced: README.md rewritten, then adopted by a no-op call; tool.sh
    // made executable after its span.
    r.shell_write("README.md", "EVIL\n");
    r.al(
        &["trace", "exec", "--writes", "README.md", "--", "true"],
        None,
    )
    .assert_code(0);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        r.workspace.join("tool.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // `trace end` refuses such a run; the agent hands over its own diff.
    r.al(&["trace", "end"], None).assert_code(1);
    let diff = staged_diff(
        &r.workspace,
        &r.trace.with_file_name("laundered.diff"),
        true,
    );
    let p = span_bijection_of(&r, "laundered", &diff, 4);
    assert_eq!(p["outcome"], "miss", "{p}");
    let messages: Vec<&str> = p["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("break: ") && m.contains("base revision holds")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("hash miss: ") && m.contains("mode 100755 sha256")),
        "{messages:?}"
    );
}

// ---- the adapter's flags are the agent's ------------------------------------

#[test]
fn the_adapter_cannot_reach_a_begun_runs_trace_or_key_through_its_flags() {
    let r = Run::begin("a1");
    let key_file = r.key_file();
    let key = std::fs::read_to_string(&key_file).unwrap();
    // `--from` reads as the operator: only stdin or a file in the tree.
    let out = r.al(
        &[
            "trace",
            "write",
            "leak.txt",
            "--from",
            key_file.to_str().unwrap(),
        ],
        None,
    );
    out.assert_code(64);
    assert!(
        out.stderr.contains("is not a file inside"),
        "{}",
        out.stderr
    );
    assert!(!r.workspace.join("leak.txt").exists());
    r.shell_write("notes.md", "from a file in the tree\n");
    r.al(&["trace", "write", "copy.md", "--from", "notes.md"], None)
        .assert_code(0);

    // A throw-away trace with no begin line: while a begun run is
    // registered, no such call is taken, wherever it aims (the workspace,
    // the repository the run began from, any other work tree).
    let scratch = tempdir();
    let other_trace = scratch.path().join("u.jsonl");
    let other_trace = other_trace.to_str().unwrap();
    let elsewhere = DemoRepo::new();
    // Without the harness's AGENT_LEDGER_TRACE (which binds a call to its
    // run: see below), as an agent calling the adapter with flags alone.
    let bare =
        |args: &[&str], stdin: Option<&[u8]>| run_command(command(&r.workspace), args, stdin);
    for repo in [
        r.workspace.to_str().unwrap(),
        r.repo.path().to_str().unwrap(),
        elsewhere.path().to_str().unwrap(),
    ] {
        let out = bare(
            &[
                "trace",
                "exec",
                "--trace",
                other_trace,
                "--repo",
                repo,
                "--",
                "cat",
                key_file.to_str().unwrap(),
            ],
            None,
        );
        out.assert_code(65);
        assert!(
            out.stderr.contains("begun run(s) are registered"),
            "{}",
            out.stderr
        );
        assert!(!out.stdout.contains(key.trim()), "the key was read");
        let out = bare(
            &[
                "trace",
                "write",
                "--trace",
                other_trace,
                "--repo",
                repo,
                "hook.sh",
            ],
            Some(b"payload\n"),
        );
        out.assert_code(65);
    }
    assert!(!elsewhere.path().join("hook.sh").exists());
    assert!(!Path::new(other_trace).exists(), "nothing was appended");

    // A trace of the agent's own making that begins a run, beside a symlink
    // to the run's key: not a registered run, refused before the key is read.
    let fake = scratch.path().join("fake.jsonl");
    let begin_line = r.lines()[0].clone();
    std::fs::write(&fake, format!("{begin_line}\n")).unwrap();
    std::os::unix::fs::symlink(&key_file, scratch.path().join("fake.jsonl.key")).unwrap();
    let out = bare(
        &["trace", "write", "--trace", fake.to_str().unwrap(), "x.py"],
        Some(b"x\n"),
    );
    out.assert_code(65);
    assert!(out.stderr.contains("not registered"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&fake).unwrap().lines().count(), 1);

    // With the harness's AGENT_LEDGER_TRACE and AGENT_LEDGER_AGENT set, a
    // flag cannot move the call to another trace or speak for another agent.
    let out = r.al(
        &["trace", "write", "--trace", other_trace, "x.py"],
        Some(b"x\n"),
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("another trace than AGENT_LEDGER_TRACE"),
        "{}",
        out.stderr
    );
    let mut cmd = command(&r.workspace);
    cmd.env("AGENT_LEDGER_TRACE", &r.trace)
        .env("AGENT_LEDGER_AGENT", "a1");
    let out = run_command(
        cmd,
        &["trace", "write", "--agent", "b", "x.py"],
        Some(b"x\n"),
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("another agent than AGENT_LEDGER_AGENT"),
        "{}",
        out.stderr
    );
    assert!(!r.workspace.join("x.py").exists());

    // A FIFO where a write is aimed: refused, never waited on.
    let fifo = r.workspace.join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = r.write("pipe", b"x\n");
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

#[test]
fn an_unauthenticated_reconcile_reads_its_own_index_and_takes_a_base() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("t.jsonl");
    write(&trace, "");
    let al = |args: &[&str]| {
        let mut cmd = command(repo.path());
        cmd.env("AGENT_LEDGER_TRACE", &trace);
        run_command(cmd, args, None)
    };
    let base = git(repo.path(), &["rev-parse", "HEAD"]);
    // skip-worktree on a file the shell rewrote: git's own status is clean.
    git(
        repo.path(),
        &["update-index", "--skip-worktree", "README.md"],
    );
    write(&repo.path().join("README.md"), "EVIL\n");
    let out = al(&["reconcile", "--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!(["README.md"])
    );
    // A commit moves HEAD over the change; the base given names it.
    git(
        repo.path(),
        &["update-index", "--no-skip-worktree", "README.md"],
    );
    git(repo.path(), &["commit", "-qam", "hide"]);
    al(&["reconcile"]).assert_code(0);
    let out = al(&["reconcile", "--base", base.trim(), "--format", "json"]);
    out.assert_code(1);
    assert_eq!(
        out.json()["report"]["ghosts"],
        serde_json::json!(["README.md"])
    );
}

#[test]
fn span_bijection_does_not_take_a_submodule_for_a_deleted_file() {
    let r = Run::begin("a1");
    r.al(&["trace", "delete", "README.md"], None).assert_code(0);
    let end = r.al(&["trace", "end"], None);
    end.assert_code(0);
    // The patch handed over instead turns README.md into a gitlink.
    let clone = tempdir();
    let c = clone.path().join("c");
    git(
        r.repo.path(),
        &[
            "clone",
            "-q",
            r.repo.path().to_str().unwrap(),
            c.to_str().unwrap(),
        ],
    );
    git(&c, &["rm", "-q", "README.md"]);
    git(
        &c,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            "160000,1111111111111111111111111111111111111111,README.md",
        ],
    );
    let diff = staged_diff(&c, &clone.path().join("evil.diff"), false);
    let p = span_bijection_of(&r, "gitlink", &diff, 4);
    assert_eq!(p["outcome"], "miss", "{p}");
    assert!(
        p["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("the patched tree holds mode 160000"),
        "{p}"
    );
}

#[test]
fn a_key_handed_over_on_a_descriptor_never_touches_the_disk() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("state/trace.jsonl");
    let ws = scratch.path().join("ws");
    // Stands in for the harness's memory: the harness, not agent-ledger,
    // decides where the key lives.
    let held = scratch.path().join("harness.key");
    let shell = |dir: &Path, script: &str, stdin: Option<&[u8]>| {
        let mut cmd = std::process::Command::new("sh");
        cmd.current_dir(dir)
            .env("AGENT_LEDGER_RUNS_DIR", runs_dir())
            .env("AGENT_LEDGER_ALLOW_ROOT_AGENT", "1")
            .env("AL", env!("CARGO_BIN_EXE_agent-ledger"))
            .env("T", &trace)
            .env("W", &ws)
            .env("K", &held);
        run_command(cmd, &["-c", script], stdin)
    };
    let out = shell(
        repo.path(),
        r#"umask 077; "$AL" trace begin --agent a1 --trace "$T" --workspace "$W" --key-fd 3 --format json 3>"$K""#,
        None,
    );
    out.assert_code(0);
    assert_eq!(out.json()["key_file"], serde_json::Value::Null);
    assert_eq!(out.json()["key_fd"], 3);
    assert!(!PathBuf::from(format!("{}.key", trace.display())).exists());
    let key = std::fs::read_to_string(&held).unwrap();
    assert_eq!(key.len(), 65);
    let with_key = |script: &str| format!("AGENT_LEDGER_TRACE_KEY_FD=3 {script} 3<\"$K\"");

    shell(
        &ws,
        &with_key(r#""$AL" trace write notes.md --trace "$T""#),
        Some(b"n\n"),
    )
    .assert_code(0);
    // The traced command inherits no descriptor holding the key.
    shell(
        &ws,
        &with_key(
            r#""$AL" trace exec --trace "$T" --writes out.txt -- sh -c 'for f in /proc/self/fd/* /proc/$PPID/fd/*; do timeout 1 head -c 200 "$f"; done > out.txt 2>&1; true'"#,
        ),
        None,
    )
    .assert_code(0);
    let seen = std::fs::read_to_string(ws.join("out.txt")).unwrap();
    assert!(
        !seen.contains(key.trim()),
        "the key reached the traced command"
    );
    shell(&ws, &with_key(r#""$AL" reconcile --trace "$T""#), None).assert_code(0);
    let out = shell(&ws, r#""$AL" reconcile --trace "$T""#, None);
    out.assert_code(65);
    assert!(
        out.stderr.contains("AGENT_LEDGER_TRACE_KEY_FD"),
        "{}",
        out.stderr
    );
    let end = shell(&ws, &with_key(r#""$AL" trace end --trace "$T""#), None);
    end.assert_code(0);
    let diff = scratch.path().join("run.diff");
    std::fs::write(&diff, &end.stdout).unwrap();
    let cap = shell(
        repo.path(),
        &with_key(&format!(
            r#""$AL" capture --run fd --body {} --trace "$T" --format json"#,
            diff.display()
        )),
        None,
    );
    cap.assert_code(0);
    assert_eq!(
        cap.json()["trace_auth"]["key_sha256"],
        sha256(&hex::decode(key.trim()).unwrap())
    );
    // A descriptor that is not one is a usage error naming the variable.
    let out = shell(
        &ws,
        r#"AGENT_LEDGER_TRACE_KEY_FD=2 "$AL" reconcile --trace "$T""#,
        None,
    );
    out.assert_code(64);
    assert!(
        out.stderr.contains("AGENT_LEDGER_TRACE_KEY_FD"),
        "{}",
        out.stderr
    );
}

#[test]
fn span_bijection_tells_a_non_utf8_path_from_a_traced_path_it_resembles() {
    use std::os::unix::ffi::OsStrExt;
    // The run writes `\u{fffd}.pth` (valid UTF-8); the patch handed over
    // adds `\xff.pth` too, whose lossy spelling is the same string.
    let r = Run::begin("a1");
    r.write("\u{fffd}.pth", b"honest\n").assert_code(0);
    r.al(&["trace", "end"], None).assert_code(0);
    std::fs::write(
        r.workspace.join(std::ffi::OsStr::from_bytes(b"\xff.pth")),
        "import os\n",
    )
    .unwrap();
    let diff = staged_diff(&r.workspace, &r.trace.with_file_name("lossy.diff"), true);
    // The patch names a path that is not UTF-8, which no property could
    // read as itself: the bounds check rejects it before any property
    // runs, so it can never pass for the traced `\u{fffd}.pth`.
    let record = checked_with_trace(&r, "lossy", &diff, 4);
    let p = outcome(&record, "patch_applies").clone();
    assert_eq!(p["outcome"], "miss", "{p}");
    assert!(
        p["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains("not UTF-8")),
        "{p}"
    );
}

// As host root, a command in the sandbox `trace exec` shares with the test
// command is still host uid 0, which kernel settings trust without
// capabilities (one pointed `kernel.core_pattern` at its own script).
// `trace exec` refuses to run an agent's command as host root unless the
// operator accepts that.
#[test]
fn trace_exec_as_host_root_is_refused_unless_the_operator_accepts_it() {
    let r = Run::begin("a1");
    let mut cmd = command(&r.workspace);
    cmd.env("AGENT_LEDGER_TRACE", &r.trace)
        .env_remove("AGENT_LEDGER_ALLOW_ROOT_AGENT");
    let out = run_command(cmd, &["trace", "exec", "--", "true"], None);
    if host_root() {
        out.assert_code(65);
        assert!(
            out.stderr.contains("AGENT_LEDGER_ALLOW_ROOT_AGENT"),
            "{}",
            out.stderr
        );
        // Accepted by the operator, it runs.
        r.al(&["trace", "exec", "--", "true"], None).assert_code(0);
    } else {
        out.assert_code(0);
    }
}

/// A begun run that is never ended holds back every call of a trace
/// without a begin line for this user; `trace list` shows it, `trace
/// abort` clears it (the run then takes no more calls and is never
/// ended), and an ended or removed run holds nothing back.
#[test]
fn a_forgotten_run_is_listed_and_aborted_and_an_ended_or_removed_one_holds_nothing_back() {
    let r = Run::begin("agent-a");
    let run_id = serde_json::from_str::<serde_json::Value>(&r.lines()[0]).unwrap()["run"]
        .as_str()
        .unwrap()
        .to_string();
    let elsewhere = DemoRepo::new();
    let scratch = tempdir();
    let plain = scratch.path().join("plain.jsonl");
    let unauthenticated = || {
        run_with_stdin(
            elsewhere.path(),
            &[
                "trace",
                "write",
                "--trace",
                plain.to_str().unwrap(),
                "notes.md",
            ],
            Some(b"notes\n"),
        )
    };
    let out = unauthenticated();
    out.assert_code(65);
    assert!(!out.stderr.contains(&run_id), "{}", out.stderr);
    assert!(out.stderr.contains("trace abort RUN"), "{}", out.stderr);
    let listed = |dir: &Path| -> serde_json::Value {
        let out = run(dir, &["trace", "list", "--format", "json"]);
        out.assert_code(0);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let l = listed(elsewhere.path());
    assert_eq!(l[0]["run"], run_id.as_str(), "{l:#}");
    assert_eq!(l[0]["state"], "active", "{l:#}");
    run(elsewhere.path(), &["trace", "abort", "no-such-run"]).assert_code(66);
    let out = run(elsewhere.path(), &["trace", "abort", &run_id]);
    out.assert_code(0);
    assert!(out.stdout.contains("worktree remove"), "{}", out.stdout);
    assert_eq!(listed(elsewhere.path())[0]["state"], "aborted");
    unauthenticated().assert_code(0);
    // The aborted run itself takes no more calls and is never ended; its
    // trace and workspace are left where they were.
    let out = r.write("late.py", b"x = 1\n");
    out.assert_code(65);
    assert!(out.stderr.contains("was aborted"), "{}", out.stderr);
    assert!(!r.workspace.join("late.py").exists());
    let out = r.al(&["trace", "end"], None);
    out.assert_code(65);
    assert!(out.stderr.contains("was aborted"), "{}", out.stderr);
    assert!(r.trace.exists() && r.workspace.exists());

    // An ended run holds nothing back.
    let e = Run::begin("agent-b");
    e.write("done.py", b"done = True\n").assert_code(0);
    let out = run_with_stdin(
        elsewhere.path(),
        &[
            "trace",
            "write",
            "--trace",
            plain.to_str().unwrap(),
            "more.md",
        ],
        Some(b"more\n"),
    );
    out.assert_code(65);
    e.al(&["trace", "end"], None).assert_code(0);
    run_with_stdin(
        elsewhere.path(),
        &[
            "trace",
            "write",
            "--trace",
            plain.to_str().unwrap(),
            "more.md",
        ],
        Some(b"more\n"),
    )
    .assert_code(0);
    // Nor does one whose workspace was removed with git.
    let s = Run::begin("agent-c");
    run_with_stdin(
        elsewhere.path(),
        &[
            "trace",
            "write",
            "--trace",
            plain.to_str().unwrap(),
            "third.md",
        ],
        Some(b"3\n"),
    )
    .assert_code(65);
    git(
        s.repo.path(),
        &[
            "worktree",
            "remove",
            "--force",
            s.workspace.to_str().unwrap(),
        ],
    );
    let states: Vec<String> = listed(elsewhere.path())
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = states.clone();
    sorted.sort();
    assert_eq!(sorted, ["aborted", "ended", "stale"], "{states:?}");
    run_with_stdin(
        elsewhere.path(),
        &[
            "trace",
            "write",
            "--trace",
            plain.to_str().unwrap(),
            "third.md",
        ],
        Some(b"3\n"),
    )
    .assert_code(0);
}
