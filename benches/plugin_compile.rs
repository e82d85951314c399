//! First load (compile, link, `describe`) of large components under the
//! sandbox's compiler settings and the alternatives, as ratios measured in
//! the same run; then whether each alternative keeps the sandbox's
//! guarantees (fuel metering, the epoch backstop, the same fuel count).
//!
//! Run by `benches/plugin_compile.sh`, which builds a Python component with
//! componentize-py into the target dir and passes its path:
//! `cargo bench --bench plugin_compile -- COMPONENT.wasm...`
//! (`PLUGIN_COMPILE_RUNS` first loads per setting, default 2; the best
//! counts).

use agent_ledger::wasm::{Limits, Mounts, Sandbox, TrialInput, Tuning};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "../tests/all/support/components.rs"]
mod components;

fn trial(mode: &str) -> TrialInput {
    TrialInput {
        run_id: "bench".into(),
        base_revision: "0".repeat(40),
        patch: Vec::new(),
        changes: Vec::new(),
        config: vec![
            ("mode".into(), mode.into()),
            ("test_globs".into(), "tests/**".into()),
        ],
    }
}

/// Runs `check` in `mode` under `limits`: (outcome, error, fuel used).
fn check(
    sandbox: &Sandbox,
    bytes: &[u8],
    mode: &str,
    limits: &Limits,
) -> (String, Option<String>, u64) {
    let plugin = match sandbox.load_with(bytes, limits) {
        Ok(p) => p,
        Err(r) => return ("refused".into(), Some(r.0), 0),
    };
    let dir = tempfile::tempdir().unwrap();
    let mounts = Mounts {
        patched: dir.path(),
        base: dir.path(),
        inputs: dir.path(),
    };
    let run = sandbox.run(&plugin, &trial(mode), &mounts, limits, [7; 32]);
    (run.outcome.as_str().into(), run.error, run.fuel_used)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn main() {
    let components: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    if components.is_empty() {
        eprintln!("usage: cargo bench --bench plugin_compile -- COMPONENT.wasm...");
        eprintln!("(benches/plugin_compile.sh builds a Python component and passes it)");
        return;
    }
    let runs: usize = std::env::var("PLUGIN_COMPILE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{cores} cores; best of {runs} first loads per setting; no disk cache");
    let limits = Limits::default();

    for path in &components {
        let bytes = std::fs::read(path).unwrap();
        println!("\n{} ({:.1} MB)", path.display(), bytes.len() as f64 / 1e6);
        println!(
            "  {:22} {:>10} {:>7} {:>14}  outcome",
            "setting", "first load", "ratio", "check fuel"
        );
        let mut current: Option<(Duration, u64)> = None;
        for tuning in Tuning::all() {
            let mut best = Duration::MAX;
            let mut ran = None;
            for _ in 0..runs {
                let sandbox = Sandbox::tuned(None, tuning).unwrap();
                let started = Instant::now();
                let loaded = sandbox.load(&bytes);
                best = best.min(started.elapsed());
                if let Err(r) = loaded {
                    ran = Some(("refused".to_string(), Some(r.0), 0));
                    break;
                }
                ran = Some(check(&sandbox, &bytes, "", &limits));
            }
            let (outcome, error, fuel) = ran.unwrap();
            let (base, base_fuel) = *current.get_or_insert((best, fuel));
            println!(
                "  {:22} {:>10} {:>7.2} {:>14}  {}{}{}",
                format!("{tuning:?}"),
                secs(best),
                best.as_secs_f64() / base.as_secs_f64(),
                fuel,
                outcome,
                error.map(|e| format!(" ({e})")).unwrap_or_default(),
                if fuel == base_fuel {
                    ""
                } else {
                    "  FUEL DIFFERS"
                }
            );
        }
        // The cached load every later run makes.
        let cache = tempfile::tempdir().unwrap();
        Sandbox::new(Some(cache.path().to_path_buf()))
            .unwrap()
            .load(&bytes)
            .unwrap();
        let started = Instant::now();
        Sandbox::new(Some(cache.path().to_path_buf()))
            .unwrap()
            .load(&bytes)
            .unwrap();
        println!(
            "  cached load (Current): {} ms",
            started.elapsed().as_millis()
        );
    }

    // The guarantees, per setting, on the hostile test component: an
    // endless loop ends on its fuel budget with exactly that fuel used, and
    // on the wall-clock backstop when fuel would last.
    println!("\nguarantees (plugins/hostile, mode loop):");
    let hostile = std::fs::read(components::component("hostile")).unwrap();
    for tuning in Tuning::all() {
        let sandbox = Sandbox::tuned(None, tuning).unwrap();
        let fuel_limits = Limits {
            fuel: 50_000_000,
            ..Limits::default()
        };
        let (_, fuel_error, fuel_used) = check(&sandbox, &hostile, "loop", &fuel_limits);
        let epoch_limits = Limits {
            fuel: u64::MAX / 2,
            wall: Duration::from_millis(300),
            ..Limits::default()
        };
        let started = Instant::now();
        let (_, epoch_error, _) = check(&sandbox, &hostile, "loop", &epoch_limits);
        let fuel_ok = fuel_used == 50_000_000
            && fuel_error
                .as_deref()
                .is_some_and(|e| e.contains("fuel budget"));
        let epoch_ok = epoch_error
            .as_deref()
            .is_some_and(|e| e.contains("wall-clock backstop"));
        println!(
            "  {:22} fuel trap: {} ({fuel_used} used)   epoch backstop: {} ({} ms)",
            format!("{tuning:?}"),
            if fuel_ok { "yes" } else { "NO" },
            if epoch_ok { "yes" } else { "NO" },
            started.elapsed().as_millis()
        );
    }
}
