//! Builds the property components in `plugins/` for `wasm32-wasip2` and
//! generates `plugins.rs` in OUT_DIR: the built-in components embedded with
//! `include_bytes!`, the paths of the test-only and example components, and a
//! `foreach_plugin!` macro so that every component has a test that loads it
//! (the pattern of wasmtime's `crates/test-programs/artifacts/build.rs`).

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (crate name, what it is) for every component the workspace builds.
const PLUGINS: &[(&str, Kind)] = &[
    ("tests_not_deleted", Kind::Builtin),
    ("assertions_not_weakened", Kind::Builtin),
    ("span_bijection", Kind::Builtin),
    ("tests_pass", Kind::Builtin),
    ("retry_oracle", Kind::Example),
    ("hostile", Kind::Test),
    ("hostile_socket", Kind::Test),
];

#[derive(PartialEq)]
enum Kind {
    Builtin,
    Example,
    Test,
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap();
    let plugins = root.join("plugins");
    println!("cargo:rerun-if-changed={}", plugins.display());
    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    // Shared with the host, and built into `span_bijection`.
    println!(
        "cargo:rerun-if-changed={}",
        root.join("crates/trace").display()
    );

    // A separate target dir: the outer cargo holds locks on its own.
    let target_dir = match env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d),
        None => root.join("target"),
    }
    .join("wasm-plugins");
    check_target_installed();

    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--locked")
        .arg("--target=wasm32-wasip2")
        .arg("--workspace")
        .arg("--manifest-path")
        .arg(plugins.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        // Flags and wrappers meant for the host build (clippy's driver,
        // coverage or sanitizer flags) must not leak into the guest build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    let status = cmd.status().expect("failed to run cargo to build plugins");
    assert!(
        status.success(),
        "building the property components in `plugins/` failed"
    );

    let out = target_dir.join("wasm32-wasip2/release");
    let mut generated = String::new();
    let mut names = String::new();
    for (name, kind) in PLUGINS {
        let wasm = out.join(format!("{name}.wasm"));
        assert!(
            wasm.exists(),
            "component `{}` was not built",
            wasm.display()
        );
        let upper = name.to_uppercase();
        let path = wasm.display().to_string();
        writeln!(generated, "/// Path of the built `{name}` component.").unwrap();
        writeln!(generated, "pub const {upper}_PATH: &str = {path:?};").unwrap();
        if *kind == Kind::Builtin {
            writeln!(generated, "/// The `{name}` component, embedded.").unwrap();
            writeln!(
                generated,
                "pub const {upper}: &[u8] = include_bytes!({path:?});"
            )
            .unwrap();
        }
        writeln!(names, "        $mac!({name}, {upper}_PATH);").unwrap();
    }
    let builtins: Vec<String> = PLUGINS
        .iter()
        .filter(|(_, k)| *k == Kind::Builtin)
        .map(|(n, _)| format!("({n:?}, {})", n.to_uppercase()))
        .collect();
    writeln!(
        generated,
        "/// Built-in properties by name, in their default order.\npub const BUILTINS: &[(&str, &[u8])] = &[{}];",
        builtins.join(", ")
    )
    .unwrap();
    writeln!(
        generated,
        "/// Calls `$mac!(name, NAME_PATH)` for every component the plugins workspace builds.\n#[macro_export]\nmacro_rules! foreach_plugin {{\n    ($mac:ident) => {{\n{names}    }};\n}}"
    )
    .unwrap();
    let dest = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("plugins.rs");
    std::fs::write(dest, generated).unwrap();
}

/// The guest target must be installed; rustup does not fetch it on demand
/// here, so say exactly what to run.
fn check_target_installed() {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
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
