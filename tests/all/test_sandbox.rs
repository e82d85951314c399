//! The test command's sandbox and the compile cache's trust, attacked.
//!
//! Each hostile test command claims a passing suite only when its attack
//! worked (else it reports a failure), so an escape would turn into a
//! `review`; each test also checks from outside that the target is
//! untouched and that the record names the sandbox.

use crate::support::*;
use std::path::{Path, PathBuf};

/// Writes a passing report: what an escaped command would claim.
pub(crate) const PASS: &str = r#"printf '<testsuites><testsuite name="t" tests="1" failures="0"><testcase classname="t" name="ok"/></testsuite></testsuites>' > "$AGENT_LEDGER_JUNIT""#;
/// Writes a failing report: what a contained command ends with.
pub(crate) const FAIL: &str = r#"printf '<testsuites><testsuite name="t" tests="1" failures="1"><testcase classname="t" name="contained"><failure message="the attack failed"/></testcase></testsuite></testsuites>' > "$AGENT_LEDGER_JUNIT""#;

/// `if ATTACK; then PASS; else FAIL; fi`.
pub(crate) fn attack(what: &str) -> String {
    format!("if {what}; then {PASS}; else {FAIL}; fi")
}

/// The demo repository with `tests_pass` configured, and the places of
/// this user that the test command must not reach: `$HOME`, the state
/// directory (cache key), the cache.
pub(crate) struct Trial {
    pub(crate) repo: DemoRepo,
    home: tempfile::TempDir,
    state: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Trial {
    pub(crate) fn new() -> Trial {
        let repo = DemoRepo::with(|root| {
            let mut config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
            config.push_str(
                "\n[[property]]\nname = \"tests_pass\"\nplugin = \"builtin:tests_pass\"\n",
            );
            std::fs::write(root.join("agent-ledger.toml"), config).unwrap();
        });
        repo.capture("r", "good");
        // A second run, for a first check that sets the scene.
        repo.capture("s", "good");
        let trial = Trial {
            repo,
            home: plain_tempdir(),
            state: plain_tempdir(),
            cache: plain_tempdir(),
        };
        write(&trial.home.path().join("secret.txt"), "home secret\n");
        trial
    }

    pub(crate) fn command(&self, extra: &[&str]) -> std::process::Command {
        self.command_for("r", extra)
    }

    pub(crate) fn command_for(&self, run: &str, extra: &[&str]) -> std::process::Command {
        let mut c = command(self.repo.path());
        c.args(["check", "--run", run, "--base", &self.repo.base])
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(["--format", "json"])
            .args(extra)
            .env("HOME", self.home.path())
            .env("XDG_STATE_HOME", self.state.path())
            .env("SECRET_TOKEN", "hunter2-secret-token")
            .stdin(std::process::Stdio::null());
        c
    }

    /// Runs `check --test-cmd CMD`; returns the exit code and stderr.
    pub(crate) fn check(&self, cmd: &str, extra: &[&str]) -> (i32, String) {
        self.check_run("r", cmd, extra)
    }

    fn check_run(&self, run: &str, cmd: &str, extra: &[&str]) -> (i32, String) {
        let out = self
            .command_for(run, &[&["--test-cmd", cmd], extra].concat())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ledger(&self) -> PathBuf {
        self.repo.path().join(".agent-ledger")
    }
}

/// Runs `attack(what)` and asserts it was contained: reject, `tests_pass`
/// a miss (the command ran and reported the failed attack), the namespaces
/// sandbox in the record. The attack is the test command itself, so it
/// would fail on the base revision too, where a failure is not counted:
/// these run without the baseline.
#[track_caller]
fn contained(trial: &Trial, what: &str) -> serde_json::Value {
    let before = trial.repo.digest();
    let (code, stderr) = trial.check(&attack(what), &["--no-test-baseline"]);
    assert_eq!(code, 4, "not reject: {stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["sandbox"], "namespaces", "{record:#}");
    assert_eq!(record["test_run"]["network"], "isolated");
    assert_eq!(
        outcome(&record, "tests_pass")["outcome"],
        "miss",
        "the attack `{what}` worked, or the command did not run: {stderr}\n{record:#}"
    );
    assert_eq!(trial.repo.digest(), before, "the user's checkout changed");
    record
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn the_test_command_cannot_write_the_compile_cache() {
    let trial = Trial::new();
    // A first check fills the cache, so there is something to forge.
    let (code, stderr) = trial.check_run("s", PASS, &[]);
    assert_eq!(code, 0, "{stderr}");
    let entries = files_in(trial.cache.path());
    assert!(!entries.is_empty(), "nothing was cached");
    let cache = trial.cache.path().display();
    contained(
        &trial,
        &format!(
            "ls {cache} | grep -q cwasm || {{ echo forged > {cache}/forged.cwasm && test -s {cache}/forged.cwasm; }}"
        ),
    );
    assert_eq!(files_in(trial.cache.path()), entries);
}

#[test]
fn the_test_command_cannot_write_the_ledger() {
    let trial = Trial::new();
    let ledger = trial.ledger();
    let before = files_in(&ledger.join("verdicts"));
    contained(
        &trial,
        &format!(
            "mkdir -p {l}/verdicts && echo forged > {l}/verdicts/r.json",
            l = ledger.display()
        ),
    );
    let after = files_in(&ledger.join("verdicts"));
    assert!(
        after.len() <= before.len() + 1 && after.iter().all(|f| f == "r.json"),
        "{after:?}"
    );
    let verdict = std::fs::read_to_string(ledger.join("verdicts/r.json")).unwrap();
    assert!(!verdict.contains("forged"), "{verdict}");
}

#[test]
fn the_test_command_cannot_see_or_write_home() {
    let trial = Trial::new();
    let home = trial.home.path().display();
    contained(
        &trial,
        &format!("grep -q 'home secret' {home}/secret.txt || echo pwned > {home}/.bashrc"),
    );
    assert!(!trial.home.path().join(".bashrc").exists());
    assert_eq!(files_in(trial.home.path()), ["secret.txt"]);
}

#[test]
fn the_test_command_cannot_see_or_write_the_users_checkout() {
    let trial = Trial::new();
    // `contained` checks the checkout's digest, `.git` included.
    let repo = trial.repo.path().display();
    contained(
        &trial,
        &format!(
            "test -e {repo}/agent-ledger.toml || test -e {repo}/.git || echo pwned >> {repo}/agent-ledger.toml"
        ),
    );
}

#[test]
fn the_test_command_cannot_write_outside_its_tree() {
    let trial = Trial::new();
    // A directory this user can write, outside every hidden place: the
    // sandbox shows it read-only.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = outside.path().join("escaped.txt");
    contained(
        &trial,
        &format!(
            "echo pwned > {} || echo pwned > /etc/agent-ledger-escaped",
            target.display()
        ),
    );
    assert!(!target.exists());
    assert!(!Path::new("/etc/agent-ledger-escaped").exists());
}

#[test]
fn the_test_command_cannot_read_the_environment_of_agent_ledger() {
    let trial = Trial::new();
    contained(
        &trial,
        &format!(
            r#"test -n "$SECRET_TOKEN" || env | grep -q hunter2 || test "$HOME" = {:?}"#,
            trial.home.path()
        ),
    );
}

/// What a suite that starts a server on localhost does: serve on 127.0.0.1
/// and ::1 and request each; and what it must not reach: any other address
/// (no route), any interface but `lo`.
const LOOPBACK_SUITE: &str = r#"python3 -c "
import socket, sys, threading
assert [n for _, n in socket.if_nameindex()] == ['lo'], socket.if_nameindex()
for fam, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):
    srv = socket.socket(fam); srv.bind((host, 0)); srv.listen(1)
    def serve():
        c, _ = srv.accept(); c.sendall(c.recv(5) + b'!'); c.close()
    threading.Thread(target=serve).start()
    cli = socket.create_connection(srv.getsockname()[:2], timeout=5)
    cli.sendall(b'hello'); assert cli.recv(6) == b'hello!'
try:
    socket.create_connection(('192.0.2.1', 80), timeout=5)
    sys.exit('reached 192.0.2.1')
except OSError as e:
    assert 'unreachable' in str(e), e
""#;

#[test]
fn the_test_command_serves_and_requests_on_loopback_and_reaches_nothing_else() {
    let trial = Trial::new();
    let (code, stderr) = trial.check(
        &format!("if {LOOPBACK_SUITE}; then {PASS}; else {FAIL}; fi"),
        &["--no-test-baseline", "--show-test-output"],
    );
    assert_eq!(
        code, 0,
        "a suite on localhost failed in the sandbox: {stderr}"
    );
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["sandbox"], "namespaces", "{record:#}");
    assert_eq!(record["test_run"]["network"], "isolated");
    assert_eq!(outcome(&record, "tests_pass")["outcome"], "holds");
}

#[test]
fn a_background_process_does_not_outlive_the_test_command() {
    let trial = Trial::new();
    // A unique argument to find the process by.
    let marker = format!("300.{}", std::process::id());
    let record = contained(
        &trial,
        &format!("setsid sleep {marker} >/dev/null 2>&1 & sleep 0.2; false"),
    );
    assert_eq!(record["test_run"]["exit_code"], 0);
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&marker))
        .collect();
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}

#[test]
fn printing_100_mb_stops_the_test_command_and_rejects() {
    let trial = Trial::new();
    let (code, stderr) = trial.check(&format!("head -c 104857600 /dev/zero; {PASS}"), &[]);
    assert_eq!(code, 4);
    assert!(
        stderr.len() < 17 << 20,
        "{} bytes reached stderr",
        stderr.len()
    );
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["stopped"], "output_cap", "{record:#}");
    assert_eq!(record["test_run"]["sandbox"], "namespaces");
    let p = outcome(&record, "test_command");
    assert_eq!(p["outcome"], "error");
    assert!(p["error"].as_str().unwrap().contains("output_cap"), "{p:#}");
}

