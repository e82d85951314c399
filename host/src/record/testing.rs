//! The parts of a property record that say how a trial was tested: the
//! evaluator's inputs and required tests, each test's transition from the
//! base to the patched tree, and the test command's run.

use super::StoredFile;
use serde::{Deserialize, Serialize};

/// The evaluator's inputs of a trial.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evaluation {
    /// The evaluator's test patch, stored beside this record as
    /// `ID.eval.patch`. In every tree the test command runs in, it is
    /// applied after the agent's patch, on the paths it touches reset to
    /// the base revision first (as the SWE-bench harness does), and alone
    /// on the base for the baseline. Properties see the agent's patch only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<StoredFile>,
    /// The paths the evaluator's patch touches, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The paths the agent's patch changed that were replaced before the
    /// tests ran: the evaluator's patch's, and every other path under the
    /// locked test globs (reset to the base); also findings of the
    /// host-side property `evaluator_files`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_overwritten: Vec<String>,
    /// The tests that decide.
    #[serde(flatten)]
    pub required: RequiredTests,
}

/// The tests an evaluator requires, by the id rules of `tests_pass`
/// (pytest node ids, `classname::name`, `name (module.Class)`, bare names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequiredTests {
    /// Fail on the base revision, must pass after the patch (SWE-bench's
    /// `FAIL_TO_PASS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_to_pass: Vec<String>,
    /// Pass on the base revision, must still pass (`PASS_TO_PASS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_to_pass: Vec<String>,
    /// Must pass after the patch (`--require-pass`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require_pass: Vec<String>,
}

impl RequiredTests {
    pub fn is_empty(&self) -> bool {
        self.fail_to_pass.is_empty() && self.pass_to_pass.is_empty() && self.require_pass.is_empty()
    }
}

/// A required test and how it fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequiredOutcome {
    /// The id as given (its first line).
    pub id: String,
    /// The list it came from.
    pub list: super::RequiredList,
    /// How it fared on the base revision; absent when the test command did
    /// not run there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<super::TestFate>,
    /// The same, after the patch.
    pub after: super::TestFate,
    /// Whether it is in the patched report and passes there.
    pub passes: bool,
}

/// Every test of a trial's reports by transition. With a base report:
/// `pass_to_pass` and `new_passed` are counts, the other groups list ids
/// (sorted); without one, only `passed` (a count), `failed` and `skipped`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestTransitions {
    /// The evaluator's required tests, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<RequiredOutcome>,
    /// Passed on the base and after (a count).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pass_to_pass: u64,
    /// Failed on the base, pass after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_to_pass: Vec<String>,
    /// Failed on the base and after: recorded, not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_to_fail: Vec<String>,
    /// Passed on the base, fail after: counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_to_fail: Vec<String>,
    /// Not on the base (or skipped there), pass after (a count).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub new_passed: u64,
    /// Not on the base (or skipped there), fail after: counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_failed: Vec<String>,
    /// In the base report, not in the patched one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
    /// Skipped after the patch (a count).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: u64,
    /// Without a base report: passed (a count).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub passed: u64,
    /// Without a base report: failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How replay ran the project's test command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestRun {
    pub command: String,
    /// The network it had.
    pub network: super::TestNetwork,
    /// `namespaces`: the command ran as an unprivileged user in new user,
    /// mount, PID, network, IPC and UTS namespaces, with only its patched
    /// copy, its report directory and a private `/tmp` writable, and
    /// `$HOME`, the compile cache, its key, the ledger and the user's
    /// checkout out of sight. `none`: the kernel refused the namespaces and
    /// `--allow-unsandboxed` ran it as the operator. Absent in records
    /// written before this field, whose commands had a network namespace
    /// only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::TestSandbox>,
    /// The command's exit code (null when killed by a signal).
    pub exit_code: Option<i32>,
    /// Set when the host killed the command, with why. Such a run makes
    /// the host-side property `test_command` an `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<super::Stopped>,
    /// Completion ids (`chatcmpl-…`, `resp_…`, `msg_…`) in the command's
    /// output or report, sorted; any but the captured one makes the trial
    /// `reject` with `endpoint_coupled`. Empty is omitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completion_ids: Vec<String>,
    /// How the same command ran on the base revision, unpatched (absent
    /// with `--no-test-baseline`, and in records written before it). Its
    /// report, when it wrote one, is the property record's `base_junit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineRun>,
    /// The last 64 KiB of what the command wrote to stdout (lossy UTF-8;
    /// untrusted text). Empty is omitted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout_tail: String,
    /// The same of stderr.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr_tail: String,
    /// The log parser that turned the command's output into its report,
    /// when the command wrote none itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_parser: Option<crate::logparse::LogParser>,
    /// How long the command ran, in milliseconds (wall time, from start to
    /// the end of its last process). Only the command's own run is timed:
    /// properties are judged by fuel, and their records must replay
    /// identically. Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// Everything the trial's run wrote (up to the output cap), stdout
    /// then stderr under a header line each, stored beside this record as
    /// `ID.test.log` (untrusted text). Absent for the base's run and in
    /// records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<StoredFile>,
    /// Why the run's results are not the runner's own account: what was
    /// read from its log (or its report) disagrees with the runner's
    /// closing count, or that count is missing or printed twice. Any entry
    /// makes the host-side property `runner_integrity` miss and the trial
    /// `reject` with `runner_subverted`. Empty is omitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subverted: Vec<String>,
}

/// The test command's run on the base revision: the suite as the trusted
/// base leaves it, in the same sandbox and under the same limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaselineRun {
    /// Its exit code (null when killed by a signal).
    pub exit_code: Option<i32>,
    /// Set when the host killed it, as the trial's `stopped`. A stopped
    /// baseline, or one that wrote no report, leaves `tests_pass` nothing
    /// to compare with: the host-side property `test_command` is then an
    /// `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<super::Stopped>,
    /// The last 64 KiB of its stdout, as the trial's `stdout_tail`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout_tail: String,
    /// The same of stderr.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr_tail: String,
}
