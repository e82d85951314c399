//! The test command's runs on a base revision, cached on disk across
//! trials, batches and processes, so that N predictions of one instance
//! run the base's suite once.
//!
//! An entry is keyed by sha256 of everything the run depends on that the
//! host knows: the base commit, the evaluator's test patch, the command,
//! its limits, its environment (`--test-env`, and the `PATH` and `LANG` it
//! inherits), the paths it is shown (`--test-ro`), the locked fixture
//! roots, and this build's version; and by what the command would find
//! outside its tree, told by metadata, not contents: the inode, size, mode,
//! mtime and ctime of every entry of each `PATH` directory and of every
//! file under each `--test-ro` path (keyed by `PATH`'s name alone, a run
//! in another virtualenv reused a base run that failed for want of a
//! module, and excused the patch's own failure of that test:
//! `tests/all/evaluation.rs`,
//! `a_base_run_cached_before_the_environment_changed_is_not_reused`). An
//! upgrade elsewhere (a system library under `/usr/lib` alone) is not
//! seen: `--no-cache` or a new cache directory after one
//! (docs/design/threat-model.md, "Known limits"). Entries are sealed with
//! a key derived from the compile cache's per-user key (`wasm::seal`, keyed BLAKE3): one that does not
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
            "{}\0{base}\0{}\0{}",
            env!("CARGO_PKG_VERSION"),
            test.baseline_key(fixtures, eval),
            environment(test)
        )
        .as_bytes(),
    )
}

/// Entries past which a `--test-ro` tree is not walked further (its
/// fingerprint then says so, and still changes with what was walked).
const WALK_CAP: usize = 1 << 20;

/// What the command finds outside its tree, as metadata (see the module
/// documentation): the inherited `PATH` and `LANG`, every entry of each
/// `PATH` directory, every file under each `--test-ro` path.
fn environment(test: &TestCommand) -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    let path = test
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    hasher.update(format!(
        "PATH={path:?}\0LANG={:?}\0",
        std::env::var("LANG").ok()
    ));
    let mut line = String::new();
    let mut stat = |p: &Path| {
        line.clear();
        entry(p, &mut line);
        hasher.update(line.as_bytes());
    };
    for dir in std::env::split_paths(&path).filter(|d| d.is_absolute()) {
        stat(&dir);
        for e in &children(&dir) {
            stat(e);
        }
    }
    for root in &test.read_only {
        let mut walked = 0usize;
        let mut todo = vec![root.clone()];
        while let Some(p) = todo.pop() {
            walked += 1;
            if walked > WALK_CAP {
                stat(Path::new("walk stopped"));
                break;
            }
            stat(&p);
            // The root is followed if it is a link; below it, links are
            // entries (their targets named), not walked.
            let is_dir = if &p == root {
                p.is_dir()
            } else {
                std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir())
            };
            if is_dir {
                // Reversed onto the stack, so they are walked in order.
                todo.extend(children(&p).into_iter().rev());
            }
        }
    }
    hex::encode(hasher.finalize())
}

/// The entries of `dir` (none if it cannot be read), sorted.
fn children(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    entries
}

/// One path's metadata line of [`environment`].
fn entry(p: &Path, out: &mut String) {
    use std::fmt::Write as _;
    match std::fs::symlink_metadata(p) {
        Ok(m) => {
            use std::os::unix::fs::MetadataExt as _;
            let _ = write!(
                out,
                "{:?} {} {} {:o} {}.{} {}.{} {:?}\0",
                p,
                m.ino(),
                m.size(),
                m.mode(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
                m.file_type()
                    .is_symlink()
                    .then(|| std::fs::read_link(p).ok())
            );
        }
        Err(e) => {
            let _ = write!(out, "{p:?} {:?}\0", e.kind());
        }
    }
}

fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join("baselines").join(format!("{key}.entry"))
}

/// The cached run, when there is an authentic one.
pub fn load(dir: &Path, key: &str) -> Option<Baseline> {
    let bytes = crate::wasm::read_cache_entry(&path(dir, key), crate::input::RECORD_CAP * 4)?;
    let body = crate::wasm::open_sealed(DOMAIN, key, bytes)?;
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
    if let Some(sealed) = crate::wasm::seal(DOMAIN, key, &body) {
        let _ = crate::wasm::write_cache_entry(&path(dir, key), &sealed);
    }
}
