//! Builds the built-in property components in `plugins/` for `wasm32-wasip2`
//! and generates `plugins.rs` in OUT_DIR: `BUILTINS`, each built-in's name,
//! component (embedded with `include_bytes!`) and the trial inputs it needs,
//! in its default order (the pattern of wasmtime's
//! `crates/test-programs/artifacts/build.rs`); and `templates.rs`, the files
//! `agent-ledger plugin new` writes (`host/templates/LANG/`, `wit/` and the
//! guest helpers).
//!
//! Each crate says what it is in its own manifest, so the list of built-ins
//! is written once:
//!
//! ```toml
//! [package.metadata.agent-ledger]
//! kind = "builtin"     # or "example", "test": built on demand by tests, never here
//! order = 3            # built-ins only: position in the default property list
//! needs = ["trace"]    # built-ins only: inputs without which it does not run by default
//! ```

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Trial inputs a built-in may need, and the `plugins::Need` each maps to.
const NEEDS: &[(&str, &str)] = &[("trace", "Need::Trace"), ("junit", "Need::Junit")];

struct Builtin {
    name: String,
    order: u64,
    needs: Vec<&'static str>,
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap();
    let plugins = root.join("plugins");
    let manifest = plugins.join("Cargo.toml");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());

    let metadata = metadata(&cargo, &manifest);
    let packages = metadata["packages"]
        .as_array()
        .expect("`packages` in metadata");
    let builtins = builtins(packages);
    watch(root, packages, &builtins);

    // A separate target dir: the outer cargo holds locks on its own.
    let target_dir = match env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d),
        None => root.join("target"),
    }
    .join("wasm-plugins");
    check_target_installed();

    let mut cmd = guest_cargo(&cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--locked")
        .arg("--target=wasm32-wasip2")
        .arg("--manifest-path")
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target_dir);
    for b in &builtins {
        cmd.arg("-p").arg(&b.name);
    }
    let status = cmd.status().expect("failed to run cargo to build plugins");
    assert!(
        status.success(),
        "building the built-in property components in `plugins/` failed"
    );

    let out = target_dir.join("wasm32-wasip2/release");
    let mut generated = String::from(
        "/// The built-in properties, in their default order.\npub const BUILTINS: &[Builtin] = &[\n",
    );
    for b in &builtins {
        let wasm = out.join(format!("{}.wasm", b.name));
        assert!(
            wasm.exists(),
            "component `{}` was not built",
            wasm.display()
        );
        writeln!(
            generated,
            "    Builtin {{ name: {:?}, component: include_bytes!({:?}), needs: &[{}] }},",
            b.name,
            wasm.display().to_string(),
            b.needs.join(", ")
        )
        .unwrap();
    }
    generated.push_str("];\n");
    let dest = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("plugins.rs");
    std::fs::write(dest, generated).unwrap();

    templates(root);
}

/// Generates `templates.rs` in OUT_DIR: `TEMPLATE_FILES`, every file
/// `agent-ledger plugin new` writes, embedded with `include_bytes!`: each
/// language's `host/templates/LANG/` (a trailing `.tmpl` is dropped from the
/// name, so no tool takes a template for a real manifest), the `wit/`
/// directory for every language, and the guest helpers
/// (`plugins/guest/src/helpers.rs`) vendored into the Rust template.
fn templates(root: &Path) {
    let templates = root.join("host/templates");
    // (language, path in the project, source, whether placeholders are filled)
    let mut files: Vec<(String, String, PathBuf, bool)> = Vec::new();
    let mut langs: Vec<String> = std::fs::read_dir(&templates)
        .expect("host/templates")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    langs.sort();
    for lang in &langs {
        for (rel, path) in walk_files(&templates.join(lang)) {
            let rel = rel.strip_suffix(".tmpl").unwrap_or(&rel).to_string();
            files.push((lang.clone(), rel, path, true));
        }
        for (rel, path) in walk_files(&root.join("wit")) {
            files.push((lang.clone(), format!("wit/{rel}"), path, false));
        }
    }
    files.push((
        "rust".into(),
        "src/helpers.rs".into(),
        root.join("plugins/guest/src/helpers.rs"),
        false,
    ));
    files.sort();
    let mut generated = String::from(
        "/// Every file a new plugin project gets: (language, path, bytes,\n\
         /// executable, whether `{{name}}`-style placeholders are filled).\n\
         pub const TEMPLATE_FILES: &[(&str, &str, &[u8], bool, bool)] = &[\n",
    );
    for (lang, rel, path, render) in &files {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        writeln!(
            generated,
            "    ({lang:?}, {rel:?}, include_bytes!({:?}), {}, {render}),",
            path.display().to_string(),
            mode & 0o111 != 0
        )
        .unwrap();
    }
    generated.push_str("];\n");
    println!("cargo:rerun-if-changed={}", templates.display());
    println!(
        "cargo:rerun-if-changed={}",
        root.join("plugins/guest/src/helpers.rs").display()
    );
    let dest = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("templates.rs");
    std::fs::write(dest, generated).unwrap();
}

/// Every file under `dir`, as (`/`-separated relative path, path), sorted.
fn walk_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap();
                let rel: Vec<&str> = rel.iter().map(|c| c.to_str().unwrap()).collect();
                out.push((rel.join("/"), path));
            }
        }
    }
    out.sort();
    out
}

