//! Lock hashing on a generated tree (10,000 small files and three 24 MB
//! files) and diff validation on a large generated diff.
//! `benches/lock_vs_sha256sum.sh` runs the binary next to
//! `find | xargs sha256sum` on the same tree and prints the ratio.

use agent_ledger::{diff, lock};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::path::Path;

fn generate_tree(root: &Path) -> u64 {
    let mut total = 0u64;
    for d in 0..100 {
        let dir = root.join(format!("fixtures/d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            let bytes: Vec<u8> = (0..1024u32)
                .map(|i| (i.wrapping_mul(31) ^ (d * 100 + f)) as u8)
                .collect();
            std::fs::write(dir.join(format!("f{f:03}.json")), &bytes).unwrap();
            total += bytes.len() as u64;
        }
    }
    for big in 0..3u8 {
        let bytes: Vec<u8> = (0..24u32 << 20).map(|i| (i >> 7) as u8 ^ big).collect();
        std::fs::write(root.join(format!("fixtures/big{big}.bin")), &bytes).unwrap();
        total += bytes.len() as u64;
    }
    total
}

fn generate_diff(files: usize, hunks: usize) -> Vec<u8> {
    let mut text = String::new();
    for f in 0..files {
        text.push_str(&format!("diff --git a/src/f{f}.rs b/src/f{f}.rs\nindex 1111111..2222222 100644\n--- a/src/f{f}.rs\n+++ b/src/f{f}.rs\n"));
        for h in 0..hunks {
            let at = h * 20 + 1;
            text.push_str(&format!("@@ -{at},7 +{at},8 @@ fn f{h}() {{\n"));
            text.push_str("     let a = 1;\n     let b = 2;\n     let c = 3;\n-    old();\n+    new();\n+    more();\n     let d = 4;\n     let e = 5;\n     let f = 6;\n");
        }
    }
    text.into_bytes()
}

fn bench_lock(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let bytes = generate_tree(dir.path());
    let roots = vec!["fixtures".to_string()];
    let mut group = c.benchmark_group("lock");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("scan_10k_small_plus_3x24MB", |b| {
        b.iter(|| {
            let scan = lock::scan(dir.path(), &roots).unwrap();
            assert_eq!(scan.entries.len(), 10_003);
            lock::dir_hash(&scan.entries)
        })
    });
    group.finish();
}

fn bench_diff(c: &mut Criterion) {
    let patch = generate_diff(200, 20);
    let mut group = c.benchmark_group("diff");
    group.throughput(Throughput::Bytes(patch.len() as u64));
    group.bench_function("validate_200_files_4000_hunks", |b| {
        b.iter(|| diff::validate(&patch).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench_lock, bench_diff);
criterion_main!(benches);
