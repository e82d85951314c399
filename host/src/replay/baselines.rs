//! The test command's runs on a base revision, cached on disk across
//! trials, batches and processes, so that N predictions of one instance
//! run the base's suite once.
//!
//! An entry is keyed by sha256 of everything the run depends on that the
//! host knows: the base commit, the evaluator's test patch, the command,
//! its limits, its environment (`--test-env`), the paths it is shown
//! (`--test-ro`, by path: their contents are not hashed, so a changed
//! virtualenv needs `--no-cache` or a new cache directory), the locked
//! fixture roots, and this build's version. Entries are sealed with the
//! per-user key of the compile cache (HMAC-SHA256): one that does not
//! verify is ignored and the base runs again. Only a run that finished on
//! its own and wrote a report is cached: a timeout under load is never
//! kept.

use super::Baseline;
use super::test_cmd::TestCommand;
use crate::record::TestRun;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const DOMAIN: &str = "agent-ledger baseline cache v1";

/// What an entry holds.
#[derive(Serialize, Deserialize)]
struct Entry {
    run: TestRun,
    /// The report, base64.
    junit: String,
}

/// The key of a baseline run.
pub fn key(base: &str, test: &TestCommand, fixtures: &[String], eval: Option<&str>) -> String {
    crate::digest::sha256_hex(
        format!(
            "{}\0{base}\0{}",
            env!("CARGO_PKG_VERSION"),
            test.baseline_key(fixtures, eval)
        )
        .as_bytes(),
    )
}

fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join("baselines").join(format!("{key}.entry"))
}

/// The cached run, when there is an authentic one.
pub fn load(dir: &Path, key: &str) -> Option<Baseline> {
    let bytes = std::fs::read(path(dir, key)).ok()?;
    let body = crate::sandbox::open_sealed(DOMAIN, key, &bytes)?;
    let entry: Entry = serde_json::from_slice(&body).ok()?;
    use base64::Engine;
    let junit = base64::engine::general_purpose::STANDARD
        .decode(entry.junit)
        .ok()?;
    Some((entry.run, Some(junit)))
}

/// Caches a run that finished on its own with a report; failing to write
/// is not an error (the cache is an optimisation).
pub fn store(dir: &Path, key: &str, baseline: &Baseline) {
    let (run, Some(junit)) = baseline else {
        return;
    };
    if run.stopped.is_some() || run.exit_code.is_none() {
        return;
    }
    use base64::Engine;
    let entry = Entry {
        run: run.clone(),
        junit: base64::engine::general_purpose::STANDARD.encode(junit),
    };
    let Ok(body) = serde_json::to_vec(&entry) else {
        return;
    };
    if let Some(sealed) = crate::sandbox::seal(DOMAIN, key, &body) {
        let _ = crate::sandbox::write_cache_entry(&path(dir, key), &sealed);
    }
}
