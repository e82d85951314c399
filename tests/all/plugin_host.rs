//! The host side of plugins built with other toolchains: network imports
//! that load and trap when called, WASI version skew, refusals before
//! compiling, and `plugin test` / `plugin inspect`.

use crate::support::wasm_names::{
    async_component, import_names, rename_imports, uncompilable_importing, with_wasi_version,
};
use crate::support::*;
use agent_ledger::wasm::{HOST_WASI_VERSION, Limits, Mounts, Sandbox, TrialInput};
use std::path::{Path, PathBuf};

fn bytes_of(name: &str) -> Vec<u8> {
    std::fs::read(component(name)).unwrap()
}

fn files_in(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Runs `check` of a loaded component with `mode` in its configuration on
/// empty trees; returns (outcome, error, stderr).
fn run_mode(sandbox: &Sandbox, bytes: &[u8], mode: &str) -> (String, Option<String>, String) {
    let plugin = sandbox
        .load(bytes)
        .unwrap_or_else(|r| panic!("refused: {}", r.0));
    let dir = tempdir();
    let mounts = Mounts {
        patched: dir.path(),
        base: dir.path(),
        inputs: dir.path(),
    };
    let trial = TrialInput {
        run_id: "r".into(),
        base_revision: "0".repeat(40),
        patch: Vec::new(),
        changes: Vec::new(),
        config: vec![("mode".into(), mode.into()), ("path".into(), "x".into())],
    };
    let run = sandbox.run(&plugin, &trial, &mounts, &Limits::default(), [1; 32]);
    (run.outcome.as_str().to_string(), run.error, run.stderr)
}

/// The import of `bytes` whose name starts with `prefix`.
fn import_named(bytes: &[u8], prefix: &str) -> String {
    import_names(bytes)
        .into_iter()
        .find(|n| n.starts_with(prefix))
        .unwrap_or_else(|| panic!("no import `{prefix}*`"))
}

/// `check` of the good patch with `plugin` as the one property, in `mode`.
fn check_one(plugin: &Path, mode: &str) -> (DemoRepo, i32, serde_json::Value) {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let dir = tempdir();
    let config = dir.path().join("one.toml");
    write(
        &config,
        format!(
            "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"p\"\nplugin = {plugin:?}\n[property.config]\nmode = {mode:?}\n"
        ),
    );
    let out = repo.check("r", &["--config", config.to_str().unwrap()]);
    let record = repo.properties("r");
    let p = outcome(&record, "p").clone();
    (repo, out.code, p)
}

#[test]
fn an_unused_socket_import_holds_and_the_record_lists_the_stubs() {
    let socket = component("hostile_socket");
    let bytes = std::fs::read(&socket).unwrap();
    let (_, code, p) = check_one(&socket, "idle");
    assert_eq!(code, 0, "{p:#}");
    assert_eq!(p["outcome"], "holds", "{p:#}");
    let mut expected: Vec<String> = import_names(&bytes)
        .into_iter()
        .filter(|n| n.starts_with("wasi:sockets/"))
        .collect();
    expected.sort();
    assert!(expected.len() >= 5, "{expected:?}");
    assert_eq!(p["stubbed_imports"], serde_json::json!(expected), "{p:#}");
}

#[test]
fn calling_a_socket_function_is_an_error_naming_interface_and_function() {
    let socket = component("hostile_socket");
    let bytes = std::fs::read(&socket).unwrap();
    let (repo, code, p) = check_one(&socket, "connect");
    assert_eq!(code, 4, "{p:#}");
    assert_eq!(p["outcome"], "error", "{p:#}");
    // Rust's `TcpStream::connect` makes a socket first.
    let interface = import_named(&bytes, "wasi:sockets/tcp-create-socket@");
    assert_eq!(
        p["error"],
        format!("network access is refused ({interface}#create-tcp-socket called)")
    );
    assert!(!p["stdout"].as_str().unwrap().contains("ESCAPED"));
    // The network is refused, not the plugin: its imports are listed.
    assert!(!p["stubbed_imports"].as_array().unwrap().is_empty());
    assert!(
        repo.path()
            .join(".agent-ledger/properties/r.json")
            .is_file()
    );
}

/// The same components with every WASI import at 0.2.0, 0.2.3 and the
/// host's own (newest) 0.2.x: linked interfaces resolve by semver and work,
/// network ones are stubbed under the guest's own names.
#[test]
fn wasi_imports_at_any_0_2_version_link() {
    let sandbox = Sandbox::new(None).unwrap();
    for version in ["0.2.0", "0.2.3", HOST_WASI_VERSION] {
        let socket = with_wasi_version(&bytes_of("hostile_socket"), version);
        assert!(
            import_names(&socket)
                .iter()
                .filter(|n| n.starts_with("wasi:"))
                .all(|n| n.ends_with(&format!("@{version}"))),
            "{:?}",
            import_names(&socket)
        );
        let plugin = sandbox.load(&socket).unwrap();
        assert!(
            !plugin.stubbed.is_empty()
                && plugin
                    .stubbed
                    .iter()
                    .all(|n| n.starts_with("wasi:sockets/") && n.ends_with(&format!("@{version}"))),
            "{version}: {:?}",
            plugin.stubbed
        );
        assert_eq!(run_mode(&sandbox, &socket, "idle").0, "holds", "{version}");
        let (outcome, error, _) = run_mode(&sandbox, &socket, "connect");
        assert_eq!(outcome, "error");
        assert_eq!(
            error.as_deref(),
            Some(
                format!(
                    "network access is refused (wasi:sockets/tcp-create-socket@{version}#create-tcp-socket called)"
                )
                .as_str()
            ),
            "{version}"
        );

        // Clocks, stderr and the environment, each at `version`.
        let hostile = with_wasi_version(&bytes_of("hostile"), version);
        let (outcome, _, _) = run_mode(&sandbox, &hostile, "clock");
        assert_eq!(
            outcome, "miss",
            "{version}: the clock mode misses with the time"
        );
        let (_, error, stderr) = run_mode(&sandbox, &hostile, "panic");
        assert!(error.unwrap().contains("unreachable"), "{version}");
        assert!(stderr.contains("panics on purpose"), "{version}: {stderr}");
        let (_, error, _) = run_mode(&sandbox, &hostile, "env");
        assert!(
            error
                .unwrap()
                .contains("no environment variables and no arguments"),
            "{version}"
        );
    }
}

/// Imports that stay refused: checked from the bytes, so the refusal names
/// the import even though compiling would fail, and nothing is cached.
#[test]
fn other_imports_are_refused_before_compiling_and_never_cached() {
    let cache = plain_tempdir();
    let sandbox = Sandbox::new(Some(cache.path().to_path_buf())).unwrap();
    for (name, why) in [
        ("wasi:unknown/x@0.2.0", "not on the allowlist"),
        (
            "wasi:http/types@0.3.0",
            "jco: build with `--disable http fetch-event`",
        ),
        (
            "wasi:sockets/tcp@0.3.0",
            "only WASI 0.2.x network imports can be stubbed",
        ),
        ("wasi:sockets/tcp", "network access is refused"),
        ("wasi:io/streams@0.3.0", "this host provides WASI 0.2"),
        ("jco:node/fs", "use `wasi:filesystem` instead of `node:fs`"),
    ] {
        let refusal = match sandbox.load(&uncompilable_importing(name)) {
            Ok(_) => panic!("`{name}` loaded"),
            Err(r) => r.0,
        };
        assert!(
            refusal.contains(&format!("`{name}`")) && refusal.contains(why),
            "{name}: {refusal}"
        );
        assert!(!refusal.contains("does not compile"), "{refusal}");
    }
    // A real component with one import renamed off the allowlist.
    let renamed = rename_imports(&bytes_of("hostile_socket"), |n| {
        if n.starts_with("wasi:sockets/udp@") {
            "wasi:unknown/x@0.2.0".into()
        } else {
            n.to_string()
        }
    });
    let refusal = sandbox.load(&renamed).err().unwrap().0;
    assert!(refusal.contains("`wasi:unknown/x@0.2.0`"), "{refusal}");
    assert_eq!(files_in(cache.path()), Vec::<String>::new());
}

#[test]
fn component_model_async_is_refused_naming_the_quickjs_flag() {
    let sandbox = Sandbox::new(None).unwrap();
    let refusal = sandbox.load(&async_component()).err().unwrap().0;
    assert!(
        refusal.contains("component-model async")
            && refusal.contains("--backend-qjs-disable-async"),
        "{refusal}"
    );
}

#[test]
fn a_stubbed_http_import_loads_and_traps_under_its_own_name() {
    // Interfaces named `wasi:http/*` at 0.2.10 (what StarlingMonkey
    // imports), standing in for the real ones: stubs are made from the
    // component's own import types, whatever they are.
    let http = rename_imports(&bytes_of("hostile_socket"), |n| match n.split_once('@') {
        Some((bare, _)) if bare.starts_with("wasi:sockets/") => {
            format!("wasi:http/{}@0.2.10", &bare["wasi:sockets/".len()..])
        }
        _ => n.to_string(),
    });
    let sandbox = Sandbox::new(None).unwrap();
    let plugin = sandbox.load(&http).unwrap();
    assert!(plugin.stubbed.iter().all(|n| n.starts_with("wasi:http/")));
    assert_eq!(run_mode(&sandbox, &http, "idle").0, "holds");
    assert_eq!(
        run_mode(&sandbox, &http, "connect").1.as_deref(),
        Some(
            "network access is refused (wasi:http/tcp-create-socket@0.2.10#create-tcp-socket called)"
        )
    );
}

// ---- `plugin test` and `plugin inspect` ----

/// A built-in's component as a file, as a plugin author would have it.
fn builtin_file(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.wasm"));
    write(
        &path,
        agent_ledger::plugins::builtin(name).unwrap().component,
    );
    path
}

/// `plugin test PLUGIN --repo REPO --base BASE --patch fixtures/patches/PATCH.diff EXTRA...`.
fn plugin_test(repo: &DemoRepo, plugin: &Path, patch: &str, extra: &[&str]) -> Output {
    let cache = cache_dir();
    let patch = fixture(&format!("patches/{patch}.diff"));
    let mut args = vec![
        "plugin",
        "test",
        plugin.to_str().unwrap(),
        "--repo",
        repo.path().to_str().unwrap(),
        "--base",
        &repo.base,
        "--patch",
        patch.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    // Run from elsewhere: nothing may depend on the current directory.
    let cwd = tempdir();
    run(cwd.path(), &args)
}

#[test]
fn plugin_test_prints_the_outcome_and_writes_nothing() {
    let repo = DemoRepo::new();
    let dir = tempdir();
    let plugin = builtin_file(dir.path(), "tests_not_deleted");
    let before = repo.digest();

    let out = plugin_test(&repo, &plugin, "deletes-test", &["--format", "json"]);
    out.assert_code(4);
    let v = out.json();
    assert_eq!(v["name"], "tests_not_deleted");
    assert_eq!(v["run"]["outcome"], "miss");
    assert!(
        v["run"]["findings"][0]["path"]
            .as_str()
            .unwrap()
            .starts_with("tests/"),
        "{v:#}"
    );
    assert!(v["run"]["fuel_used"].as_u64().unwrap() > 0);
    let peak = v["run"]["peak_memory_bytes"].as_u64().unwrap();
    assert!(peak > 0 && peak <= v["run"]["memory_limit_bytes"].as_u64().unwrap());
    assert!(v["run"]["wall_ms"].is_u64());
    assert!(
        v["imports"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["disposition"] == "linked")
    );

    let out = plugin_test(&repo, &plugin, "good", &[]);
    out.assert_code(0);
    assert!(out.stdout.contains("outcome: holds"), "{}", out.stdout);
    assert!(out.stdout.contains("peak memory: "), "{}", out.stdout);
    assert!(out.stdout.contains("wall time: "), "{}", out.stdout);

    assert_eq!(repo.digest(), before, "the repository changed");
    assert!(
        !repo.path().join(".agent-ledger").exists(),
        "a ledger was created"
    );
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
}

#[test]
fn plugin_test_runs_the_self_test_and_reports_vacuous() {
    let repo = DemoRepo::new();
    let dir = tempdir();
    let plugin = builtin_file(dir.path(), "tests_not_deleted");
    // It holds on the good patch, so with that as its known-bad it is vacuous.
    let known_bad = fixture("patches/good.diff");
    let out = plugin_test(
        &repo,
        &plugin,
        "good",
        &[
            "--known-bad",
            known_bad.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    out.assert_code(4);
    let v = out.json();
    assert_eq!(v["run"]["outcome"], "vacuous", "{v:#}");
    assert_eq!(v["run"]["self_test"], true);
    assert!(
        v["run"]["error"]
            .as_str()
            .unwrap()
            .contains(known_bad.to_str().unwrap()),
        "the message names the user's file: {v:#}"
    );
    // A known-bad patch it misses on: the trial runs.
    let known_bad = fixture("patches/deletes-test.diff");
    let out = plugin_test(
        &repo,
        &plugin,
        "good",
        &["--known-bad", known_bad.to_str().unwrap()],
    );
    out.assert_code(0);
    assert!(
        out.stdout.contains("outcome: holds (after the self-test"),
        "{}",
        out.stdout
    );
    assert!(!repo.path().join(".agent-ledger").exists());
}

#[test]
fn plugin_test_shows_stubbed_imports_settings_and_the_network_error() {
    let repo = DemoRepo::new();
    let socket = component("hostile_socket");
    let out = plugin_test(
        &repo,
        &socket,
        "good",
        &["--set", "mode=idle", "--format", "json"],
    );
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["run"]["outcome"], "holds");
    let stubbed = v["stubbed_imports"].as_array().unwrap();
    assert!(!stubbed.is_empty());
    assert!(
        v["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["disposition"] == "stubbed"
                && i["name"].as_str().unwrap().starts_with("wasi:sockets/tcp@"))
    );

    let out = plugin_test(&repo, &socket, "good", &[]);
    out.assert_code(4);
    assert!(out.stdout.contains("outcome: error"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("error: network access is refused (wasi:sockets/tcp-create-socket@"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  stubbed  wasi:sockets/tcp@"),
        "{}",
        out.stdout
    );
}

#[test]
fn plugin_test_shows_the_end_of_stderr_when_the_plugin_errors() {
    let repo = DemoRepo::new();
    let hostile = component("hostile");
    let out = plugin_test(&repo, &hostile, "good", &["--set", "mode=panic"]);
    out.assert_code(4);
    assert!(out.stdout.contains("stderr (its end):"), "{}", out.stdout);
    // Line by line, readable: not one escaped line.
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("  | ") && l.contains("hostile plugin panics on purpose")),
        "{}",
        out.stdout
    );
    let out = plugin_test(
        &repo,
        &hostile,
        "good",
        &["--set", "mode=panic", "--format", "json"],
    );
    let v = out.json();
    assert!(
        v["run"]["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("panics on purpose")
    );
}

#[test]
fn plugin_test_limits_come_from_flags() {
    let repo = DemoRepo::new();
    let hostile = component("hostile");
    let out = plugin_test(
        &repo,
        &hostile,
        "good",
        &[
            "--set",
            "mode=loop",
            "--fuel",
            "50000000",
            "--format",
            "json",
        ],
    );
    out.assert_code(4);
    let v = out.json();
    assert_eq!(v["run"]["error"], "fuel budget of 50000000 exhausted");
    assert_eq!(v["run"]["fuel_used"], 50000000);
    let out = plugin_test(
        &repo,
        &hostile,
        "good",
        &[
            "--set",
            "mode=memory",
            "--memory-mb",
            "64",
            "--format",
            "json",
        ],
    );
    let v = out.json();
    assert_eq!(v["run"]["memory_limit_bytes"], 64 << 20);
    assert!(
        v["run"]["error"]
            .as_str()
            .unwrap()
            .contains("memory cap of 67108864 bytes")
    );
}

#[test]
fn plugin_test_refuses_bad_input_with_sysexits() {
    let repo = DemoRepo::new();
    let dir = tempdir();
    let plugin = builtin_file(dir.path(), "tests_not_deleted");

    // A refused plugin: exit 65, with its imports and why.
    let refused = dir.path().join("refused.wasm");
    write(&refused, uncompilable_importing("jco:node/fs"));
    let out = plugin_test(&repo, &refused, "good", &["--format", "json"]);
    out.assert_code(65);
    let v = out.json();
    assert!(
        v["refused"].as_str().unwrap().contains("`jco:node/fs`"),
        "{v:#}"
    );
    assert_eq!(v["imports"][0]["disposition"], "refused");
    assert!(v.get("run").is_none());

    // A missing plugin or patch: 66.
    plugin_test(&repo, &dir.path().join("absent.wasm"), "good", &[]).assert_code(66);
    let cwd = tempdir();
    let out = run(
        cwd.path(),
        &[
            "plugin",
            "test",
            plugin.to_str().unwrap(),
            "--repo",
            repo.path().to_str().unwrap(),
            "--base",
            &repo.base,
            "--patch",
            dir.path().join("absent.diff").to_str().unwrap(),
        ],
    );
    out.assert_code(66);

    // A patch that does not apply, or is not a patch: 65.
    let out = plugin_test(&repo, &plugin, "does-not-apply", &[]);
    out.assert_code(65);
    assert!(out.stderr.contains("does not apply"), "{}", out.stderr);
    let junk = dir.path().join("junk.diff");
    write(&junk, "not a diff\n");
    let out = run(
        cwd.path(),
        &[
            "plugin",
            "test",
            plugin.to_str().unwrap(),
            "--repo",
            repo.path().to_str().unwrap(),
            "--base",
            &repo.base,
            "--patch",
            junk.to_str().unwrap(),
        ],
    );
    out.assert_code(65);

    // A malformed --set, or --ledger: usage, 64.
    plugin_test(&repo, &plugin, "good", &["--set", "novalue"]).assert_code(64);
    plugin_test(&repo, &plugin, "good", &["--ledger", "x"]).assert_code(64);
    assert!(!repo.path().join(".agent-ledger").exists());
}

#[test]
fn plugin_inspect_describes_and_lists_imports_without_running_check() {
    let dir = tempdir();
    let socket = component("hostile_socket");
    let out = run(
        dir.path(),
        &["plugin", "inspect", socket.to_str().unwrap(), "--no-cache"],
    );
    out.assert_code(0);
    assert!(
        out.stdout.contains("name: hostile_socket 0"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  linked   wasi:io/streams@"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  stubbed  wasi:sockets/tcp@"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("outcome"), "{}", out.stdout);

    let out = run(
        dir.path(),
        &[
            "plugin",
            "inspect",
            socket.to_str().unwrap(),
            "--no-cache",
            "--format",
            "json",
        ],
    );
    let v = out.json();
    assert_eq!(v["summary"], "dials out");
    assert!(!v["stubbed_imports"].as_array().unwrap().is_empty());

    // Refusals name the toolchain flag that fixes them.
    for (bytes, flag) in [
        (async_component(), "--backend-qjs-disable-async"),
        (
            uncompilable_importing("wasi:http/outgoing-handler@0.3.0"),
            "--disable http fetch-event",
        ),
        (
            uncompilable_importing("jco:node/fs"),
            "use `wasi:filesystem` instead of `node:fs`",
        ),
    ] {
        let path = dir.path().join("p.wasm");
        write(&path, bytes);
        let out = run(
            dir.path(),
            &["plugin", "inspect", path.to_str().unwrap(), "--no-cache"],
        );
        out.assert_code(65);
        assert!(out.stdout.contains(flag), "{flag}: {}", out.stdout);
    }
}
