//! The transcript receipt: what the model (or the capture) produced, where
//! it came from, and whether it is whole.

use super::{CaptureVerdict, PatchEnvelope, Reason, Record, StoredFile, TraceVerification};
use serde::{Deserialize, Serialize};

/// `transcripts/ID.json`: what the model produced, and whether it is whole.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TranscriptReceipt {
    pub schema: u32,
    /// Always `"transcript"`.
    pub record: String,
    pub run_id: String,
    /// How the body was encoded.
    pub format: crate::provider::BodyFormat,
    /// The patch text (a unified diff) taken from the response: `ID.patch`.
    pub body: StoredFile,
    /// The provider response as received (`ID.response`), for provider
    /// formats; absent for `raw`, where the response is the patch.
    pub response: Option<StoredFile>,
    /// The length the server declared (Content-Length), if the client knew it.
    pub declared_bytes: Option<u64>,
    /// The provider's request id, if the client had one.
    pub request_id: Option<String>,
    /// True when no reason below was found.
    pub complete: bool,
    /// `captured`, or `incomplete` when a reason below was found.
    pub verdict: CaptureVerdict,
    /// Every reason the body is incomplete; empty when complete.
    pub reasons: Vec<Reason>,
    /// The agent's tool-call trace (`ID.trace.jsonl`), when one was captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<StoredFile>,
    /// How the trace was authenticated at capture, when it was begun with a
    /// key (`trace begin`): every line's chain link and MAC verified with
    /// the run's key, whose sha256 (never the key) is recorded. Absent for
    /// a trace without a begin line, which the `unauthenticated_trace` note
    /// then names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_auth: Option<TraceAuth>,
    /// When the capture was recorded, RFC 3339 UTC.
    pub captured_at: String,
    /// The model the server said produced the response (`model` in the
    /// body or its first event), as opposed to the one asked for
    /// (`http.model_requested`). Absent when the body names none, for `raw`,
    /// and in receipts written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's id of this completion (`chatcmpl-…`, `resp_…`,
    /// `msg_…`), read from the body. Later steps compare it with any
    /// completion id they see. Absent as `model` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_id: Option<String>,
    /// The token usage the body reports. Absent when it reports none (a
    /// stream cut before its usage event, a server that sends none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// The HTTP exchange of a live capture (`capture --prompt-file`);
    /// absent when a body file was captured. The request id and declared
    /// length of the exchange are the top-level `request_id` and
    /// `declared_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpExchange>,
    /// How many leading path components `git apply -p` strips from the
    /// patch's names: 1 for `a/`/`b/` (or any other one-component prefix
    /// pair), 0 for `--no-prefix` diffs. Replay applies with exactly this
    /// level. Absent in receipts written before it existed: 1.
    #[serde(default = "default_strip")]
    pub strip: u32,
    /// The extraction asked for (`capture --extract`): `patch-tags` (the
    /// diff between `<patch>` and `</patch>`) or `fence` (one fenced
    /// ```` ```diff ```` block). Absent when none was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<crate::envelope::Extract>,
    /// The wrapping the patch was taken out of: `patch-tags`, `fence`, or
    /// `mbox` (a `git format-patch` mail, recognised without asking).
    /// Absent when the patch text was the diff itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<PatchEnvelope>,
    /// Harmless irregularities that lose nothing, each with a code and a
    /// sentence (`surplus_blank_context`: one blank context line past a
    /// hunk's counts, which git ignores). Empty is omitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Reason>,
    /// Where the patch came from when it was taken from commits
    /// (`capture --git BASE..HEAD`) rather than a response. Absent for a
    /// captured response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitRange>,
    /// The repository the patch was captured in, for people: its `origin`
    /// remote's URL with any user name, password, query and fragment
    /// removed (`https://github.com/org/repo`), else the name of its
    /// top-level directory. Reports show it; nothing is judged by it (the
    /// repository's configuration names it). Absent when capture ran
    /// outside a repository, and in receipts written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
}

/// The commits a patch was taken from (`capture --git BASE..HEAD`): the
/// diff from the merge base of the two to the head. `check` judges it on
/// exactly that merge base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitRange {
    /// The range as given (`origin/main..HEAD`).
    pub range: String,
    /// The full commit id the left side named.
    pub base: String,
    /// The full commit id the right side named: the branch's tip.
    pub head: String,
    /// The full commit id of the merge base of `base` and `head`: the
    /// revision the patch applies to, and the only one `check` judges it on.
    pub merge_base: String,
}

/// The authentication of a captured trace (`capture --trace`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceAuth {
    /// The run id of the trace's begin line.
    pub run: String,
    /// The agent the run belongs to.
    pub agent: String,
    /// sha256 of the run's key.
    pub key_sha256: String,
    /// The commit the run's workspace was made at.
    pub base: String,
    /// Whether an end line (`trace end`) seals the trace.
    pub sealed: bool,
    /// Lines in the trace, begin and end lines included.
    pub lines: u64,
    /// Always `hmac-sha256`: every line's MAC verified under the key.
    pub verified: TraceVerification,
}

fn default_strip() -> u32 {
    1
}

/// Tokens a provider reports for one completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenUsage {
    /// Tokens the model read: OpenAI `prompt_tokens` (chat) or
    /// `input_tokens` (Responses); Anthropic `input_tokens` plus
    /// `cache_creation_input_tokens` and `cache_read_input_tokens`, so that
    /// every provider counts cached input as input.
    pub input_tokens: u64,
    /// Tokens the model wrote: `completion_tokens` (chat), `output_tokens`
    /// (Responses, Anthropic; for an Anthropic stream the last
    /// `message_delta` count). Reasoning tokens are included where the
    /// provider includes them.
    pub output_tokens: u64,
    /// The provider's `total_tokens` when it gives one, else
    /// `input_tokens + output_tokens`.
    pub total_tokens: u64,
}

/// How a live capture called the model, and what the server answered.
/// It never holds the API key: only the name of the variable it came from
/// is known to the command, and it is not recorded either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpExchange {
    /// The API called.
    pub provider: crate::provider::Provider,
    /// The API base the request went to (`https://host/v1`), as given:
    /// an endpoint with credentials, a query or a fragment is refused, so
    /// this holds no secret.
    pub endpoint: String,
    /// The model named in the request (`--model`).
    pub model_requested: String,
    /// Whether the response was asked for as a server-sent-event stream.
    pub stream: bool,
    /// The HTTP status of the response; null when none arrived (the
    /// connection failed or timed out before a status line).
    pub status: Option<u16>,
    /// The output token limit sent in the request (`--max-tokens`, else
    /// `MODEL_TOKEN_BUDGET`, else `[capture] max_tokens`).
    pub max_tokens: u64,
    /// The exact request body sent (`ID.request`).
    pub request: StoredFile,
}

impl Record for TranscriptReceipt {
    const KIND: &'static str = "transcript";
    fn run_id(&self) -> &str {
        &self.run_id
    }
    fn schema(&self) -> u32 {
        self.schema
    }
    fn kind(&self) -> &str {
        &self.record
    }
}
