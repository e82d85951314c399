//! The sandbox's costs: a warm invocation of a trivial property (compiled,
//! cached and pre-instantiated) next to spawning `/bin/true`, and a cold
//! compile next to a start from the on-disk cache.

use agent_ledger::wasm::{Limits, Mounts, Sandbox, TrialInput};
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/all/support/components.rs"]
mod components;

fn trial() -> TrialInput {
    TrialInput {
        run_id: "bench".into(),
        base_revision: "0".repeat(40),
        patch: Vec::new(),
        changes: Vec::new(),
        config: vec![("test_globs".into(), "tests/**".into())],
    }
}

fn bench_invocation(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(None).unwrap();
    let plugin = sandbox
        .load(
            agent_ledger::plugins::builtin("tests_not_deleted")
                .unwrap()
                .component,
        )
        .unwrap();
    let mounts = Mounts {
        patched: dir.path(),
        base: dir.path(),
        inputs: dir.path(),
    };
    let trial = trial();
    let limits = Limits::default();
    let mut group = c.benchmark_group("invoke");
    group.bench_function("warm_trivial_property", |b| {
        b.iter(|| {
            let r = sandbox.run(&plugin, &trial, &mounts, &limits, [7; 32]);
            assert!(r.error.is_none(), "{:?}", r.error);
        })
    });
    group.bench_function("spawn_bin_true", |b| {
        b.iter(|| {
            assert!(
                std::process::Command::new("/bin/true")
                    .status()
                    .unwrap()
                    .success()
            )
        })
    });
    group.finish();
}

fn bench_start(c: &mut Criterion) {
    let bytes = std::fs::read(components::component("retry_oracle")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    // Fill the cache once.
    Sandbox::new(Some(cache.path().to_path_buf()))
        .unwrap()
        .load(&bytes)
        .unwrap();
    let mut group = c.benchmark_group("start");
    group.sample_size(10);
    group.bench_function("uncached_compile", |b| {
        b.iter(|| {
            Sandbox::new(None)
                .unwrap()
                .load(&bytes)
                .unwrap()
                .sha256
                .len()
        })
    });
    group.bench_function("cached_load", |b| {
        b.iter(|| {
            Sandbox::new(Some(cache.path().to_path_buf()))
                .unwrap()
                .load(&bytes)
                .unwrap()
                .sha256
                .len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_invocation, bench_start);
criterion_main!(benches);
