//! The on-disk record schemas: the stable public types of agent-ledger.
//!
//! Every record carries `schema` (the major version; readers refuse a newer
//! one), `record` (which kind of record it is, so one cannot be passed off as
//! another) and `run_id`. Each record names the sha256 of the records it
//! builds on, so a chain cannot be mixed across runs or rewritten. Field
//! meanings are documented on the fields and in `docs/reference/records.md`.
//!
//! Serialisation is deterministic: fields in declaration order, lists sorted
//! by their producer, maps as `BTreeMap`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod reason;
mod receipt;
mod testing;
mod vocab;
pub use reason::ReasonCode;
pub use receipt::{GitRange, HttpExchange, TokenUsage, TraceAuth, TranscriptReceipt};
pub use testing::{
    BaselineRun, Evaluation, RequiredOutcome, RequiredTests, TestRun, TestTransitions,
};
pub use vocab::{
    CaptureVerdict, EntryKind, PatchEnvelope, ReplayNetwork, RequiredList, Stopped, TestFate,
    TestNetwork, TestSandbox, TraceVerification,
};

/// The schema major version this build writes and the newest it reads.
pub const SCHEMA: u32 = 1;

/// A record kind: ties a struct to its `record` tag.
pub trait Record: Serialize + for<'de> Deserialize<'de> {
    const KIND: &'static str;
    fn run_id(&self) -> &str;
    /// The record's `schema` field.
    fn schema(&self) -> u32;
    /// The record's `record` field (its kind, as the file says it).
    fn kind(&self) -> &str;
}

/// A judgement with a stable machine code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Reason {
    pub code: ReasonCode,
    pub message: String,
}

impl Reason {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        Reason {
            code,
            message: message.into(),
        }
    }
}

/// A file stored in the ledger beside a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoredFile {
    /// File name, relative to the directory of the record that names it.
    pub file: String,
    /// sha256 of the file's bytes.
    pub sha256: String,
    /// Length of the file in bytes.
    pub bytes: u64,
}

/// One entry of a fixture lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockEntry {
    /// Repository-relative POSIX path.
    pub path: String,
    /// `file` or `symlink`. Symlinks are recorded, never followed.
    pub kind: EntryKind,
    /// File length in bytes; for a symlink, the length of its target text.
    pub size: u64,
    /// sha256 of the file's bytes; for a symlink, of its target text.
    pub sha256: String,
    /// The symlink's target, as stored in the link; absent for files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `true` for a file its owner may execute (git's mode 100755); absent
    /// otherwise, so a patch that only makes a fixture executable (or no
    /// longer executable) drifts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub executable: bool,
}

/// `fixtures/ID.lock.json`: every file under the fixture roots, hashed from
/// the trusted base tree before any property runs.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FixtureLock {
    pub schema: u32,
    /// Always `"fixture_lock"`.
    pub record: String,
    pub run_id: String,
    /// sha256 of `transcripts/ID.json` this lock builds on.
    pub transcript_sha256: String,
    /// The git revision the tree was taken from, when the lock was taken by
    /// `check` from a base revision.
    pub base_revision: Option<String>,
    /// The fixture roots, repository-relative, as configured.
    pub roots: Vec<String>,
    /// Number of entries in `files`.
    pub count: u64,
    /// in-toto `dirHash` of the regular files: sha256 over the lines
    /// `"<sha256>  <path>\n"` sorted bytewise by path (symlinks excluded, as
    /// `find -type f` excludes them; they are compared entry by entry).
    pub dir_hash: String,
    /// Entries sorted bytewise by path.
    pub files: Vec<LockEntry>,
    /// The evaluator's inputs, locked as this trial's fixtures: the test
    /// patch's digest and every path it touches as it leaves them on the
    /// base revision. The test command's tree must hold exactly these
    /// before it runs. Absent without an evaluator's test patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<LockedEvaluation>,
    /// Why this repository has no fixture directory (`[fixtures] none` of
    /// the configuration): a lock of no files that is not empty by
    /// accident. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none: Option<String>,
}

