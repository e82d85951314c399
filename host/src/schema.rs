//! The JSON schemas of every file agent-ledger writes or reads as data
//! (the four records, the trace's span and seal lines, the flake-freeze file, the archive
//! manifest, the configuration, key files, signature envelopes, the
//! `report --format json` summary and the `modes.json` properties read), generated from the Rust types with
//! schemars (JSON Schema 2020-12, the shape readers accept).
//!
//! They are checked in as `schemas/NAME.schema.json`; the integration test
//! `schemas` fails, naming the file, when a type changed without them being
//! regenerated (`UPDATE_SCHEMAS=1 cargo test --test all schemas`).

use schemars::{JsonSchema, schema_for};
use serde_json::Value;

/// Every schema, by file stem, in a stable order.
pub fn all() -> Vec<(&'static str, Value)> {
    fn of<T: JsonSchema>() -> Value {
        serde_json::to_value(schema_for!(T)).expect("a schema serialises")
    }
    vec![
        ("transcript", of::<crate::record::TranscriptReceipt>()),
        ("fixture-lock", of::<crate::record::FixtureLock>()),
        ("properties", of::<crate::record::PropertyRecord>()),
        ("verdict", of::<crate::record::VerdictRecord>()),
        ("trace-line", of::<agent_ledger_trace::Line>()),
        ("trace-seal", of::<agent_ledger_trace::Seal>()),
        ("flakes", of::<crate::freeze::FreezeFile>()),
        ("archive-manifest", of::<crate::archive::Manifest>()),
        ("config", of::<crate::config::Config>()),
        ("key-file", of::<crate::sign::KeyFile>()),
        ("signature-envelope", of::<crate::sign::Envelope>()),
        ("report-summary", of::<crate::report::Summary>()),
        ("modes", of::<crate::record::TreeModes>()),
        ("run-registration", of::<crate::runs::Registration>()),
        ("batch-manifest-line", of::<crate::batch::ManifestLine>()),
        ("swebench-import", of::<crate::swebench::ImportConfig>()),
        ("swebench-report", of::<crate::swebench::RunReport>()),
        ("error", of::<crate::output::ErrorDocument>()),
    ]
    .into_iter()
    .chain(crate::output::documents::schemas())
    .collect()
}

/// The file name of a schema.
pub fn file_name(stem: &str) -> String {
    format!("{stem}.schema.json")
}

/// A schema as it is checked in: pretty JSON with a trailing newline.
pub fn to_text(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).expect("a schema serialises");
    text.push('\n');
    text
}
