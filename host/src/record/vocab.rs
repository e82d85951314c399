//! The closed vocabularies of record fields other than reason codes
//! (`reason.rs`): one enum each, spelt as records spell it, so the schemas
//! list every value as an enumeration and no value is typed twice.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Derives shared by every vocabulary: serde spelling and `as_str` agree
/// because both come from the same `snake_case` rule.
macro_rules! vocabulary {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema,
            strum::IntoStaticStr, strum::EnumIter,
        )]
        #[serde(rename_all = "snake_case")]
        #[strum(serialize_all = "snake_case")]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// The value as records spell it.
            pub fn as_str(self) -> &'static str {
                self.into()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// Why the host killed a test command (`test_run.stopped`,
    /// `baseline.stopped`). Such a run makes the host-side property
    /// `test_command` an `error`.
    pub enum Stopped {
        /// It ran past `--test-timeout`.
        Timeout,
        /// It printed more than `--test-output-cap`.
        OutputCap,
        /// Its processes together held more than `--test-memory`.
        MemoryCap,
        /// It ran more processes than `--test-max-procs`.
        ProcessCap,
    }
}

vocabulary! {
    /// The network a test command had (`test_run.network`).
    pub enum TestNetwork {
        /// A new, empty network namespace.
        Isolated,
        /// The host's: no sandbox could be made and `--allow-unsandboxed`
        /// ran the command anyway.
        Allowed,
    }
}

vocabulary! {
    /// The sandbox a test command ran in (`test_run.sandbox`).
    pub enum TestSandbox {
        /// An unprivileged user in new user, mount, PID, network, IPC and
        /// UTS namespaces, with only its patched copy, its report directory
        /// and a private `/tmp` writable.
        Namespaces,
        /// None: the kernel refused the namespaces and `--allow-unsandboxed`
        /// ran it as the operator.
        None,
    }
}

vocabulary! {
    /// A transcript receipt's `verdict`.
    pub enum CaptureVerdict {
        /// The body is whole: no reason was found.
        Captured,
        /// At least one reason says the body is not whole.
        Incomplete,
    }
}

vocabulary! {
    /// What a locked fixture is (`files[].kind`).
    pub enum EntryKind {
        /// A regular file, hashed.
        File,
        /// A symlink: its target is recorded, never followed.
        Symlink,
    }
}

vocabulary! {
    /// Which evaluator list a required test came from
    /// (`tests.required[].list`).
    pub enum RequiredList {
        /// SWE-bench's `FAIL_TO_PASS`: fails on the base, must pass after.
        FailToPass,
        /// SWE-bench's `PASS_TO_PASS`: passes on the base, must still pass.
        PassToPass,
        /// `--require-pass`: must pass after, whatever it did before.
        RequirePass,
    }
}

impl From<agent_ledger_junit::Kind> for RequiredList {
    fn from(k: agent_ledger_junit::Kind) -> Self {
        match k {
            agent_ledger_junit::Kind::FailToPass => RequiredList::FailToPass,
            agent_ledger_junit::Kind::PassToPass => RequiredList::PassToPass,
            agent_ledger_junit::Kind::Required => RequiredList::RequirePass,
        }
    }
}

vocabulary! {
    /// How a test fared in one report (`tests.required[].base`, `.after`).
    pub enum TestFate {
        /// In the report, passing.
        Passed,
        /// In the report, failing or erroring.
        Failed,
        /// In the report, skipped.
        Skipped,
        /// Not in the report.
        Absent,
    }
}

impl From<Option<agent_ledger_junit::Fate>> for TestFate {
    fn from(s: Option<agent_ledger_junit::Fate>) -> Self {
        match s {
            None => TestFate::Absent,
            Some(agent_ledger_junit::Fate::Passed) => TestFate::Passed,
            Some(agent_ledger_junit::Fate::Failed) => TestFate::Failed,
            Some(agent_ledger_junit::Fate::Skipped) => TestFate::Skipped,
        }
    }
}

vocabulary! {
    /// How a captured trace's lines were verified (`trace_auth.verified`).
    pub enum TraceVerification {
        /// Every line's MAC verified under the run's key.
        #[serde(rename = "hmac-sha256")]
        #[strum(serialize = "hmac-sha256")]
        HmacSha256,
    }
}

vocabulary! {
    /// The wrapping a patch was taken out of (a receipt's `envelope`).
    pub enum PatchEnvelope {
        /// The text between a `<patch>` line and a `</patch>` line.
        #[serde(rename = "patch-tags")]
        #[strum(serialize = "patch-tags")]
        PatchTags,
        /// One fenced code block whose info string is `diff` or `patch`.
        Fence,
        /// A `git format-patch` mail, recognised without asking.
        Mbox,
        /// A `git format-patch` mail between `<patch>` tags.
        #[serde(rename = "patch-tags+mbox")]
        #[strum(serialize = "patch-tags+mbox")]
        PatchTagsMbox,
        /// A `git format-patch` mail in a fenced block.
        #[serde(rename = "fence+mbox")]
        #[strum(serialize = "fence+mbox")]
        FenceMbox,
    }
}

