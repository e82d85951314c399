//! Hostile plugins: every one must end as `error` (or a refusal), with the
//! host alive, the repository unchanged, and the trial not `review`.

use crate::support::*;
use std::path::Path;

/// Runs `check` with the hostile plugin in `mode`, returns its result.
fn hostile(mode: &str, extra: &str) -> (DemoRepo, serde_json::Value) {
    hostile_with(&component("hostile"), mode, extra, |_| {})
}

fn hostile_with(
    plugin: &Path,
    mode: &str,
    extra: &str,
    edit: impl FnOnce(&Path),
) -> (DemoRepo, serde_json::Value) {
    let repo = DemoRepo::with(edit);
    repo.capture("r", "good");
    let config_dir = tempdir();
    let config = config_dir.path().join("hostile.toml");
    write(
        &config,
        format!(
            "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"hostile\"\nplugin = {plugin:?}\n{extra}\n[property.config]\nmode = {mode:?}\npath = \"escape\"\n"
        ),
    );
    let before = repo.digest();
    let out = repo.check("r", &["--config", config.to_str().unwrap()]);
    assert_eq!(
        out.code, 4,
        "{mode}: not reject\n{}\n{}",
        out.stdout, out.stderr
    );
    assert_eq!(repo.digest(), before, "{mode}: the repository changed");
    let record = repo.properties("r");
    let p = outcome(&record, "hostile").clone();
    assert!(
        !p["stdout"].as_str().unwrap().contains("ESCAPED"),
        "{mode}: {p:#}"
    );
    (repo, p)
}

#[track_caller]
fn assert_error(p: &serde_json::Value, needle: &str) {
    assert_eq!(p["outcome"], "error", "{p:#}");
    let error = p["error"].as_str().unwrap();
    assert!(error.contains(needle), "expected `{needle}` in `{error}`");
}

#[test]
fn writes_creates_renames_and_deletes_are_refused() {
    for mode in ["write", "create", "rename", "delete", "mkdir"] {
        let (_, p) = hostile(mode, "");
        assert_error(&p, "refused");
    }
}

#[test]
fn reads_outside_the_preopens_are_refused() {
    // Both modes read the host's /etc/passwd: it must exist, or a refusal
    // would prove nothing.
    assert!(
        std::path::Path::new("/etc/passwd").is_file(),
        "/etc/passwd is missing, so this test cannot tell a refusal from an absent file"
    );
    for mode in ["read-dotdot", "read-absolute"] {
        let (_, p) = hostile(mode, "");
        assert_error(&p, "read refused");
    }
}

#[test]
fn a_symlink_in_the_tree_that_points_out_is_not_followed() {
    // The target is a file this test makes outside the tree, so that a
    // refusal is never just a missing file on the host.
    let outside = tempdir();
    let secret = outside.path().join("secret.txt");
    write(&secret, "outside the tree\n");
    let absolute = secret.to_str().unwrap().to_string();
    let relative = format!("../../../../../../../..{absolute}");
    for target in [absolute, relative] {
        let (_, p) = hostile_with(&component("hostile"), "read-symlink", "", |root| {
            std::os::unix::fs::symlink(&target, root.join("escape")).unwrap();
            // On the host the link does reach the file.
            assert_eq!(
                std::fs::read_to_string(root.join("escape")).unwrap(),
                "outside the tree\n",
                "`{target}` does not lead out of the tree"
            );
        });
        assert_error(&p, "read refused");
    }
}

#[test]
fn a_socket_call_traps_naming_the_function() {
    // The socket imports are linked to traps (see plugin_host.rs), never to
    // the host's sockets.
    let (_, p) = hostile_with(&component("hostile_socket"), "connect", "", |_| {});
    assert_error(&p, "network access is refused (wasi:sockets/");
    assert!(
        p["error"]
            .as_str()
            .unwrap()
            .ends_with("#create-tcp-socket called)")
    );
}

#[test]
fn there_are_no_environment_variables_or_arguments() {
    let (_, p) = hostile("env", "");
    assert_error(&p, "no environment variables and no arguments");
}

#[test]
fn an_infinite_loop_exhausts_its_fuel() {
    let (_, p) = hostile("loop", "fuel = 50000000");
    assert_error(&p, "fuel budget of 50000000 exhausted");
    assert_eq!(p["fuel_used"], 50000000);
}

#[test]
fn sleeping_does_not_stall_the_host() {
    // Virtual time: an hour's sleep returns at once (and the clock moved an
    // hour), long before the wall-clock backstop; a real sleep would end in
    // the backstop. One call, so a loaded machine cannot make this flaky.
    let (_, p) = hostile("sleep-hour", "timeout_ms = 60000");
    assert_error(&p, "slept 3600 s of virtual time");
}

#[test]
fn a_sleeping_loop_still_burns_fuel() {
    // Each sleep returns at once and its host calls cost fuel, so the loop
    // exhausts its fuel long before the default backstop.
    let (_, p) = hostile("sleep-loop", "fuel = 5000000");
    assert_error(&p, "fuel budget of 5000000 exhausted");
}