/// The evaluator's test patch as a fixture lock holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockedEvaluation {
    /// sha256 of the evaluator's test patch.
    pub patch_sha256: String,
    /// Every path the patch touches, as the patch leaves it on the base
    /// revision (a path it deletes is absent), sorted bytewise by path.
    pub files: Vec<LockEntry>,
    /// Every path the patch touches, sorted.
    pub paths: Vec<String>,
    /// The configuration's test globs when the lock was taken, and test
    /// directories at any depth (`**/tests/**`, `**/test/**`): in every
    /// tree the test command runs in, each path under them that the
    /// agent's patch changed is reset to the base revision before the
    /// evaluator's patch is applied, so the evaluator's tests run against
    /// the agent's source and nothing else the agent wrote (its test data
    /// included). Absent in locks written before it, which reset only
    /// `paths`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_globs: Vec<String>,
}

impl Record for FixtureLock {
    const KIND: &'static str = "fixture_lock";
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

/// Drift between a lock and a tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Drift {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

impl Drift {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// A property's outcome.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Holds,
    Miss,
    Error,
    Vacuous,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Miss => "miss",
            Outcome::Error => "error",
            Outcome::Vacuous => "vacuous",
        }
    }
}

/// Something a property found.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Finding {
    /// Repository-relative path the finding is about ("" when none).
    pub path: String,
    /// 1-based line, when the finding is about one.
    pub line: Option<u32>,
    pub message: String,
    /// True for a finding listed so it stays visible, but not counted as a
    /// miss: a test failure an active flake freeze covers, one that failed
    /// on the base revision too (`fail_to_fail`), or an agent's file the
    /// evaluator's test patch replaced (`evaluator_files`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub frozen: bool,
}

/// One property's result inside `properties/ID.json`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PropertyResult {
    pub name: String,
    /// `builtin:NAME`, a repository-relative path, or an absolute path.
    pub plugin: String,
    /// sha256 of the component bytes that ran ("" for host-side properties).
    pub plugin_sha256: String,
    pub outcome: Outcome,
    pub findings: Vec<Finding>,
    /// Why the outcome is `error` or `vacuous`.
    pub error: Option<String>,
    /// Fuel the component consumed on the trial (deterministic).
    pub fuel_used: u64,
    /// Captured stdout/stderr, capped; a cut excerpt ends with a marker.
    pub stdout: String,
    pub stderr: String,
    /// sha256 of each input the property saw, by name.
    pub inputs: BTreeMap<String, String>,
    /// Completion ids (`chatcmpl-…`, `resp_…`, `msg_…`) in the property's
    /// whole output (stdout, stderr, findings, error; not only the kept
    /// excerpt), sorted; any but the captured one makes the trial `reject`
    /// with `endpoint_coupled`. Empty is omitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completion_ids: Vec<String>,
    /// The plugin's network imports (`wasi:sockets/*` and `wasi:http/*` at
    /// a WASI 0.2.x version, e.g. `wasi:sockets/tcp@0.2.9`), sorted: linked
    /// to functions that trap with "network access is refused
    /// (INTERFACE#FUNCTION called)", never to the host. Toolchains import
    /// them whether the property uses them or not (componentize-py,
    /// StarlingMonkey); one that calls them is `error`. Empty is omitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stubbed_imports: Vec<String>,
}