#[test]
fn sleeping_past_the_wall_clock_limit_stops_the_test_command_and_rejects() {
    let trial = Trial::new();
    let (code, stderr) = trial.check(&format!("sleep 60; {PASS}"), &["--test-timeout", "1"]);
    assert_eq!(code, 4, "{stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["stopped"], "timeout", "{record:#}");
    assert_eq!(record["test_run"]["exit_code"], serde_json::Value::Null);
    assert_eq!(outcome(&record, "test_command")["outcome"], "error");
    assert!(record["junit"].is_null(), "{record:#}");
}

#[test]
fn a_test_command_that_writes_no_report_is_not_review() {
    let trial = Trial::new();
    let (code, stderr) = trial.check("true", &[]);
    assert_eq!(code, 4, "{stderr}");
    let record = trial.repo.properties("r");
    let p = outcome(&record, "test_command");
    assert!(p["error"].as_str().unwrap().contains("no report"), "{p:#}");
}

/// Runs `command` where the kernel refuses new user namespaces: inside a
/// user namespace whose `user.max_user_namespaces` is 0.
pub(crate) fn without_user_namespaces(mut command: std::process::Command) -> std::process::Output {
    let mut outer = in_user_namespace(
        r#"echo 0 > /proc/sys/user/max_user_namespaces && exec "$@""#,
        &command,
    );
    let out = outer
        .stdin(std::process::Stdio::null())
        .output()
        .expect("`unshare` (util-linux) is needed for this test");
    command.stdin(std::process::Stdio::null());
    out
}

#[test]
fn without_namespaces_the_test_command_is_refused_unless_allowed_unsandboxed() {
    let trial = Trial::new();
    let cmd = attack(r#"test -n "$SECRET_TOKEN""#);
    let out = without_user_namespaces(trial.command(&["--test-cmd", &cmd, "--no-test-baseline"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(65), "{stderr}");
    assert!(stderr.contains("--allow-unsandboxed"), "{stderr}");
    assert!(
        !trial.ledger().join("properties/r.json").exists(),
        "a refused run wrote a property record"
    );

    let out = without_user_namespaces(trial.command(&[
        "--test-cmd",
        &cmd,
        "--allow-unsandboxed",
        "--no-test-baseline",
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["sandbox"], "none", "{record:#}");
    assert_eq!(record["test_run"]["network"], "allowed");
    // Even unsandboxed, the environment is scrubbed.
    assert_eq!(outcome(&record, "tests_pass")["outcome"], "miss");
}

/// A configuration with one property, `p`, run by the component at `plugin`.
fn one_property(dir: &Path, plugin: &Path) -> PathBuf {
    let config = dir.join(format!(
        "{}.toml",
        plugin.file_stem().unwrap().to_string_lossy()
    ));
    write(
        &config,
        format!(
            "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"p\"\nplugin = {plugin:?}\n[property.config]\nmode = \"empty-miss\"\nallowed_4xx = \"429\"\n"
        ),
    );
    config
}

#[test]
fn a_forged_cache_entry_is_recompiled_not_loaded() {
    let trial = Trial::new();
    let configs = tempdir();
    // The impostor misses on this trial; the real plugin holds.
    let impostor = component("hostile");
    let real = component("retry_oracle");
    let (code, stderr) = trial.check_with_config("s", &one_property(configs.path(), &impostor));
    assert_eq!(code, 4, "{stderr}");
    let key = trial.state.path().join("agent-ledger/cache.key");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&key), 0o600);
        assert_eq!(mode(key.parent().unwrap()), 0o700);
        assert_eq!(std::fs::metadata(&key).unwrap().len(), 32);
    }
    let sha = |p: &Path| agent_ledger::digest::sha256_hex(&std::fs::read(p).unwrap());
    let impostor_entry = files_in(trial.cache.path())
        .into_iter()
        .find(|f| f.starts_with(&sha(&impostor)) && f.ends_with(".cwasm"))
        .expect("the impostor was cached");
    let engine = impostor_entry
        .trim_end_matches(".cwasm")
        .rsplit('-')
        .next()
        .unwrap()
        .to_string();
    // The forgery: the impostor's compiled code (a valid entry, tag and
    // all) under the real plugin's name, with a digest sidecar to match.
    let forged = trial
        .cache
        .path()
        .join(format!("{}-{engine}.cwasm", sha(&real)));
    let bytes = std::fs::read(trial.cache.path().join(&impostor_entry)).unwrap();
    std::fs::write(&forged, &bytes).unwrap();
    std::fs::write(
        forged.with_extension("cwasm.sha256"),
        agent_ledger::digest::sha256_hex(&bytes),
    )
    .unwrap();

    let (code, stderr) = trial.check_with_config("r", &one_property(configs.path(), &real));
    assert_eq!(code, 0, "the forged entry was loaded: {stderr}");
    let record = trial.repo.properties("r");
    let p = outcome(&record, "p");
    assert_eq!(p["outcome"], "holds", "{p:#}");
    assert_eq!(p["plugin_sha256"], sha(&real));
    // Recompiled and written back under a valid tag.
    assert_ne!(std::fs::read(&forged).unwrap(), bytes);
}

#[test]
fn a_cache_entry_with_a_wrong_key_is_recompiled() {
    let trial = Trial::new();
    let configs = tempdir();
    let real = component("retry_oracle");
    let config = one_property(configs.path(), &real);
    assert_eq!(trial.check_with_config("s", &config).0, 0);
    // Another key: every entry written under the old one is in doubt.
    let key = trial.state.path().join("agent-ledger/cache.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    let entries: Vec<PathBuf> = files_in(trial.cache.path())
        .into_iter()
        .map(|f| trial.cache.path().join(f))
        .collect();
    let before: Vec<Vec<u8>> = entries.iter().map(|e| std::fs::read(e).unwrap()).collect();
    assert_eq!(trial.check_with_config("r", &config).0, 0);
    for (entry, old) in entries.iter().zip(&before) {
        assert_ne!(
            &std::fs::read(entry).unwrap(),
            old,
            "{} was reused",
            entry.display()
        );
    }
}

#[test]
fn a_component_with_an_unknown_import_is_refused_before_it_is_compiled() {
    let trial = Trial::new();
    let configs = tempdir();
    // A real component with one import renamed off the allowlist.
    let renamed = crate::support::wasm_names::rename_imports(
        &std::fs::read(component("hostile_socket")).unwrap(),
        |n| {
            if n.starts_with("wasi:sockets/udp@") {
                "wasi:unknown/x@0.2.0".into()
            } else {
                n.to_string()
            }
        },
    );
    let path = configs.path().join("unknown.wasm");
    std::fs::write(&path, &renamed).unwrap();
    let (code, stderr) = trial.check_with_config("r", &one_property(configs.path(), &path));
    assert_eq!(code, 4, "{stderr}");
    let record = trial.repo.properties("r");
    let p = outcome(&record, "p");
    assert_eq!(p["outcome"], "error");
    assert!(
        p["error"]
            .as_str()
            .unwrap()
            .contains("`wasi:unknown/x@0.2.0`"),
        "{p:#}"
    );
    // Compiling would have left an entry (every compiled component that is
    // accepted is cached, and nothing else compiles in this trial).
    let sha = agent_ledger::digest::sha256_hex(&renamed);
    assert_eq!(files_in(trial.cache.path()), Vec::<String>::new(), "{sha}");
}

impl Trial {
    fn check_with_config(&self, run: &str, config: &Path) -> (i32, String) {
        let out = self
            .command_for(run, &["--config", config.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[test]
fn the_test_command_cannot_rewrite_a_locked_fixture() {
    // The lock is compared with the patched tree before the suite runs; a
    // suite that rewrote a fixture at run time (to match a wrong fix) would
    // be tested against bytes nobody locked.
    let trial = Trial::new();
    let record = contained(
        &trial,
        "printf '{\"forged\": true}' > tests/fixtures/backoff.json 2>/dev/null",
    );
    assert_eq!(record["test_run"]["exit_code"], 0, "{record:#}");
    // Nor by removing it: the directory is read-only too.
    contained(
        &Trial::new(),
        "rm -f tests/fixtures/backoff.json 2>/dev/null && ! test -e tests/fixtures/backoff.json",
    );
}

/// Runs `command` with a terminal of its own (a pty `script` makes), as
/// an operator's shell runs `check`; returns the exit code and what the
/// terminal showed.
fn on_a_terminal(command: std::process::Command) -> (i32, String) {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
    let mut line = quote(command.get_program());
    for a in command.get_args() {
        line.push(' ');
        line.push_str(&quote(a));
    }
    let mut script = std::process::Command::new("script");
    script
        .args(["-qec", &line, "/dev/null"])
        .current_dir(command.get_current_dir().unwrap())
        .stdin(std::process::Stdio::null());
    for (k, v) in command.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let out = script
        .output()
        .expect("util-linux `script` runs the check on a pty");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

// Issue 21's first attack: the test command kept the operator's session
// and `/dev/tty`, so it could push keystrokes (TIOCSTI) that the
// operator's shell runs after `check` returns. Here the attack injects a
// line into the terminal it finds; the test command claims a pass only
// when the injection worked.
#[test]
fn the_test_command_cannot_push_keystrokes_into_the_operators_terminal() {
    let trial = Trial::new();
    let inject = r##"python3 -c 'import fcntl, os, termios
ok = False
for fd in [0, 1, 2]:
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"#")
        ok = True
    except OSError:
        pass
try:
    t = os.open("/dev/tty", os.O_RDWR)
    for c in b"echo INJECTED-BY-TEST\n":
        fcntl.ioctl(t, termios.TIOCSTI, bytes([c]))
    ok = True
except OSError:
    pass
raise SystemExit(0 if ok else 1)'"##;
    let cmd = attack(inject);
    let mut c = trial.command(&["--test-cmd", &cmd, "--no-test-baseline"]);
    c.stdout(std::process::Stdio::piped());
    let (code, screen) = on_a_terminal(c);
    assert_eq!(code, 4, "{screen}");
    // Every injection failed (the command printed and claimed nothing).
    let record = trial.repo.properties("r");
    assert_miss(&record, "tests_pass", "", "the attack failed");
}

// The sandbox's own `/dev` (no terminal in it) still serves the devices a
// suite opens: pytest's log file handler opens `/dev/null` for writing.
#[test]
fn the_sandbox_devices_open_for_reading_and_writing() {
    let trial = Trial::new();
    let (code, stderr) = trial.check(
        &format!("echo x > /dev/null && head -c 8 /dev/urandom >/dev/null && head -c 8 /dev/zero > /dev/full; test ! -e /dev/tty && {PASS}"),
        &["--no-test-baseline"],
    );
    assert_eq!(code, 0, "{stderr}");
}

/// Output the test command prints reaches the terminal (when asked for)
/// escaped, as all untrusted text does: an escape sequence cannot retitle
/// or recolour it.
#[test]
fn the_test_commands_output_reaches_the_terminal_escaped() {
    let trial = Trial::new();
    let cmd = format!("printf '\\033]0;pwned\\007\\033[31mRED\\n'; {PASS}");
    let c = trial.command(&[
        "--test-cmd",
        &cmd,
        "--no-test-baseline",
        "--show-test-output",
    ]);
    let (code, screen) = on_a_terminal(c);
    assert_eq!(code, 0, "{screen}");
    assert!(
        !screen.contains('\u{1b}') || !screen.contains("]0;pwned"),
        "{screen:?}"
    );
    assert!(screen.contains("\\u{1b}]0;pwned"), "{screen:?}");
}

// Issue 39's twelfth class: the suite's output started lines of our
// stderr, so a CI runner read `::error`/`::stop-commands::` as commands and
// a reader a forged verdict. Every line shown is behind the prefix.
#[test]
fn no_line_of_the_test_commands_output_starts_where_it_chose() {
    let trial = Trial::new();
    let cmd = format!(
        "printf 'partial'; printf '\\n::error file=src/a.py::forged\\n' >&2; printf '\\r::stop-commands::tok\\nverdict: review (exit 0) forged\\n'; printf 'tail forged ##[error]legacy'; {PASS}"
    );
    let out = trial
        .command(&[
            "--test-cmd",
            &cmd,
            "--no-test-baseline",
            "--show-test-output",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let shown: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("forged") || l.contains("partial") || l.contains("stop-commands"))
        .collect();
    assert_eq!(shown.len(), 4, "{stderr}");
    for line in shown {
        assert!(
            line.starts_with("test | "),
            "a line of the suite's own: {line:?}\n{stderr}"
        );
    }
    // GitHub obeys `##[command]` anywhere in a line.
    assert!(!stderr.contains("##["), "{stderr}");
}

// Issue 21's third attack: the fixture root was read-only but its parent
// was not; renaming the parent away, recreating the fixture and renaming
// back made a wrong fix pass a golden-file test. Every ancestor of a
// locked root is a mount point of its own now, which no rename moves.
#[test]
fn the_test_command_cannot_swap_a_locked_fixture_by_renaming_its_parent() {
    contained(
        &Trial::new(),
        "mv tests tests.away 2>/dev/null && mkdir -p tests/fixtures && printf '{\"forged\": true}' > tests/fixtures/backoff.json && grep -q forged tests/fixtures/backoff.json",
    );
}

#[test]
fn a_non_zero_exit_with_a_green_report_is_not_review() {
    // The report is written by the code under test; the runner's exit
    // status is its own account. A green report from a failing run (an
    // atexit hook forging the report, say) must not pass.
    let trial = Trial::new();
    let (code, stderr) = trial.check(&format!("{PASS}; exit 7"), &[]);
    assert_eq!(code, 4, "{stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["exit_code"], 7, "{record:#}");
    let p = outcome(&record, "test_command");
    assert_eq!(p["outcome"], "error", "{p:#}");
    assert!(p["error"].as_str().unwrap().contains("exited 7"), "{p:#}");
    // A failing report explains a non-zero status: judged by tests_pass.
    let trial = Trial::new();
    let (code, stderr) = trial.check(&format!("{FAIL}; exit 1"), &["--no-test-baseline"]);
    assert_eq!(code, 4, "{stderr}");
    let record = trial.repo.properties("r");
    assert!(
        record["properties"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["name"] != "test_command"),
        "{record:#}"
    );
    assert_eq!(outcome(&record, "tests_pass")["outcome"], "miss");
}

#[test]
fn a_fork_bomb_in_the_test_command_fails_to_fork_past_the_cap() {
    let trial = Trial::new();
    // 200 processes at once, each alive for 30 s, then a pass claimed.
    // Past a cap of 64 a fork fails and the subshell gives up, so the
    // suite reports the failure; as root (to whom the kernel applies no
    // process limit) the host stops the command instead.
    let bomb = "( i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; sleep 2 ) 2>/dev/null";
    let (code, stderr) = trial.check(
        &attack(bomb),
        &["--test-max-procs", "64", "--no-test-baseline"],
    );
    assert_eq!(code, 4, "not reject: {stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["sandbox"], "namespaces", "{record:#}");
    // Forks fail past the cap (RLIMIT_NPROC, or the pids cgroup as root),
    // or, as root without a cgroup, the host stops the command.
    if record["test_run"]["stopped"].is_null() {
        assert_miss(&record, "tests_pass", "", "the attack failed");
    } else {
        assert!(host_root(), "{record:#}");
        assert_eq!(record["test_run"]["stopped"], "process_cap", "{record:#}");
        assert_eq!(outcome(&record, "test_command")["outcome"], "error");
    }
}

/// Runs `hog` (which claims a pass once it holds its memory) under
/// `--test-memory 200` and `extra`: the host must stop it (`why`) and the
/// trial is not `review`.
#[track_caller]
fn stopped_for(hog: &str, why: &str, extra: &[&str]) -> serde_json::Value {
    let trial = Trial::new();
    let (code, stderr) = trial.check(
        &format!("{hog} && {PASS}"),
        &[&["--test-memory", "200"], extra].concat(),
    );
    assert_eq!(code, 4, "not reject: {stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["stopped"], why, "{record:#}");
    let p = outcome(&record, "test_command");
    assert_eq!(p["outcome"], "error");
    assert!(p["error"].as_str().unwrap().contains(why), "{p:#}");
    record
}

#[track_caller]
fn stopped_for_memory(hog: &str) {
    let record = stopped_for(hog, "memory_cap", &[]);
    assert_eq!(record["test_run"]["baseline"]["stopped"], "memory_cap");
}

/// Holds 300 MiB in a Python process through `how` (a statement using
/// `n`, the byte count, and `os`/`mmap`), then sleeps.
fn python_hog(how: &str) -> String {
    format!("python3 -c \"import mmap, os, time; n = 300 << 20; {how}; time.sleep(10)\"")
}

// Memory the kernel keeps as shared memory, or in a namespace of the
// command's own making, was not counted.
#[test]
fn a_memfd_that_is_written_and_never_mapped_counts_towards_the_cap() {
    stopped_for(
        &python_hog("fd = os.memfd_create('hoard'); os.write(fd, b'x' * n)"),
        "memory_cap",
        &["--no-test-baseline"],
    );
}

#[test]
fn shared_anonymous_memory_counts_towards_the_cap() {
    stopped_for(
        &python_hog("m = mmap.mmap(-1, n); m.write(b'x' * n)"),
        "memory_cap",
        &["--no-test-baseline"],
    );
}

#[test]
fn memory_in_a_nested_pid_namespace_counts_towards_the_cap() {
    stopped_for(
        &format!("unshare -Urpf {}", python_hog("b = b'x' * n")),
        "memory_cap",
        &["--no-test-baseline"],
    );
}

#[test]
fn detached_system_v_shared_memory_counts_towards_the_cap_as_root() {
    if !host_root() {
        // Only root may join the sandbox's IPC namespace to see it: a stated
        // limit (docs/design/threat-model.md), not something this test can
        // check.
        return;
    }
    let hog = "import ctypes, time; libc = ctypes.CDLL(None); libc.shmat.restype = ctypes.c_void_p; n = 300 << 20; i = libc.shmget(0, n, 0o1600); a = libc.shmat(i, None, 0); ctypes.memset(a, 1, n); libc.shmdt(ctypes.c_void_p(a))";
    stopped_for(
        &format!("python3 -c \"{hog}\" && sleep 10"),
        "memory_cap",
        &["--no-test-baseline"],
    );
}

#[test]
fn a_tmpfs_the_command_mounts_itself_counts_towards_the_cap() {
    stopped_for(
        "mkdir -p /tmp/mnt && unshare -Urm sh -c 'mount -t tmpfs none /tmp/mnt && head -c 314572800 /dev/zero > /tmp/mnt/hoard && sleep 10'",
        "memory_cap",
        &["--no-test-baseline"],
    );
}

#[test]
fn threads_count_towards_the_process_cap() {
    // 100 threads under a cap of 32: thread creation fails (no report is
    // written) or, as root, the host stops the command.
    let trial = Trial::new();
    let hog = "python3 -c \"import threading, time; [threading.Thread(target=time.sleep, args=(10,)).start() for _ in range(100)]\"";
    let (code, stderr) = trial.check(
        &format!("{hog} && {PASS}"),
        &["--no-test-baseline", "--test-max-procs", "32"],
    );
    assert_eq!(code, 4, "not reject: {stderr}");
    let record = trial.repo.properties("r");
    if record["test_run"]["stopped"].is_null() {
        assert!(record["junit"].is_null(), "{record:#}");
    } else {
        assert_eq!(record["test_run"]["stopped"], "process_cap", "{record:#}");
    }
}

#[test]
fn memory_held_by_many_processes_together_stops_the_test_command() {
    // Four processes of 100 MiB each: none is past the cap alone.
    stopped_for_memory(
        "for i in 1 2 3 4; do python3 -c \"import time; b = b'x' * (100 << 20); time.sleep(20)\" & done; sleep 10",
    );
}

#[test]
fn memory_kept_in_the_private_tmp_counts_towards_the_cap() {
    stopped_for_memory(
        "head -c 314572800 /dev/zero > /tmp/hoard && head -c 1 /tmp/hoard >/dev/null && sleep 10",
    );
}

// A command killed by a signal after its report claimed a pass was
// `review` (only a non-zero exit was compared with the report).
#[test]
fn a_test_command_killed_by_a_signal_after_a_green_report_is_not_review() {
    // In the sandbox the command is its PID namespace's init, which no
    // signal from inside kills; unsandboxed it is an ordinary process.
    let trial = Trial::new();
    let cmd = format!("{PASS}; kill -9 $$");
    let out = without_user_namespaces(trial.command(&["--test-cmd", &cmd, "--allow-unsandboxed"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "not reject: {stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["sandbox"], "none", "{record:#}");
    assert!(record["test_run"]["exit_code"].is_null(), "{record:#}");
    let p = outcome(&record, "test_command");
    assert_eq!(p["outcome"], "error", "{p:#}");
    assert!(
        p["error"].as_str().unwrap().contains("killed by a signal"),
        "{p:#}"
    );
}

// As root, the sandbox's uid was host uid 0, whom kernel interfaces trust
// without capabilities. A patch pointed `kernel.core_pattern` at its own
// script and the kernel ran it as host root; another raised its own
// cgroup's limits through a cgroupfs it mounted in a namespace of its own.
// Each attack writes back what is there.
#[test]
fn the_test_command_cannot_write_a_kernel_setting() {
    contained(
        &Trial::new(),
        "cat /proc/sys/kernel/core_pattern > /tmp/cp && cat /tmp/cp > /proc/sys/kernel/core_pattern",
    );
}

#[test]
fn the_test_command_cannot_raise_its_own_cgroup_limits() {
    contained(
        &Trial::new(),
        "mkdir -p /tmp/cg && unshare -UrmC sh -c 'mount -t cgroup -o memory none /tmp/cg && cat /tmp/cg/memory.limit_in_bytes > /tmp/l && cat /tmp/l > /tmp/cg/memory.limit_in_bytes'",
    );
}

// A command that cleared its init's death signal (with gdb; here the init
// clears its own) outlived a `--test-timeout` stop, reparented to the
// host's init.
#[test]
fn a_stopped_test_command_leaves_no_process_behind() {
    let trial = Trial::new();
    let marker = format!("agent-ledger-linger-{}", std::process::id());
    let cmd = format!(
        "exec python3 -c \"import ctypes, time; ctypes.CDLL(None).prctl(1, 0, 0, 0, 0); time.sleep(30)\" {marker}"
    );
    let (code, stderr) = trial.check(&cmd, &["--test-timeout", "2", "--no-test-baseline"]);
    assert_eq!(code, 4, "{stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["stopped"], "timeout", "{record:#}");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&marker) && !c.contains("--test-cmd"))
        .collect();
    assert!(left.is_empty(), "still running after check: {left:?}");
}

// A baseline that writes no report is an error, never a quiet pass without
// the comparison (another run beside it could starve it on purpose).
#[test]
fn a_baseline_without_a_report_is_an_error() {
    let trial = Trial::new();
    // The good patch renames README.md to README.txt: only the patched
    // tree writes a report.
    let (code, stderr) = trial.check(&format!("[ -f README.txt ] && {PASS}"), &[]);
    assert_eq!(code, 4, "{stderr}");
    let record = trial.repo.properties("r");
    assert!(record["base_junit"].is_null(), "{record:#}");
    let p = outcome(&record, "test_command");
    assert_eq!(p["outcome"], "error", "{p:#}");
    assert!(
        p["error"]
            .as_str()
            .unwrap()
            .contains("on the base revision"),
        "{p:#}"
    );
}

/// The test command's output goes to `properties/ID.test.log` (named in
/// the record, checked by `verify`), not the terminal, unless asked.
#[test]
fn the_test_commands_output_goes_to_a_log_beside_the_record_not_the_terminal() {
    let trial = Trial::new();
    let cmd = format!("echo OUT-LINE-1; echo ERR-LINE-1 >&2; {PASS}");
    let (code, stderr) = trial.check(&cmd, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("OUT-LINE-1") && !stderr.contains("ERR-LINE-1"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(trial.ledger().join("properties/r.test.log")).unwrap();
    assert_eq!(
        log,
        "==> stdout <==\nOUT-LINE-1\n==> stderr <==\nERR-LINE-1\n"
    );
    let record = trial.repo.properties("r");
    let stored = &record["test_run"]["log"];
    assert_eq!(stored["file"], "r.test.log");
    assert_eq!(stored["bytes"], log.len());
    // Tampering with the log is what verify finds.
    let out = run(trial.repo.path(), &["verify", "--run", "r"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    std::fs::write(trial.ledger().join("properties/r.test.log"), "all green\n").unwrap();
    let out = run(trial.repo.path(), &["verify", "--run", "r"]);
    assert_eq!(out.code, 5, "{}{}", out.stdout, out.stderr);
    // Asked for, it is shown too.
    let (code, stderr) = trial.check_run("s", &cmd, &["--show-test-output"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("OUT-LINE-1") && stderr.contains("ERR-LINE-1"),
        "{stderr}"
    );
}
