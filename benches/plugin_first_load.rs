//! A plugin's first load against the floor the engine sets: `wasmtime
//! compile` of the same component under the same settings, which is
//! `Engine::precompile_component` plus writing the code out (the
//! `wasmtime` CLI does exactly that; here it runs in process on the
//! sandbox's own engine, so the settings cannot differ).
//!
//! The first load is what `check` pays the first time it meets a
//! component: imports audited, compiled, linked, pre-instantiated,
//! `describe` run, and the code serialized, authenticated and written to
//! the compile cache. The two alternate, `FIRST_LOAD_RUNS` rounds (default
//! 3), each on a fresh engine and an empty cache; medians and the ratio
//! (target: at most 1.2). Then the cached load every later run makes.
//!
//! `cargo bench --bench plugin_first_load -- [COMPONENT.wasm...]` (the
//! built-ins are always measured); `benches/plugin_first_load.sh` passes
//! the Python and JavaScript example plugins `.ci/plugin-toolchains` builds.

use agent_ledger::wasm::Sandbox;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let runs: usize = std::env::var("FIRST_LOAD_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut components: Vec<(String, Vec<u8>)> = agent_ledger::plugins::BUILTINS
        .iter()
        .map(|b| (format!("builtin:{}", b.name), b.component.to_vec()))
        .collect();
    for path in std::env::args().skip(1).filter(|a| !a.starts_with("--")) {
        components.push((path.clone(), std::fs::read(&path).unwrap()));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{cores} cores; medians of {runs} alternating rounds, fresh engine and empty cache each"
    );
    println!(
        "{:58} {:>9} {:>11} {:>6} {:>8}",
        "component", "floor", "first load", "ratio", "cached"
    );
    for (name, bytes) in &components {
        let (mut floor, mut first) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let dir = tempfile::tempdir().unwrap();
            let sandbox = Sandbox::new(None).unwrap();
            let started = Instant::now();
            let code = sandbox.engine().precompile_component(bytes).unwrap();
            std::fs::write(dir.path().join("floor.cwasm"), &code).unwrap();
            floor.push(started.elapsed());

            let sandbox = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
            let started = Instant::now();
            sandbox.load(bytes).unwrap();
            first.push(started.elapsed());
        }
        let dir = tempfile::tempdir().unwrap();
        Sandbox::new(Some(dir.path().to_path_buf()))
            .unwrap()
            .load(bytes)
            .unwrap();
        let started = Instant::now();
        Sandbox::new(Some(dir.path().to_path_buf()))
            .unwrap()
            .load(bytes)
            .unwrap();
        let cached = started.elapsed();
        let (floor, first) = (median(floor), median(first));
        println!(
            "{:58} {:>9} {:>11} {:>5.2}x {:>8}",
            format!("{name} ({:.1} MB)", bytes.len() as f64 / 1e6),
            ms(floor),
            ms(first),
            first.as_secs_f64() / floor.as_secs_f64(),
            ms(cached)
        );
    }
}
