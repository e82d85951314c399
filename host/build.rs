//! Embeds the built-in property components and generates `plugins.rs` in
//! OUT_DIR: `BUILTINS`, each built-in's name, component (embedded with
//! `include_bytes!`) and the trial inputs it needs, in its default order
//! (the pattern of wasmtime's `crates/test-programs/artifacts/build.rs`);
//! and `templates.rs`, the files `agent-ledger plugin new` writes
//! (`host/templates/LANG/`, `host/wit/` and the guest helpers).
//!
//! The components' bytes ship with the crate, in `host/builtins/` (each
//! `NAME.wasm` and `builtins.json`, which names them, their order, needs and
//! SHA-256), so `cargo install` needs only the host target.
//! `AGENT_LEDGER_BUILTINS` says where the bytes come from:
//!
//! - unset or `shipped`: the checked-in files, their digests checked
//!   against `builtins.json`;
//! - `verify` (what `.ci/test` sets): built from `plugins/` for
//!   `wasm32-wasip2`, and the build fails unless every component and its
//!   entry are byte-for-byte the checked-in ones, so nothing ships that the
//!   source does not produce;
//! - `update` (`bash .ci/builtins`): built from `plugins/` and written over
//!   `host/builtins/`, to be reviewed and committed.
//!
//! The guest build remaps the repository and cargo-home prefixes out of the
//! components (`--remap-path-prefix`), so the same toolchain gives the same
//! bytes wherever the checkout is.
//!
//! Each plugin crate says what it is in its own manifest, so the list of
//! built-ins is written once:
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

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// Trial inputs a built-in may need, and the `plugins::Need` each maps to.
const NEEDS: &[(&str, &str)] = &[("trace", "Need::Trace"), ("junit", "Need::Junit")];

/// `schema` of `host/builtins/builtins.json`.
const BUILTINS_SCHEMA: u64 = 1;

#[derive(Debug, PartialEq)]
struct Builtin {
    name: String,
    order: u64,
    /// Input names, as in the crate's metadata (`trace`, `junit`).
    needs: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Shipped,
    Verify,
    Update,
}

fn mode() -> Mode {
    println!("cargo:rerun-if-env-changed=AGENT_LEDGER_BUILTINS");
    match env::var("AGENT_LEDGER_BUILTINS").as_deref() {
        Err(_) | Ok("" | "shipped") => Mode::Shipped,
        Ok("verify") => Mode::Verify,
        Ok("update") => Mode::Update,
        Ok(other) => panic!(
            "AGENT_LEDGER_BUILTINS={other:?}: expected `shipped` (the default), `verify` or `update`"
        ),
    }
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let shipped_dir = manifest_dir.join("builtins");
    let manifest_path = shipped_dir.join("builtins.json");
    println!("cargo:rerun-if-changed={}", shipped_dir.display());
    let mode = mode();
    let shipped = read_shipped(&manifest_path);

    let builtins: Vec<Builtin> = if mode == Mode::Shipped {
        let shipped = shipped.unwrap_or_else(|e| panic!("{e}"));
        for (b, digest) in &shipped {
            let wasm = shipped_dir.join(format!("{}.wasm", b.name));
            let bytes = std::fs::read(&wasm)
                .unwrap_or_else(|e| panic!("built-in component `{}`: {e}", wasm.display()));
            let got = hex(&Sha256::digest(&bytes));
            assert!(
                &got == digest,
                "built-in component `{}` has SHA-256 {got}, `{}` says {digest}: the checked-in bytes were changed without their entry (rebuild them with `bash .ci/builtins`)",
                wasm.display(),
                manifest_path.display()
            );
        }
        shipped.into_iter().map(|(b, _)| b).collect()
    } else {
        let built = build_from_source(&manifest_dir);
        let entries: Vec<(Builtin, String)> = built
            .into_iter()
            .map(|(b, wasm)| {
                let bytes = std::fs::read(&wasm).unwrap();
                let digest = hex(&Sha256::digest(&bytes));
                if mode == Mode::Update {
                    std::fs::create_dir_all(&shipped_dir).unwrap();
                    std::fs::write(shipped_dir.join(format!("{}.wasm", b.name)), &bytes).unwrap();
                }
                (b, digest)
            })
            .collect();
        if mode == Mode::Update {
            write_shipped(&manifest_path, &entries);
        } else {
            verify_shipped(&shipped_dir, &manifest_path, shipped, &entries);
        }
        entries.into_iter().map(|(b, _)| b).collect()
    };

    let mut generated = String::from(
        "/// The built-in properties, in their default order.\npub const BUILTINS: &[Builtin] = &[\n",
    );
    for b in &builtins {
        let wasm = shipped_dir.join(format!("{}.wasm", b.name));
        let needs: Vec<&str> = b
            .needs
            .iter()
            .map(|n| NEEDS.iter().find(|(k, _)| k == n).expect("known need").1)
            .collect();
        writeln!(
            generated,
            "    Builtin {{ name: {:?}, component: include_bytes!({:?}), needs: &[{}] }},",
            b.name,
            wasm.display().to_string(),
            needs.join(", ")
        )
        .unwrap();
    }
    generated.push_str("];\n");
    let dest = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("plugins.rs");
    std::fs::write(dest, generated).unwrap();

    templates(&manifest_dir);
    version(&manifest_dir);
}