impl PatchEnvelope {
    /// The same envelope with a `git format-patch` mail inside it.
    pub fn with_mbox(outer: Option<PatchEnvelope>) -> PatchEnvelope {
        match outer {
            None | Some(PatchEnvelope::Mbox) => PatchEnvelope::Mbox,
            Some(PatchEnvelope::PatchTags | PatchEnvelope::PatchTagsMbox) => {
                PatchEnvelope::PatchTagsMbox
            }
            Some(PatchEnvelope::Fence | PatchEnvelope::FenceMbox) => PatchEnvelope::FenceMbox,
        }
    }
}

/// The network the replaying process had (a property record's `network`):
/// `isolated`, or `not isolated: WHY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayNetwork {
    /// It entered a new, empty network namespace before reading any input,
    /// so nothing in the replay could reach a model.
    Isolated,
    /// It could not; the text says why.
    NotIsolated(String),
}

const NOT_ISOLATED: &str = "not isolated: ";

impl ReplayNetwork {
    pub fn is_isolated(&self) -> bool {
        matches!(self, ReplayNetwork::Isolated)
    }

    /// The value as records spell it.
    pub fn as_text(&self) -> Cow<'static, str> {
        match self {
            ReplayNetwork::Isolated => Cow::Borrowed("isolated"),
            ReplayNetwork::NotIsolated(why) => Cow::Owned(format!("{NOT_ISOLATED}{why}")),
        }
    }
}

impl std::fmt::Display for ReplayNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_text())
    }
}

impl Serialize for ReplayNetwork {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_text())
    }
}

impl<'de> Deserialize<'de> for ReplayNetwork {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text == "isolated" {
            Ok(ReplayNetwork::Isolated)
        } else if let Some(why) = text.strip_prefix(NOT_ISOLATED) {
            Ok(ReplayNetwork::NotIsolated(why.to_string()))
        } else {
            Err(serde::de::Error::custom(format!(
                "`{}` is neither `isolated` nor `not isolated: WHY`",
                crate::output::inert(&text)
            )))
        }
    }
}

impl JsonSchema for ReplayNetwork {
    fn schema_name() -> Cow<'static, str> {
        "ReplayNetwork".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`isolated` (a new, empty network namespace before any input was read), or `not isolated: WHY`.",
            "anyOf": [
                { "const": "isolated", "type": "string" },
                { "pattern": "^not isolated: ", "type": "string" }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    fn round_trips<T>()
    where
        T: IntoEnumIterator + Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
        T: Copy + Into<&'static str>,
    {
        for v in T::iter() {
            let text: &'static str = v.into();
            assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(text));
            assert_eq!(serde_json::from_value::<T>(text.into()).unwrap(), v);
        }
        assert!(serde_json::from_value::<T>("no such value".into()).is_err());
    }

    #[test]
    fn every_vocabulary_is_spelt_one_way_and_refuses_other_words() {
        round_trips::<Stopped>();
        round_trips::<TestNetwork>();
        round_trips::<TestSandbox>();
        round_trips::<CaptureVerdict>();
        round_trips::<EntryKind>();
        round_trips::<RequiredList>();
        round_trips::<TestFate>();
        round_trips::<TraceVerification>();
        round_trips::<PatchEnvelope>();
        assert_eq!(TraceVerification::HmacSha256.as_str(), "hmac-sha256");
        assert_eq!(PatchEnvelope::PatchTags.as_str(), "patch-tags");
        assert_eq!(
            PatchEnvelope::with_mbox(Some(PatchEnvelope::Fence)).as_str(),
            "fence+mbox"
        );
    }

    #[test]
    fn required_lists_and_fates_are_spelt_as_the_junit_crate_spells_them() {
        use agent_ledger_junit::{Fate as Status, Kind};
        for k in [Kind::FailToPass, Kind::PassToPass, Kind::Required] {
            assert_eq!(RequiredList::from(k).as_str(), k.as_str());
        }
        for s in [Status::Passed, Status::Failed, Status::Skipped] {
            assert_eq!(TestFate::from(Some(s)).as_str(), s.as_str());
        }
    }

    #[test]
    fn replay_network_reads_what_it_writes_and_nothing_else() {
        for n in [
            ReplayNetwork::Isolated,
            ReplayNetwork::NotIsolated("no user namespaces".into()),
        ] {
            let v = serde_json::to_value(&n).unwrap();
            assert_eq!(serde_json::from_value::<ReplayNetwork>(v).unwrap(), n);
        }
        assert!(serde_json::from_value::<ReplayNetwork>("isolated-ish".into()).is_err());
    }
}
