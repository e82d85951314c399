//! The published WIT (`wit/`): the `plugin` world imports exactly what the
//! host links, the package is versioned with the host, and the vendored WASI
//! packages in `wit/deps` are the ones those imports name.

use crate::support::fixtures;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn wit() -> PathBuf {
    fixtures().join("../wit")
}

fn property_wit() -> String {
    std::fs::read_to_string(wit().join("property.wit")).unwrap()
}

/// The `import` lines of the `plugin` world, as (`ns:pkg/iface`, version).
fn world_imports() -> Vec<(String, String)> {
    let wit = property_wit();
    let start = wit
        .find("\nworld plugin {")
        .expect("a `world plugin` block");
    let body = &wit[start..];
    let body = &body[..body.find("\n}").expect("the end of `world plugin`")];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("import "))
        .map(|i| {
            let i = i.strip_suffix(';').expect("an import ends with `;`");
            let (name, version) = i.split_once('@').expect("a versioned import");
            (name.to_string(), version.to_string())
        })
        .collect()
}

#[test]
fn the_wit_package_is_versioned_with_the_host() {
    let wit = property_wit();
    let package = wit
        .lines()
        .find_map(|l| l.strip_prefix("package agent-ledger:property@"))
        .and_then(|v| v.strip_suffix(';'))
        .expect("a `package agent-ledger:property@VERSION;` line");
    assert_eq!(
        package,
        env!("CARGO_PKG_VERSION"),
        "wit/property.wit is published with the host: bump its package version with the host crate's"
    );
}

#[test]
fn the_world_imports_exactly_what_the_host_links() {
    let imports: BTreeSet<String> = world_imports().into_iter().map(|(n, _)| n).collect();
    // `agent-ledger:property/types` is imported through `use`, not by name.
    let allowed: BTreeSet<String> = agent_ledger::wasm::ALLOWED_IMPORTS
        .iter()
        .filter(|n| !n.starts_with("agent-ledger:"))
        .map(|n| n.to_string())
        .collect();
    assert_eq!(
        imports, allowed,
        "the `plugin` world and the linker's allowlist (host/src/wasm/linker.rs) disagree"
    );
    for name in &imports {
        assert!(
            !name.starts_with("wasi:sockets/") && !name.starts_with("wasi:http/"),
            "the world imports {name}"
        );
    }
}

#[test]
fn the_vendored_wasi_packages_are_the_ones_the_world_imports() {
    let mut versions = BTreeSet::new();
    let mut vendored = BTreeSet::new();
    for entry in std::fs::read_dir(wit().join("deps")).unwrap() {
        let dir = entry.unwrap().path();
        let text = std::fs::read_to_string(dir.join("package.wit"))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let package = text
            .lines()
            .find_map(|l| l.strip_prefix("package "))
            .and_then(|p| p.strip_suffix(';'))
            .unwrap_or_else(|| panic!("{} names no package", dir.display()));
        // The `wkg` layout: deps/NS-NAME-VERSION/package.wit.
        let (name, version) = package.split_once('@').unwrap();
        assert_eq!(
            dir.file_name().unwrap().to_str().unwrap(),
            format!("{}-{version}", name.replace(':', "-")),
            "wit/deps directory named after another package"
        );
        vendored.insert(name.to_string());
        versions.insert(version.to_string());
    }
    assert_eq!(
        versions.len(),
        1,
        "every vendored WASI package has one version: {versions:?}"
    );
    for (name, version) in world_imports() {
        let package = name.split('/').next().unwrap();
        assert!(
            vendored.contains(package),
            "{name} imported but {package} is not in wit/deps"
        );
        assert!(versions.contains(&version), "{name}@{version}");
    }
}