/// `AGENT_LEDGER_VERSION_LONG` for `--version`: the crate version, the
/// commit it was built from (the checkout's `HEAD`, or the
/// `.cargo_vcs_info.json` cargo writes into a packaged crate; `unknown`
/// without either) and the wasmtime it embeds (pinned exactly in
/// `host/Cargo.toml`).
fn version(host: &Path) {
    let root = host.parent().unwrap();
    let git_dir = root.join(".git");
    let commit = if git_dir.exists() {
        // Only files that exist (a missing one would rerun this script on
        // every build): a worktree's `.git` is a file, and a branch may
        // live in `packed-refs`.
        let watch = |p: PathBuf| {
            if p.is_file() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        };
        watch(git_dir.join("HEAD"));
        if let Ok(head) = std::fs::read_to_string(git_dir.join("HEAD"))
            && let Some(r) = head.trim().strip_prefix("ref: ")
        {
            watch(git_dir.join(r));
            watch(git_dir.join("packed-refs"));
        }
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    } else {
        std::fs::read_to_string(host.join(".cargo_vcs_info.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| {
                v["git"]["sha1"]
                    .as_str()
                    .map(|s| s[..s.len().min(12)].to_string())
            })
    }
    .unwrap_or_else(|| "unknown".into());
    let manifest = std::fs::read_to_string(host.join("Cargo.toml")).unwrap();
    let wasmtime = wasmtime_pin(&manifest)
        .expect("host/Cargo.toml pins wasmtime exactly (`wasmtime = { version = \"=X.Y.Z\"`)");
    println!(
        "cargo:rustc-env=AGENT_LEDGER_VERSION_LONG={} (commit {commit}, wasmtime {wasmtime})",
        env::var("CARGO_PKG_VERSION").unwrap()
    );
}

/// The exact wasmtime version the manifest pins: as written in the
/// repository (`wasmtime = { version = "=X.Y.Z", ... }`) or as `cargo
/// package` rewrites it for a published crate (`[dependencies.wasmtime]`
/// then `version = "=X.Y.Z"`), which `cargo install` then builds.
fn wasmtime_pin(manifest: &str) -> Option<String> {
    let exact = |rest: &str| {
        rest.split_once("version = \"=")
            .and_then(|(_, v)| v.split('"').next())
            .map(str::to_string)
    };
    let mut in_table = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_table = line == "[dependencies.wasmtime]";
            continue;
        }
        if let Some(rest) = line.strip_prefix("wasmtime = ") {
            return exact(rest);
        }
        if in_table && line.starts_with("version = ") {
            return exact(line);
        }
    }
    None
}

/// `builtins.json`: (built-in, SHA-256 of its component), in order.
fn read_shipped(path: &Path) -> Result<Vec<(Builtin, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if doc["schema"].as_u64() != Some(BUILTINS_SCHEMA) {
        return Err(format!(
            "{}: `schema` is {}, this build reads {BUILTINS_SCHEMA}",
            path.display(),
            doc["schema"]
        ));
    }
    let field = |i: usize, e: &Value, f: &str| -> Result<Value, String> {
        e.get(f)
            .cloned()
            .ok_or_else(|| format!("{}: builtins[{i}] has no `{f}`", path.display()))
    };
    let mut out = Vec::new();
    for (i, e) in doc["builtins"]
        .as_array()
        .ok_or_else(|| format!("{}: no `builtins` list", path.display()))?
        .iter()
        .enumerate()
    {
        let bad = |f: &str| format!("{}: builtins[{i}].{f} is malformed", path.display());
        let name = field(i, e, "name")?
            .as_str()
            .ok_or_else(|| bad("name"))?
            .to_string();
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            return Err(bad("name"));
        }
        let order = field(i, e, "order")?.as_u64().ok_or_else(|| bad("order"))?;
        let needs = field(i, e, "needs")?
            .as_array()
            .ok_or_else(|| bad("needs"))?
            .iter()
            .map(|n| {
                n.as_str()
                    .filter(|n| NEEDS.iter().any(|(k, _)| k == n))
                    .map(str::to_string)
                    .ok_or_else(|| bad("needs"))
            })
            .collect::<Result<_, _>>()?;
        let digest = field(i, e, "sha256")?
            .as_str()
            .ok_or_else(|| bad("sha256"))?
            .to_string();
        out.push((Builtin { name, order, needs }, digest));
    }
    Ok(out)
}

