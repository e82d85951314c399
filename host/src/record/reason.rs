//! The closed vocabulary of reason codes: every `code` a receipt's
//! `reasons` and `notes`, a verdict's `reasons` or a report can hold. One
//! definition here; the schemas list them as an enumeration and
//! `docs/reference/reason-codes.md` is generated from these comments.

use serde::{Deserialize, Serialize};

/// A stable machine code for a judgement. The first sentence of each
/// variant's comment says which verdict it leads to.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
    strum::EnumIter,
    strum::EnumMessage,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReasonCode {
    // The body of a captured response (`incomplete`).
    /// `incomplete`: the body is empty or only whitespace.
    EmptyBody,
    /// `incomplete`: the body has no diff file header.
    NotADiff,
    /// `incomplete`: the body wraps the diff in a markdown fence (see
    /// `capture --extract fence`).
    MarkdownFenced,
    /// `incomplete`: the body is a JSON document (an error payload?), not a
    /// diff.
    JsonPayload,
    /// `incomplete`: the body has text before the first file header (blank
    /// lines are not text).
    ChatPreamble,
    /// `incomplete`: the body has text after the diff.
    TrailingText,
    /// `incomplete`: a file header git cannot read, or sections that need
    /// different `-p` levels.
    MalformedFileHeader,
    /// `incomplete`: an `@@` line that is not `@@ -a,b +c,d @@`.
    MalformedHunkHeader,
    /// `incomplete`: the body ends inside a hunk.
    HunkTruncated,
    /// `incomplete`: lines past a hunk's counts that are not blank context,
    /// or too few.
    HunkCountMismatch,
    /// `incomplete`: a file section with no hunk and no complete rename,
    /// copy, mode or binary change.
    EmptyFileSection,
    /// `incomplete`: `Binary files ... differ`, which no one can apply.
    BinaryWithoutData,
    /// `incomplete`: a `GIT binary patch` that does not inflate to its size.
    BinaryTruncated,
    /// `incomplete`: `GIT binary patch` blocks declaring more than 64 MiB in
    /// all (replay would write and hash them).
    BinaryTooLarge,
    /// `incomplete`: the body ends mid-line (a last `index` line whose two
    /// ids are whole is accepted, as git does).
    UnterminatedLine,
    /// `incomplete`: (`--extract`) the body opens `<patch>` or a fence and
    /// never closes it.
    UnterminatedEnvelope,
    /// `incomplete`: (`--extract`) the body has no `<patch>` line or
    /// ```` ```diff ```` fence.
    MissingEnvelope,
    /// `incomplete`: (`--extract`) the body has more than one envelope.
    AmbiguousEnvelope,
    /// `incomplete`: the body is not as long as the server declared.
    LengthMismatch,
    /// `incomplete`: the response stopped on its token limit
    /// (`finish_reason: length`, no `data: [DONE]`, Responses `status:
    /// incomplete`, `stop_reason: max_tokens`, no `message_stop`).
    ProviderTruncated,
    /// `incomplete`: the response is an error payload or carries an error
    /// event.
    ProviderError,
    /// `incomplete`: the response stopped for any reason other than its
    /// end or its token limit.
    ProviderUnfinished,
    /// `incomplete`: the response is not valid JSON or SSE for its format.
    MalformedResponse,
    /// `incomplete`: (live capture) the connection failed, timed out or
    /// closed before the whole response arrived; the bytes that did arrive
    /// are the stored response.
    TransportError,
    /// `incomplete`: (live capture) the server answered with a status other
    /// than 2xx; the message quotes the error payload's own message.
    HttpStatus,
    /// `incomplete`: (live capture) the server sent the API key back. Every
    /// copy is stored masked with `*`, so the stored response is not byte
    /// for byte what arrived, and the key should be rotated.
    ApiKeyEchoed,

    // Notes on a receipt: harmless, they change no verdict.
    /// A note, no verdict: one blank context line past a hunk's counts,
    /// which git ignores.
    SurplusBlankContext,
    /// A note, no verdict: the receipt's trace has no begin line (`trace
    /// begin`), so nothing binds its lines together.
    UnauthenticatedTrace,

    // A verdict's reasons.
    /// `incomplete`: no transcript receipt: nothing was captured.
    TranscriptMissing,
    /// `fixture_mismatch`: no fixture lock: the fixtures the checks read were
    /// never locked.
    LockMissing,
    /// `fixture_mismatch`: the fixture lock holds no files.
    LockEmpty,
    /// `fixture_mismatch`: the patch added, removed or changed a locked
    /// fixture (one reason per path).
    FixtureDrift,
    /// `reject`: no property record: the properties never ran.
    PropertiesMissing,
    /// `reject`: the replay talked to a model: a property or the test
    /// command printed a completion id other than the captured one.
    EndpointCoupled,
    /// `reject`: the property record lists no property.
    NoProperties,
    /// `reject`: the test command's results are not the runner's own
    /// account: what was read from its log or report disagrees with the
    /// runner's closing count, or that count is missing or printed twice
    /// (the host-side property `runner_integrity`).
    RunnerSubverted,
    /// `reject`: a property missed (one reason per property).
    PropertyMiss,
    /// `reject`: a property failed to run (one reason per property).
    PropertyError,
    /// `reject`: a property is vacuous: it checked nothing that could fail
    /// (one reason per property).
    PropertyVacuous,
    /// `review`: the transcript is complete, the fixtures locked and
    /// unchanged, and every property holds.
    AllHold,
    /// Reports only: a run whose records cannot be trusted (a broken chain);
    /// it has no verdict.
    BrokenChain,
}

impl ReasonCode {
    /// The code as records spell it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Every code, in the order defined here.
    pub fn all() -> impl Iterator<Item = ReasonCode> {
        <ReasonCode as strum::IntoEnumIterator>::iter()
    }

    /// The variant's comment: which verdict it leads to, and why.
    pub fn meaning(self) -> &'static str {
        strum::EnumMessage::get_documentation(&self).unwrap_or("")
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_is_spelt_as_serde_writes_it_and_documented() {
        for c in ReasonCode::all() {
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::Value::String(c.as_str().into())
            );
            let back: ReasonCode = serde_json::from_value(c.as_str().into()).unwrap();
            assert_eq!(back, c);
            assert!(!c.meaning().is_empty(), "{c} has no comment");
        }
        assert!(serde_json::from_value::<ReasonCode>("no_such_code".into()).is_err());
    }
}
