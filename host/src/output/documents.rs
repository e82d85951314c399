//! The JSON documents commands print under `--format json`: each a typed
//! struct, and [`Document`] is implemented only here, through one list
//! that also names each document's schema (`schemas/output-NAME.schema.json`
//! for the documents that are not records; see `crate::schema`).
//! `output::emit` and `output::print_json` take nothing else, so no command
//! prints an ad-hoc `json!` value.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// A JSON document a command prints; its schema is in `schemas/`.
pub trait Document: Serialize {}

macro_rules! documents {
    (
        schemas: { $($stem:literal => $ty:ty),* $(,)? }
        records: { $($record:ty),* $(,)? }
    ) => {
        $(impl Document for $ty {})*
        // Records (and the report summary) have their schemas already.
        $(impl Document for $record {})*

        /// The schema of every command output that is not a record, by
        /// file stem.
        pub fn schemas() -> Vec<(&'static str, Value)> {
            fn of<T: JsonSchema + ?Sized>() -> Value {
                serde_json::to_value(schemars::schema_for!(T)).expect("a schema serialises")
            }
            vec![$(($stem, of::<$ty>())),*]
        }
    };
}

use crate::commands as c;

documents! {
    schemas: {
        "output-batch" => c::batch::BatchOutput<'_>,
        "output-check" => c::check::CheckOutput<'_>,
        "output-flake-list" => c::flake::FlakeListOutput<'_>,
        "output-flake-observe" => c::flake::FlakeObserveOutput<'_>,
        "output-init" => crate::init::Initialised,
        "output-lock" => c::lock::LockOutput<'_>,
        "output-merge" => crate::merge::Merged,
        "output-plugin-new" => c::plugin::new::PluginNewOutput<'_>,
        "output-plugin-precompile" => c::plugin::precompile::PrecompileOutput,
        "output-plugin-inspect" => c::plugin::about::PluginAbout,
        "output-plugin-test" => c::plugin::PluginTestOutput,
        "output-replay-incomplete" => c::replay::ReplayIncompleteOutput<'_>,
        "output-sign" => c::sign::SignOutput<'_>,
        "output-keygen" => c::sign::KeygenOutput<'_>,
        "output-trace-begin" => crate::trace::session::Begun,
        "output-trace-exec" => c::trace::exec::TraceExecOutput<'_>,
        "output-trace-lines" => [agent_ledger_trace::Line],
        "output-trace-list" => Vec<crate::runs::Listed>,
        "output-trace-abort" => crate::runs::TraceAbortOutput<'_>,
        "output-reconcile" => crate::reconcile::judge::ReconcileOutput,
        "output-verify" => c::verify::VerifyOutput<'_>,
        "output-swebench-import" => crate::swebench::Imported,
    }
    records: {
        crate::record::TranscriptReceipt,
        crate::record::PropertyRecord,
        crate::record::VerdictRecord,
        crate::archive::Manifest,
        crate::report::Summary,
        crate::output::ErrorDocument,
    }
}