fn write_shipped(path: &Path, entries: &[(Builtin, String)]) {
    let doc = json!({
        "schema": BUILTINS_SCHEMA,
        "comment": "The built-in property components shipped with the crate; written by `bash .ci/builtins` (AGENT_LEDGER_BUILTINS=update) from plugins/, checked by AGENT_LEDGER_BUILTINS=verify. Fields: docs/guide/built-in-properties.md.",
        "builtins": entries.iter().map(|(b, d)| json!({
            "name": b.name,
            "order": b.order,
            "needs": b.needs,
            "sha256": d,
        })).collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap();
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// Fails the build unless the built components and their entries are the
/// checked-in ones.
fn verify_shipped(
    dir: &Path,
    path: &Path,
    shipped: Result<Vec<(Builtin, String)>, String>,
    built: &[(Builtin, String)],
) {
    let fix = "run `bash .ci/builtins` to rebuild them, review and commit `host/builtins/`";
    let shipped = shipped.unwrap_or_else(|e| panic!("{e}: {fix}"));
    let mut problems = Vec::new();
    for (b, digest) in built {
        match shipped.iter().find(|(s, _)| s.name == b.name) {
            None => problems.push(format!("`{}` is built from source but not shipped", b.name)),
            Some((s, d)) => {
                if s != b {
                    problems.push(format!(
                        "`{}`: its crate says {b:?}, `{}` says {s:?}",
                        b.name,
                        path.display()
                    ));
                }
                if d != digest {
                    problems.push(format!(
                        "`{}`: built from source it has SHA-256 {digest}, the shipped entry says {d}",
                        b.name
                    ));
                }
                let file = dir.join(format!("{}.wasm", b.name));
                match std::fs::read(&file) {
                    Ok(bytes) if hex(&Sha256::digest(&bytes)) == *digest => {}
                    Ok(_) => problems.push(format!(
                        "`{}` differs from the component built from source",
                        file.display()
                    )),
                    Err(e) => problems.push(format!("`{}`: {e}", file.display())),
                }
            }
        }
    }
    for (s, _) in &shipped {
        if !built.iter().any(|(b, _)| b.name == s.name) {
            problems.push(format!(
                "`{}` is shipped but no plugin crate builds it",
                s.name
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the shipped built-in components are not what the source builds (AGENT_LEDGER_BUILTINS=verify):\n  {}\n{fix}",
        problems.join("\n  ")
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Builds every built-in from `plugins/` for `wasm32-wasip2`: (built-in,
/// path of its component), in order.
fn build_from_source(manifest_dir: &Path) -> Vec<(Builtin, PathBuf)> {
    let root = manifest_dir.parent().unwrap();
    let plugins = root.join("plugins");
    let manifest = plugins.join("Cargo.toml");
    assert!(
        manifest.is_file(),
        "AGENT_LEDGER_BUILTINS=verify or update builds the components from `{}`, which is not here (a packaged crate ships only their bytes: unset AGENT_LEDGER_BUILTINS)",
        manifest.display()
    );
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());

    let metadata = metadata(&cargo, &manifest);
    let packages = metadata["packages"]
        .as_array()
        .expect("`packages` in metadata");
    let builtins = builtins(packages);
    watch(root, packages, &builtins);

    // A separate target dir: the outer cargo holds locks on its own, and the
    // remapping flags below would make other guest builds (clippy's, the
    // tests') rebuild everything if they shared one.
    let target_dir = match env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d),
        None => root.join("target"),
    }
    .join("wasm-builtins");
    check_target_installed();

    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let remap = [
        format!("--remap-path-prefix={}=/agent-ledger", root.display()),
        format!("--remap-path-prefix={}=/cargo", cargo_home.display()),
    ]
    .join("\x1f");

    let mut cmd = guest_cargo(&cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--locked")
        .arg("--target=wasm32-wasip2")
        .arg("--manifest-path")
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", remap);
    for b in &builtins {
        cmd.arg("-p").arg(&b.name);
    }
    let status = cmd.status().expect("failed to run cargo to build plugins");
    assert!(
        status.success(),
        "building the built-in property components in `plugins/` failed"
    );

    let out = target_dir.join("wasm32-wasip2/release");
    builtins
        .into_iter()
        .map(|b| {
            let wasm = out.join(format!("{}.wasm", b.name));
            assert!(
                wasm.exists(),
                "component `{}` was not built",
                wasm.display()
            );
            (b, wasm)
        })
        .collect()
}

/// Generates `templates.rs` in OUT_DIR: `TEMPLATE_FILES`, every file
/// `agent-ledger plugin new` writes, embedded with `include_bytes!`: each
/// language's `host/templates/LANG/` (a trailing `.tmpl` is dropped from the
/// name, so no tool takes a template for a real manifest), the WIT
/// (`host/wit`, a link to the repository's `wit/`) for every language, and the guest helpers
/// (`plugins/guest/src/helpers.rs`, through the
/// `host/guest_helpers.rs` link, so a packaged crate has it) vendored into the Rust template.
fn templates(host: &Path) {
    let templates = host.join("templates");
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
        for (rel, path) in walk_files(&host.join("wit")) {
            files.push((lang.clone(), format!("wit/{rel}"), path, false));
        }
    }
    files.push((
        "rust".into(),
        "src/helpers.rs".into(),
        host.join("guest_helpers.rs"),
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
    println!("cargo:rerun-if-changed={}", host.join("wit").display());
    println!(
        "cargo:rerun-if-changed={}",
        host.join("guest_helpers.rs").display()
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
                    .map(|(k, _)| k.to_string())
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
