//! The compile cache as CI shares it: `plugin precompile` fills it, a
//! shared key (`AGENT_LEDGER_CACHE_KEY`) lets another machine trust it, and
//! nothing agent-ledger starts inherits that key.

use crate::support::*;
use std::path::Path;
use std::process::Command;

const KEY: &str = "5e1f0c8a9b7d6e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f";

/// agent-ledger on a "machine" of its own (its own per-user state), with
/// the cache directory `cache` and, when given, the shared key.
fn machine(dir: &Path, state: &Path, cache: &Path, key: Option<&str>) -> Command {
    let mut cmd = command(dir);
    cmd.env("XDG_STATE_HOME", state)
        .env("AGENT_LEDGER_CACHE_DIR", cache);
    match key {
        Some(k) => cmd.env("AGENT_LEDGER_CACHE_KEY", k),
        None => cmd.env_remove("AGENT_LEDGER_CACHE_KEY"),
    };
    cmd
}

fn inspect_compiled(cmd: Command, plugin: &Path) -> bool {
    let out = run_command(
        cmd,
        &[
            "plugin",
            "inspect",
            plugin.to_str().unwrap(),
            "--format",
            "json",
        ],
        None,
    );
    out.assert_code(0);
    out.json()["compiled"].as_bool().unwrap()
}

#[test]
fn a_precompiled_cache_is_trusted_on_another_machine_only_under_the_shared_key() {
    let dir = tempdir();
    let cache = dir.path().join("restored-cache");
    let plugin = component("retry_oracle");
    let (a, b, fork) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("fork"),
    );
    // The image build (machine a) warms the cache under the shared key.
    let out = run_command(
        machine(dir.path(), &a, &cache, Some(KEY)),
        &[
            "plugin",
            "precompile",
            plugin.to_str().unwrap(),
            "builtin:tests_pass",
            "--format",
            "json",
        ],
        None,
    );
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["key"], "AGENT_LEDGER_CACHE_KEY");
    assert_eq!(v["plugins"][0]["compiled"], true, "{v}");
    assert_eq!(v["plugins"][1]["name"], "tests_pass", "{v}");
    // A job on machine b with the same key loads it without compiling.
    assert!(!inspect_compiled(
        machine(dir.path(), &b, &cache, Some(KEY)),
        &plugin
    ));
    // A fork's pull request has no secret: its per-user key does not
    // verify the entries, so it compiles.
    assert!(inspect_compiled(
        machine(dir.path(), &fork, &cache, None),
        &plugin
    ));
    // Nor does another key (whoever wrote entries under it).
    let other = KEY.replace('5', "6");
    assert!(inspect_compiled(
        machine(dir.path(), &b, &cache, Some(&other)),
        &plugin
    ));
}

#[test]
fn precompile_refuses_what_check_would_refuse_and_caches_nothing_for_it() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let junk = dir.path().join("junk.wasm");
    write(&junk, "\0asm not really");
    let out = run_command(
        machine(dir.path(), &dir.path().join("s"), &cache, None),
        &["plugin", "precompile", junk.to_str().unwrap()],
        None,
    );
    out.assert_code(65);
    assert!(out.stdout.contains("refused: "), "{}", out.stdout);
    let cached = std::fs::read_dir(&cache)
        .map(|d| d.filter_map(|e| e.ok()).count())
        .unwrap_or(0);
    assert_eq!(cached, 0);
}