/// `cargo metadata` of the plugins workspace, members only.
fn metadata(cargo: &std::ffi::OsStr, manifest: &Path) -> Value {
    let out = guest_cargo(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .expect("failed to run cargo metadata on the plugins workspace");
    assert!(
        out.status.success(),
        "cargo metadata on `{}` failed:\n{}",
        manifest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata printed malformed JSON")
}

/// The built-ins, in their declared order. Every component crate (a
/// `cdylib`) must say what it is, so none is silently left out.
fn builtins(packages: &[Value]) -> Vec<Builtin> {
    let mut builtins = Vec::new();
    for p in packages {
        let name = p["name"].as_str().expect("package name");
        let cdylib = p["targets"].as_array().into_iter().flatten().any(|t| {
            t["crate_types"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c == "cdylib"))
        });
        let meta = &p["metadata"]["agent-ledger"];
        let kind = meta["kind"].as_str();
        match (cdylib, kind) {
            (false, None) | (true, Some("example" | "test")) => continue,
            (true, Some("builtin")) => {}
            (true, None) => panic!(
                "plugin crate `{name}` does not say what it is: add `[package.metadata.agent-ledger] kind = \"builtin\" | \"example\" | \"test\"` to its Cargo.toml"
            ),
            (true, Some(other)) => panic!(
                "plugin crate `{name}` has `kind = {other:?}`; a component crate is \"builtin\", \"example\" or \"test\""
            ),
            (false, Some(_)) => panic!(
                "crate `{name}` declares a kind but is not a component (`crate-type = [\"cdylib\"]`)"
            ),
        }
        let order = meta["order"].as_u64().unwrap_or_else(|| {
            panic!("built-in `{name}` has no `order` (its position in the default property list)")
        });
        let needs = meta["needs"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|n| {
                NEEDS
                    .iter()
                    .find(|(k, _)| Some(*k) == n.as_str())
                    .map(|(_, v)| *v)
                    .unwrap_or_else(|| {
                        panic!("built-in `{name}` needs {n}; known inputs: `trace`, `junit`")
                    })
            })
            .collect();
        builtins.push(Builtin {
            name: name.to_string(),
            order,
            needs,
        });
    }
    builtins.sort_by_key(|b| b.order);
    for w in builtins.windows(2) {
        assert!(
            w[0].order != w[1].order,
            "built-ins `{}` and `{}` both have `order = {}`",
            w[0].name,
            w[1].name,
            w[0].order
        );
    }
    builtins
}

/// Reruns this script when a manifest changes (a crate may change its kind),
/// or when a built-in's sources, a workspace crate it uses, or the WIT
/// change; test and example crates never rebuild the host.
fn watch(root: &Path, packages: &[Value], builtins: &[Builtin]) {
    let plugins = root.join("plugins");
    println!(
        "cargo:rerun-if-changed={}",
        plugins.join("Cargo.toml").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        plugins.join("Cargo.lock").display()
    );
    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    let dir = |p: &Value| {
        Path::new(p["manifest_path"].as_str().expect("manifest path"))
            .parent()
            .expect("manifest dir")
            .to_path_buf()
    };
    for p in packages {
        println!(
            "cargo:rerun-if-changed={}",
            dir(p).join("Cargo.toml").display()
        );
    }
    let mut todo: Vec<&str> = builtins.iter().map(|b| b.name.as_str()).collect();
    let mut seen = Vec::new();
    while let Some(name) = todo.pop() {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let Some(p) = packages.iter().find(|p| p["name"] == name) else {
            continue;
        };
        println!("cargo:rerun-if-changed={}", dir(p).join("src").display());
        for d in p["dependencies"].as_array().into_iter().flatten() {
            if let Some(path) = d["path"].as_str() {
                // A path dependency outside the plugins workspace (the shared
                // `crates/trace`) is not in `packages`: watch it directly.
                println!("cargo:rerun-if-changed={path}");
                todo.push(d["name"].as_str().expect("dependency name"));
            }
        }
    }
}

/// A cargo for the guest workspace: flags and wrappers meant for the host
/// build (clippy's driver, coverage or sanitizer flags) must not leak in.
///
/// `AGENT_LEDGER_GUEST_TOOLCHAIN` (a rustup toolchain name) builds the guests
/// with that toolchain instead of the host's: the fuzz build (`.ci/fuzz`)
/// runs on nightly, which has no `wasm32-wasip2` standard library here, so it
/// builds the guests with the pinned toolchain (and reuses their build).
fn guest_cargo(cargo: &std::ffi::OsStr) -> Command {
    let mut cmd = match guest_toolchain() {
        Some(toolchain) => {
            let mut cmd = Command::new("rustup");
            cmd.arg("run").arg(toolchain).arg("cargo");
            // The host's compiler, which cargo hands its build scripts.
            cmd.env_remove("RUSTC").env_remove("RUSTDOC");
            cmd
        }
        None => Command::new(cargo),
    };
    cmd.env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    cmd
}

/// The guest target must be installed; rustup does not fetch it on demand
/// here, so say exactly what to run.
fn check_target_installed() {
    let mut cmd = match guest_toolchain() {
        Some(toolchain) => {
            let mut cmd = Command::new("rustup");
            cmd.arg("run").arg(toolchain).arg("rustc");
            cmd
        }
        None => Command::new(env::var_os("RUSTC").unwrap_or_else(|| "rustc".into())),
    };
    let out = cmd
        .args(["--print", "target-libdir", "--target", "wasm32-wasip2"])
        .output()
        .expect("failed to run rustc");
    let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || libdir.is_empty() || !Path::new(&libdir).exists() {
        panic!(
            "the wasm32-wasip2 target is not installed for this toolchain; run `rustup target add wasm32-wasip2` (the README's commands and .ci/run do this)"
        );
    }
}

/// The rustup toolchain the guests are built with, when it is not the host's
/// (see `guest_cargo`).
fn guest_toolchain() -> Option<std::ffi::OsString> {
    println!("cargo:rerun-if-env-changed=AGENT_LEDGER_GUEST_TOOLCHAIN");
    env::var_os("AGENT_LEDGER_GUEST_TOOLCHAIN").filter(|t| !t.is_empty())
}
