//! The plugin guide's example (`docs/plugins.md`) is the crate
//! `plugins/examples/no_todo`: the guide shows it byte for byte, and it
//! builds, loads and judges patches.

use crate::support::*;
use std::path::Path;

/// The fenced code blocks of the plugin guide's (`docs/plugins.md`) section
/// titled `title`, in order.
fn blocks(title: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(fixtures().join("../docs/plugins.md")).unwrap();
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no section `{title}` in docs/plugins.md"));
    let section = &readme[start + 1..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push(body.join("\n") + "\n");
        }
    }
    blocks
}

/// The block whose first line is `first`, without that line.
fn block_after(blocks: &[String], first: &str) -> String {
    blocks
        .iter()
        .find_map(|b| b.strip_prefix(first)?.strip_prefix('\n'))
        .unwrap_or_else(|| panic!("no docs/plugins.md block starting with `{first}`"))
        .to_string()
}

fn example() -> std::path::PathBuf {
    fixtures().join("../plugins/examples/no_todo")
}

#[test]
fn the_readme_shows_the_example_crate_as_it_is() {
    let blocks = blocks("Writing a property plugin");
    let lib = std::fs::read_to_string(example().join("src/lib.rs")).unwrap();
    assert_eq!(
        block_after(&blocks, "// src/lib.rs"),
        lib,
        "docs/plugins.md's src/lib.rs differs from plugins/examples/no_todo/src/lib.rs"
    );
    // The manifest from `[lib]` on: what a plugin author writes beyond
    // `[package]` (the crate's metadata and workspace keys are ours).
    let manifest = std::fs::read_to_string(example().join("Cargo.toml")).unwrap();
    let tail = &manifest[manifest.find("[lib]\n").expect("a [lib] table")..];
    assert_eq!(
        block_after(&blocks, "# Cargo.toml"),
        tail,
        "docs/plugins.md's Cargo.toml differs from plugins/examples/no_todo/Cargo.toml"
    );
    // `path: "wit"` is literally the crate's `wit`: agent-ledger's own.
    assert_eq!(
        std::fs::read(example().join("wit/property.wit")).unwrap(),
        std::fs::read(fixtures().join("../wit/property.wit")).unwrap()
    );
    assert!(
        blocks
            .iter()
            .any(|b| b.contains("target/wasm32-wasip2/release/no_todo.wasm")),
        "docs/plugins.md's build commands name another artifact"
    );
}

#[test]
fn the_readme_example_misses_on_a_todo_and_holds_without_one() {
    let blocks = blocks("Writing a property plugin");
    let property = blocks
        .iter()
        .find(|b| b.starts_with("[[property]]\nname = \"no_todo\""))
        .expect("docs/plugins.md's [[property]] block for no_todo");
    let dir = tempdir();
    let root = dir.path();
    write(
        &root.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    write(&root.join("tests/fixtures/input.txt"), "locked\n");
    write(
        &root.join("agent-ledger.toml"),
        format!("schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n\n{property}"),
    );
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "scaffold"]);
    let adds_todo = diff_of(
        root,
        "fn main() {\n    // TODO: say more\n    println!(\"hi\");\n}\n",
    );
    let good = diff_of(root, "fn main() {\n    println!(\"hello\");\n}\n");
    // The guide's configuration names the plugin and its known-bad patch.
    write(
        &root.join("oracles/no_todo.wasm"),
        std::fs::read(component("no_todo")).unwrap(),
    );
    write(&root.join("oracles/known-bad/adds-todo.diff"), &adds_todo);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let base = git(root, &["rev-parse", "HEAD"]);

    let check = |run_id: &str, patch: &str| {
        let body = root.join(format!("{run_id}.diff"));
        write(&body, patch);
        run(
            root,
            &["capture", "--run", run_id, "--body", body.to_str().unwrap()],
        )
        .assert_code(0);
        std::fs::remove_file(&body).unwrap();
        let cache = cache_dir();
        let out = run(
            root,
            &[
                "check",
                "--run",
                run_id,
                "--base",
                &base,
                "--cache-dir",
                cache.to_str().unwrap(),
                "--format",
                "json",
            ],
        );
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(root.join(format!(".agent-ledger/properties/{run_id}.json"))).unwrap(),
        )
        .unwrap();
        (out, outcome(&record, "no_todo").clone())
    };

    let (out, p) = check("good", &good);
    out.assert_code(0);
    assert_eq!(p["outcome"], "holds", "{p:#}");

    let (out, p) = check("todo", &adds_todo);
    out.assert_code(4);
    assert_eq!(p["outcome"], "miss", "{p:#}");
    assert_eq!(p["findings"][0]["path"], "src/main.rs");
    assert_eq!(p["findings"][0]["line"], 2);
    assert_eq!(p["findings"][0]["message"], "TODO left in");
}

/// The diff that turns the committed `src/main.rs` into `new`; the tree is
/// left as committed.
fn diff_of(root: &Path, new: &str) -> String {
    write(&root.join("src/main.rs"), new);
    let diff = git(root, &["diff"]);
    git(root, &["checkout", "--", "src/main.rs"]);
    diff + "\n"
}