/// Host calls are paid for in fuel: a thousand sleeps (a few host calls
/// each, next to no wasm) cost at least a thousand times the flat charge.
#[test]
fn host_calls_are_charged_to_fuel() {
    let (_, p) = hostile("host-calls", "");
    assert_eq!(p["outcome"], "miss", "{p:#}");
    let used = p["fuel_used"].as_u64().unwrap();
    assert!(
        used >= 1000 * agent_ledger::wasm::HOSTCALL_FUEL,
        "fuel used: {used}"
    );
}

/// Load never changes a verdict: a plugin that makes the host read until
/// its fuel is gone stops at the same place, with the same record, on an
/// idle machine and on one whose cores are all busy.
#[test]
fn the_same_trial_under_heavy_load_gives_the_same_record() {
    let run = || hostile("read-loop", "fuel = 300000000").1;
    let idle = run();
    assert_error(&idle, "fuel budget of 300000000 exhausted");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinners: Vec<_> = (0..4 * std::thread::available_parallelism().map_or(2, |n| n.get()))
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::black_box(0u64);
                }
            })
        })
        .collect();
    let loaded = run();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    // The repositories differ (their commits' times), so the inputs do:
    // everything the plugin's run decided must not.
    for field in [
        "outcome",
        "error",
        "fuel_used",
        "findings",
        "stdout",
        "stderr",
    ] {
        assert_eq!(idle[field], loaded[field], "{field}");
    }
}

#[test]
fn the_wall_clock_backstop_stops_a_long_run() {
    let (_, p) = hostile("loop", "timeout_ms = 200");
    assert_error(&p, "wall-clock backstop of 200 ms");
}

#[test]
fn unbounded_memory_growth_hits_the_cap() {
    let (_, p) = hostile("memory", "memory_mb = 64");
    assert_error(&p, "memory cap");
}

#[test]
fn unbounded_recursion_overflows_the_stack() {
    let (_, p) = hostile("recurse", "");
    assert_error(&p, "stack overflow");
}

#[test]
fn flooding_stdout_is_an_error_and_the_excerpt_is_marked() {
    let (_, p) = hostile("flood", "");
    assert_error(&p, "stdout exceeded");
    let stdout = p["stdout"].as_str().unwrap();
    assert!(stdout.len() < 8192, "the record keeps only an excerpt");
    assert!(stdout.contains("[... truncated:"), "{stdout}");
}

#[test]
fn a_panic_is_an_error() {
    let (_, p) = hostile("panic", "");
    assert_error(&p, "unreachable");
    assert!(
        p["stderr"].as_str().unwrap().contains("panics on purpose"),
        "{p:#}"
    );
}

#[test]
fn calling_exit_before_returning_is_an_error() {
    let (_, p) = hostile("exit", "");
    assert_error(&p, "called exit(0)");
}

#[test]
fn malformed_results_are_errors() {
    let (_, p) = hostile("bad-finding", "");
    assert_error(&p, "malformed result");
    let (_, p) = hostile("empty-miss", "");
    assert_error(&p, "malformed result");
}

#[test]
fn the_wall_clock_is_fixed() {
    // The `clock` mode misses with the time it read; a miss is not review.
    let (_, p) = hostile("clock", "");
    assert_eq!(p["outcome"], "miss");
    assert_eq!(
        p["findings"][0]["message"],
        format!(
            "wall clock reads {}",
            agent_ledger::wasm::FIXED_WALL_CLOCK_SECS
        )
    );
}

#[test]
fn a_core_module_or_garbage_is_refused() {
    let dir = tempdir();
    let fake = dir.path().join("fake.wasm");
    write(&fake, b"\0asm\x01\0\0\0");
    let (_, p) = hostile_with(&fake, "", "", |_| {});
    assert_error(&p, "not a WebAssembly component");
}

/// Every built-in loads: it compiles, passes the import audit and describes
/// itself by its crate name.
#[test]
fn every_builtin_loads() {
    let sandbox = agent_ledger::wasm::Sandbox::new(None).unwrap();
    for b in agent_ledger::plugins::BUILTINS {
        match sandbox.load(b.component) {
            Ok(p) => assert_eq!(p.name, b.name),
            Err(r) => panic!("built-in `{}` does not load: {}", b.name, r.0),
        }
    }
}

/// Every test-only and example crate of the plugins workspace, as its
/// manifest declares it, loads too (the socket plugin with its network
/// imports stubbed).
#[test]
fn every_test_and_example_component_loads() {
    let names = test_and_example_crates();
    assert!(names.contains(&"hostile_socket".to_string()), "{names:?}");
    let sandbox = agent_ledger::wasm::Sandbox::new(None).unwrap();
    for name in names {
        let bytes = std::fs::read(component(&name)).unwrap();
        match sandbox.load(&bytes) {
            Ok(p) => assert_eq!(p.name, name),
            Err(r) => panic!("`{name}` does not load: {}", r.0),
        }
    }
}

/// The plugins workspace's crates whose `[package.metadata.agent-ledger]`
/// kind is `test` or `example`.
fn test_and_example_crates() -> Vec<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/Cargo.toml");
    let out = std::process::Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["metadata"]["agent-ledger"]["kind"]
                .as_str()
                .is_some_and(|k| k == "test" || k == "example")
        })
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}