#[test]
fn a_malformed_shared_key_is_a_usage_error_naming_the_variable() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    for bad in ["", "abc", &KEY[..62], &format!("{KEY}00"), &"0".repeat(64)] {
        let out = run_command(
            machine(dir.path(), &dir.path().join("s"), &cache, Some(bad)),
            &["plugin", "precompile"],
            None,
        );
        out.assert_code(64);
        assert!(
            out.stderr
                .contains("AGENT_LEDGER_CACHE_KEY must be 64 hex digits")
                || out
                    .stderr
                    .contains("AGENT_LEDGER_CACHE_KEY is one byte repeated"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn no_process_agent_ledger_starts_inherits_the_shared_key() {
    // The agent's and the test command's environments are built from
    // nothing; git's is this process's, less git's own variables. A `git`
    // first on PATH records what it was given.
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let real = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap();
    let bin = scratch.path().join("bin");
    let dumps = scratch.path().join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    write(
        &bin.join("git"),
        format!(
            "#!/bin/sh\nenv > \"{}/env.$$\"\nexec {} \"$@\"\n",
            dumps.display(),
            real.trim()
        ),
    );
    let chmod = Command::new("chmod")
        .arg("+x")
        .arg(bin.join("git"))
        .status()
        .unwrap();
    assert!(chmod.success());
    let trace = scratch.path().join("trace.jsonl");
    write(&trace, "");
    let mut cmd = machine(
        repo.path(),
        &scratch.path().join("s"),
        &scratch.path().join("c"),
        Some(KEY),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    cmd.env("PATH", path).env("MARKER_PASSED_THROUGH", "1");
    let out = run_command(
        cmd,
        &["reconcile", "--trace", trace.to_str().unwrap()],
        None,
    );
    out.assert_code(0);
    let seen: Vec<String> = std::fs::read_dir(&dumps)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(!seen.is_empty(), "reconcile ran no git");
    for env in &seen {
        assert!(env.contains("MARKER_PASSED_THROUGH=1"), "{env}");
        assert!(!env.contains("AGENT_LEDGER_CACHE_KEY"), "{env}");
        assert!(!env.contains(KEY), "{env}");
    }
}

#[test]
fn the_shared_key_is_not_left_in_the_processs_own_environment_block() {
    // `/proc/PID/environ` shows the block a process started with, whatever
    // it later removes, to any process of the same user: read it while
    // agent-ledger waits for a command it runs.
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let trace = scratch.path().join("trace.jsonl");
    let mut cmd = machine(
        repo.path(),
        &scratch.path().join("s"),
        &scratch.path().join("c"),
        Some(KEY),
    );
    cmd.env("MARKER_PASSED_THROUGH", "1")
        .args([
            "trace",
            "exec",
            "--trace",
            trace.to_str().unwrap(),
            "--",
            "sleep",
            "3",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let environ = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap();
    let _ = child.wait();
    let environ = String::from_utf8_lossy(&environ);
    // The block was read (the marker is in it) ...
    assert!(environ.contains("MARKER_PASSED_THROUGH=1"), "{environ}");
    // ... and the key's value is gone from it.
    assert!(!environ.contains(KEY), "{environ}");
}

#[test]
fn a_fifo_or_a_device_in_the_cache_is_passed_over_not_waited_on() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let state = dir.path().join("s");
    let plugin = component("retry_oracle");
    let precompile = || {
        let out = run_command(
            machine(dir.path(), &state, &cache, None),
            &[
                "plugin",
                "precompile",
                plugin.to_str().unwrap(),
                "--format",
                "json",
            ],
            None,
        );
        out.assert_code(0);
    };
    precompile();
    let entry = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .unwrap();
    // A FIFO: opening it to read would wait for a writer forever.
    std::fs::remove_file(&entry).unwrap();
    let made = Command::new("mkfifo").arg(&entry).status().unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let (cache2, state2, plugin2, root) = (
        cache.clone(),
        state.clone(),
        plugin.clone(),
        dir.path().to_path_buf(),
    );
    std::thread::spawn(move || {
        let compiled = inspect_compiled(machine(&root, &state2, &cache2, None), &plugin2);
        let _ = tx.send(compiled);
    });
    let compiled = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("a FIFO in the compile cache was waited on");
    assert!(compiled, "a FIFO was taken for a compiled component");
    // A symlink to a device: never followed.
    std::fs::remove_file(&entry).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &entry).unwrap();
    assert!(inspect_compiled(
        machine(dir.path(), &state, &cache, None),
        &plugin
    ));
}
