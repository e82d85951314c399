//! The JSON schemas in `schemas/` are exactly what the Rust types generate,
//! and what agent-ledger writes matches them.

use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas")
}

/// Validates `value` against the checked-in `schemas/STEM.schema.json`.
#[track_caller]
pub fn assert_matches(stem: &str, value: &serde_json::Value) {
    let path = dir().join(agent_ledger::schema::file_name(stem));
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "does not match `{}`:\n{}\n{value:#}",
        path.display(),
        errors.join("\n")
    );
}

#[test]
fn schemas_are_up_to_date() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    let mut known = Vec::new();
    for (stem, schema) in agent_ledger::schema::all() {
        let name = agent_ledger::schema::file_name(stem);
        let path = dir().join(&name);
        let text = agent_ledger::schema::to_text(&schema);
        known.push(name);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if update {
            std::fs::create_dir_all(dir()).unwrap();
            std::fs::write(&path, text).unwrap();
        } else {
            stale.push(path.display().to_string());
        }
    }
    let unknown: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !known.contains(n))
        .collect();
    assert!(
        stale.is_empty(),
        "these JSON schemas no longer match their Rust types: {stale:#?}\n\
         a record, configuration or report type changed; regenerate with \
         `UPDATE_SCHEMAS=1 cargo test --test all schemas` and review the diff"
    );
    assert!(
        unknown.is_empty(),
        "`schemas/` holds files no type generates: {unknown:?}"
    );
}

#[test]
fn each_schema_is_a_valid_json_schema() {
    for (stem, schema) in agent_ledger::schema::all() {
        assert!(
            jsonschema::meta::is_valid(&schema),
            "`{stem}` is not a valid JSON schema"
        );
    }
}