/// `properties/ID.json`: what every property said about the patched tree.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PropertyRecord {
    pub schema: u32,
    /// Always `"properties"`.
    pub record: String,
    pub run_id: String,
    /// sha256 of `transcripts/ID.json`.
    pub transcript_sha256: String,
    /// sha256 of `fixtures/ID.lock.json`.
    pub lock_sha256: String,
    /// The base revision the patch was applied to (full object id).
    pub base_revision: String,
    /// sha256 of the configuration the replay used.
    pub config_sha256: String,
    /// The injected "now" flake-freeze expiry was judged against (`--now`,
    /// else the transcript's `captured_at`), RFC 3339 UTC.
    pub now: String,
    /// The JUnit report the trial supplied (`--junit`) or its test command
    /// produced, stored beside this record as `ID.junit.xml`.
    pub junit: Option<StoredFile>,
    /// The JUnit report the same test command wrote on the base revision
    /// (see `test_run.baseline`), stored beside this record as
    /// `ID.base-junit.xml`: every test that passed there must pass in
    /// `junit` (`tests_pass`). Absent without a baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_junit: Option<StoredFile>,
    /// The test command replay ran itself (`--test-cmd`), if any.
    pub test_run: Option<TestRun>,
    /// The evaluator's inputs (`--eval-patch`, `--require-pass`; a
    /// manifest's `eval_patch`, `fail_to_pass`, `pass_to_pass`): trusted,
    /// recorded here, never judged as the agent's change. Absent when the
    /// trial has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Evaluation>,
    /// Each test's transition from the base revision's report to the
    /// patched one, as `tests_pass` judged it. Absent without a report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<TestTransitions>,
    /// Drift of the fixture roots between the lock and the patched tree.
    pub fixtures: Drift,
    /// Results in configuration order; `patch_applies` first.
    pub properties: Vec<PropertyResult>,
    /// The network the replaying process had: `isolated` (it entered a new,
    /// empty network namespace before reading any input, so nothing in the
    /// replay could reach a model), or `not isolated: WHY`. Absent in
    /// records written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<ReplayNetwork>,
}

impl Record for PropertyRecord {
    const KIND: &'static str = "properties";
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

/// The four verdicts, in the order their rules are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Review,
    Incomplete,
    FixtureMismatch,
    Reject,
}

impl Verdict {
    pub fn exit_code(self) -> crate::exit::ExitCode {
        use crate::exit::ExitCode;
        match self {
            Verdict::Review => ExitCode::Ok,
            Verdict::Incomplete => ExitCode::Incomplete,
            Verdict::FixtureMismatch => ExitCode::FixtureMismatch,
            Verdict::Reject => ExitCode::Reject,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Review => "review",
            Verdict::Incomplete => "incomplete",
            Verdict::FixtureMismatch => "fixture_mismatch",
            Verdict::Reject => "reject",
        }
    }
}

/// `verdicts/ID.json`: the classification of a trial from its records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictRecord {
    pub schema: u32,
    /// Always `"verdict"`.
    pub record: String,
    pub run_id: String,
    pub verdict: Verdict,
    /// The process exit code that goes with the verdict.
    pub exit_code: i32,
    /// Why: the failures of the first step that failed, or the checks passed.
    pub reasons: Vec<Reason>,
    /// sha256 of each record read; null when the record was missing.
    pub transcript_sha256: Option<String>,
    pub lock_sha256: Option<String>,
    pub properties_sha256: Option<String>,
    /// The tokens this trial spent, step by step; absent in verdicts
    /// written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenLedger>,
}

/// The token ledger of one trial: the model is called once, at capture, and
/// never again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenLedger {
    /// What capture spent, as the transcript receipt's `usage` reports it;
    /// null when the body reported none (a raw diff, a stream cut before
    /// its usage event) or there is no receipt.
    pub capture: Option<TokenUsage>,
    /// Tokens spent by every step after capture (lock, properties, test
    /// command): 0 when the replay ran in a network namespace of its own
    /// (the property record's `network` is `isolated`) and no output showed
    /// a completion other than the captured one. Null when that cannot be
    /// shown: no property record, a replay that was not isolated, or an
    /// `endpoint_coupled` trial, whose replay talked to a model.
    pub after_capture: Option<u64>,
}

impl Record for VerdictRecord {
    const KIND: &'static str = "verdict";
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

/// `/inputs/modes.json`, written for properties (not a ledger record): the
/// git mode of every path the patch changes, before and after, which a
/// property cannot see through WASI (it has no permission bits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TreeModes {
    /// Schema version: 1.
    pub schema: u32,
    /// Always `modes`.
    pub record: String,
    /// Every changed path (a rename as its old and its new path), sorted by
    /// path.
    pub paths: Vec<PathModes>,
}

/// One changed path and its git modes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathModes {
    /// Repository-relative path (lossy UTF-8, as `changes` in the trial).
    pub path: String,
    /// The path's exact bytes in hex, when they are not UTF-8 (two such
    /// paths can share one lossy `path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
    /// Its mode at the base revision (`100644`, `100755`, `120000`,
    /// `160000`); null when absent.
    pub base: Option<String>,
    /// Its mode in the patched tree; null when absent.
    pub patched: Option<String>,
}
