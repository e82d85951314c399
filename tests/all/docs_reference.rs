//! The generated pages of `docs/reference/` are what the code generates:
//! the command reference from the CLI parser, the reason-code table from
//! the reason codes' definition.

use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference")
}

/// Fails naming `name` when the checked-in page is not `generated`;
/// rewrites it under `UPDATE_DOCS=1`.
fn check(name: &str, generated: &str) {
    let path = dir().join(name);
    if std::fs::read_to_string(&path).ok().as_deref() == Some(generated) {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(dir()).unwrap();
        std::fs::write(&path, generated).unwrap();
        return;
    }
    panic!(
        "`{}` is not what the code generates; regenerate it with \
         `UPDATE_DOCS=1 cargo test --test all docs_reference` and review the diff",
        path.display()
    );
}

#[test]
fn docs_reference_cli_is_generated_from_the_parser() {
    let page = agent_ledger::commands::docs::cli_reference(agent_ledger::cli::command());
    // Every visible command has its section.
    for name in [
        "agent-ledger check",
        "agent-ledger trace exec",
        "agent-ledger plugin new",
    ] {
        assert!(page.contains(&format!("\n## {name}\n")), "{name}");
    }
    check("cli.md", &page);
}

#[test]
fn docs_reference_reason_codes_lists_every_code() {
    let page = agent_ledger::commands::docs::reason_code_reference();
    for code in agent_ledger::record::ReasonCode::all() {
        assert!(page.contains(&format!("| `{code}` | ")), "{code}");
    }
    assert!(page.contains("| `all_hold` | `review`: "));
    check("reason-codes.md", &page);
}
