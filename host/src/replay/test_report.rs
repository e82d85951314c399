//! What the test command's run says when its report cannot be believed:
//! no report at all, or a green report from a command that failed.

use crate::record::{Finding, Outcome, PropertyResult, StoredFile, TestRun};

/// Why a run that wrote no report is not judged: its exit status, the last
/// lines it printed, and, when the shell did not find the command, what
/// the sandbox hides.
pub(super) fn no_report(run: &TestRun) -> String {
    let status = match run.exit_code {
        Some(c) => format!("exited {c}"),
        None => "was killed by a signal".into(),
    };
    let mut msg = format!("the test command {status} and wrote no report to `$AGENT_LEDGER_JUNIT`");
    if run.log_parser.is_some() {
        msg.push_str(" (its log parser found no test in its output)");
    }
    let last: Vec<&str> = run
        .stderr_tail
        .lines()
        .chain(run.stdout_tail.lines())
        .filter(|l| !l.trim().is_empty())
        .collect();
    let last = &last[last.len().saturating_sub(5)..];
    if !last.is_empty() {
        msg.push_str("; its last lines: ");
        msg.push_str(&last.join(" | "));
    }
    if run.exit_code == Some(127) || last.iter().any(|l| l.contains("not found")) {
        msg.push_str(&format!(
            "; a command was not found: the sandbox shows only the system directories (/usr, /bin, /lib, /etc, /opt, ...), hides $HOME{} and only shows `PATH` from this environment: show an interpreter, a virtualenv or a data directory read-only with `--test-ro PATH` and pass variables with `--test-env NAME`",
            std::env::var("HOME").map(|h| format!(" ({h})")).unwrap_or_default()
        ));
    }
    msg
}

/// A test command that exited non-zero while its report shows no failing
/// or erroring test. The report is written by the code under test, so it
/// can claim anything; the exit status is the runner's own account, and the
/// two must agree (a runner fails when a test fails; a coverage gate or a
/// crash after the report is a failure too). A report with any failure
/// (frozen or not) explains a non-zero status and is judged by `tests_pass`.
pub(super) fn failed_but_reported_green(run: &TestRun, report: &[u8]) -> Option<String> {
    let code = run.exit_code.filter(|&c| c != 0)?;
    let cases = crate::junit::parse(std::path::Path::new("junit.xml"), report).ok()?;
    let failed = cases
        .iter()
        .any(|c| c.status == crate::junit::Status::Failed);
    (!failed).then(|| {
        format!(
            "the test command exited {code}, but its report shows no failing test: the report is not the runner's account"
        )
    })
}

/// Why the test command's run leaves `tests_pass` nothing to trust: it was
/// stopped, wrote no report, was killed after writing one, failed with a
/// green report, or its baseline gave no report. The host-side property
/// `test_command` is then an error.
pub(super) fn complaint(
    run: Option<&TestRun>,
    junit: Option<&(StoredFile, Vec<u8>)>,
    base_junit: Option<&(StoredFile, Vec<u8>)>,
) -> Option<String> {
    let run = run?;
    match (&run.stopped, junit) {
        (Some(why), _) => Some(format!(
            "the test command was stopped ({why}) before it finished"
        )),
        (None, None) => Some(no_report(run)),
        (None, Some(_)) if run.exit_code.is_none() => Some(
            "the test command was killed by a signal before it exited: its report is not the runner's account".into(),
        ),
        (None, Some((_, bytes))) => failed_but_reported_green(run, bytes),
    }
    .or_else(|| {
        // A baseline that was asked for and gave no report leaves
        // `tests_pass` nothing to compare with: not a quiet pass (another
        // run beside it could starve it on purpose).
        let baseline = run.baseline.as_ref()?;
        match (&baseline.stopped, base_junit) {
            (Some(why), _) => Some(format!(
                "the test command was stopped ({why}) on the base revision, so the tests that passed there are unknown; `--no-test-baseline` judges without them"
            )),
            (None, None) => Some(
                "the test command wrote no report on the base revision, so the tests that passed there are unknown; `--no-test-baseline` judges without them".into(),
            ),
            (None, Some(_)) => None,
        }
    })
}

/// The host-side property `runner_integrity`, missing, when the run's
/// results are not the runner's own account (`TestRun::subverted`).
pub(super) fn runner_integrity(run: Option<&TestRun>) -> Option<PropertyResult> {
    let run = run.filter(|r| !r.subverted.is_empty())?;
    let mut result = super::property::host_result(super::RUNNER_INTEGRITY);
    result.outcome = Outcome::Miss;
    result.findings = run
        .subverted
        .iter()
        .map(|why| Finding {
            path: String::new(),
            line: None,
            message: format!("runner_subverted: {why}"),
            frozen: false,
        })
        .collect();
    Some(result)
}
