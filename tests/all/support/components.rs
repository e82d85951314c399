//! Test-only and example components, built from `plugins/` on demand: the
//! host's build embeds only the built-ins (`agent_ledger::plugins`). Shared
//! by the integration tests and the benches.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// The path of the built `name` component, a crate of the plugins
/// workspace, built with `cargo build -p NAME` in its own target dir under
/// the repository's target dir (as `fixtures/demo.sh` builds it, so they
/// share the build), once per process. A failed build panics with cargo's
/// output, in every test that asks for it.
pub fn component(name: &str) -> PathBuf {
    // Held while cargo runs: cargo would serialise on the target dir anyway.
    static BUILT: Mutex<BTreeMap<String, Result<PathBuf, String>>> = Mutex::new(BTreeMap::new());
    let result = BUILT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(name.to_string())
        .or_insert_with(|| build(name))
        .clone();
    result.unwrap_or_else(|e| panic!("{e}"))
}

fn build(name: &str) -> Result<PathBuf, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/Cargo.toml");
    // CARGO_TARGET_TMPDIR is `<target dir>/tmp`, wherever the target dir is.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("wasm-test-plugins");
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
            "-p",
            name,
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        // Flags meant for the host (coverage, sanitizers) must not reach
        // the guests.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .output()
        .map_err(|e| format!("failed to run cargo to build component `{name}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building component `{name}` from `{}` failed:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let wasm = target.join(format!("wasm32-wasip2/release/{name}.wasm"));
    if !wasm.is_file() {
        return Err(format!(
            "cargo built no `{}`: is `{name}` a cdylib?",
            wasm.display()
        ));
    }
    Ok(wasm)
}
