//! The runner's own closing count, compared with what was read from its
//! output or report. The code under test prints into the same stream as the
//! runner, so a line that looks like a result can be forged or completed
//! (`print("ok")` ends unittest's `test_x (...) ... ` line, and the real
//! `FAIL` lands on the next one). The runner prints its count once, last,
//! after every test has run: a parsed log that disagrees with it, a count
//! that is missing, or one printed twice is `runner_subverted`.
//!
//! - pytest (`-rA`): the last `short test summary info` block is read, up to
//!   the closing line (`=== 1 failed, 2 passed in 0.12s ===`); earlier
//!   blocks are captured output (pytest's own tests print inner sessions).
//!   `PASSED`/`XPASS` lines must equal `passed` + `xpassed`, `FAILED`/`ERROR`
//!   lines `failed` + `errors`, `XFAIL` lines `xfailed`.
//! - unittest and Django (`--verbosity 2`): exactly one `Ran N tests` line,
//!   followed by `OK…` or `FAILED (failures=…, errors=…)`. N equals the
//!   tests read (class and module fixtures aside), no test is read twice,
//!   and the tests read as failed are none exactly when the count says `OK`,
//!   and never more than `failures + errors + unexpected successes`
//!   (subtests count once per failure).
//! - sympy (`bin/test`): exactly one `tests finished: …` line; the tests read
//!   as passed equal `passed`, those read as failed are never more than
//!   `failed + exceptions + expected to fail but passed`, and none exactly
//!   when that sum is 0 and nothing failed to import.
//!
//! With a report the command wrote (no log parser), the report must show at
//! least as many failed tests as any closing count of a runner found in the
//! output claims (`pytest`, unittest, `cargo test` summed over its binaries,
//! `go test`, mocha, jest, vitest).

use super::{LogParser, Logged, Seen};

/// What a closing count says, per kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Count {
    passed: u64,
    failed: u64,
    xfailed: u64,
}

/// Why `cases`, read by `parser` from `text`, are not the runner's account;
/// `None` when they agree with its closing count.
pub(super) fn disagreement(parser: LogParser, text: &str, cases: &[Logged]) -> Option<String> {
    match parser {
        LogParser::Pytest => pytest(text, cases),
        LogParser::Django => unittest(text, cases),
        LogParser::Sympy => sympy(text, cases),
    }
}

fn tally(cases: &[Logged]) -> (u64, u64, u64) {
    let n = |s: Seen| cases.iter().filter(|c| c.seen == s).count() as u64;
    (n(Seen::Passed), n(Seen::Failed), n(Seen::Skipped))
}

/// `N word, M word` pairs, e.g. `1 failed, 2 passed, 3 warnings`.
fn pairs(s: &str) -> Option<Pairs> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (n, word) = part.split_once(' ')?;
        out.push((n.parse().ok()?, word.trim().to_string()));
    }
    Some(out)
}

/// A closing count: each number and its word (`failed`, `passed`, …).
type Pairs = Vec<(u64, String)>;

/// pytest's closing line, `=+ COUNTS in T =+` (or, with `-q`, bare):
/// its counts.
pub(super) fn pytest_closing(line: &str) -> Option<Pairs> {
    let line = line.trim().trim_matches('=').trim();
    let (counts, time) = line.rsplit_once(" in ")?;
    // `0.12s` (pytest 5 and later) or `0.12 seconds` (before).
    let mut words = time.split_whitespace();
    let secs = words.next()?;
    let number = match secs.strip_suffix('s') {
        Some(n) => n,
        None if words.next() == Some("seconds") => secs,
        None => return None,
    };
    if number.parse::<f64>().is_err() {
        return None;
    }
    if counts == "no tests ran" {
        return Some(Vec::new());
    }
    let pairs = pairs(counts)?;
    let known = [
        "passed",
        "failed",
        "error",
        "errors",
        "skipped",
        "deselected",
        "xfailed",
        "xpassed",
        "warning",
        "warnings",
        "rerun",
        "subtests passed",
        "subtests failed",
        "subtests skipped",
    ];
    (!pairs.is_empty() && pairs.iter().all(|(_, w)| known.contains(&w.as_str()))).then_some(pairs)
}

fn count_of(pairs: &[(u64, String)], words: &[&str]) -> u64 {
    pairs
        .iter()
        .filter(|(_, w)| words.contains(&w.as_str()))
        .map(|(n, _)| n)
        .sum()
}

fn is_pytest_header(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('=') && t.trim_matches('=').trim() == "short test summary info"
}

/// The lines of pytest's last short summary block, and its closing line's
/// counts; `Err` when there is no closing line after it.
pub(super) fn pytest_block(text: &str) -> Result<(Vec<&str>, Pairs), &'static str> {
    let lines: Vec<&str> = text.lines().collect();
    let closing = lines
        .iter()
        .rposition(|l| pytest_closing(l).is_some())
        .ok_or("pytest's closing line (`=== N passed in …s ===`) is missing from its output")?;
    let counts = pytest_closing(lines[closing]).unwrap_or_default();
    let start = lines[..closing]
        .iter()
        .rposition(|l| is_pytest_header(l))
        .map_or(closing, |h| h + 1);
    Ok((lines[start..closing].to_vec(), counts))
}

fn pytest(text: &str, cases: &[Logged]) -> Option<String> {
    let _ = cases;
    let (block, counts) = match pytest_block(text) {
        Ok(b) => b,
        Err(why) => return Some(why.into()),
    };
    // Lines, not cases: an `ERROR file.py - …` (a collection error) names
    // no test but is in the count.
    let lines = |words: &[&str]| {
        block
            .iter()
            .filter(|l| l.split_once(' ').is_some_and(|(w, _)| words.contains(&w)))
            .count() as u64
    };
    let (passed, failed, skipped) = (
        lines(&["PASSED", "XPASS"]),
        lines(&["FAILED", "ERROR"]),
        lines(&["XFAIL"]),
    );
    let want = Count {
        passed: count_of(&counts, &["passed", "xpassed"]),
        failed: count_of(&counts, &["failed", "error", "errors"]),
        xfailed: count_of(&counts, &["xfailed"]),
    };
    // Skips are not lines of their own (`SKIPPED [2] file:line`): only
    // the `XFAIL` lines are read as skipped.
    let got = Count {
        passed,
        failed,
        xfailed: skipped,
    };
    (got != want).then(|| {
        format!(
            "the log's results ({} passed, {} failed or erroring, {} xfailed) disagree with pytest's closing line ({} passed, {} failed or erroring, {} xfailed)",
            got.passed, got.failed, got.xfailed, want.passed, want.failed, want.xfailed
        )
    })
}

/// `Ran N tests in T`.
fn ran(line: &str) -> Option<u64> {
    let rest = line.trim().strip_prefix("Ran ")?;
    let (n, rest) = rest.split_once(' ')?;
    (rest.starts_with("test") && rest.contains(" in ")).then_some(())?;
    n.parse().ok()
}

/// unittest's class and module fixtures: errors, not tests `Ran` counts.
fn is_fixture(name: &str) -> bool {
    matches!(
        name,
        "setUpClass" | "tearDownClass" | "setUpModule" | "tearDownModule"
    )
}

/// The one line of `lines` that is the runner's closing count; a count
/// missing or printed twice is the finding.
fn only_one(
    lines: &[&str],
    is_count: impl Fn(&str) -> bool,
    runner: &str,
    what: &str,
) -> Result<usize, String> {
    let at: Vec<usize> = (0..lines.len()).filter(|&i| is_count(lines[i])).collect();
    match at.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!(
            "{runner}'s closing count ({what}) is missing from the output"
        )),
        _ => Err(format!(
            "{runner}'s closing count ({what}) appears {} times: one was printed by something other than the runner",
            at.len()
        )),
    }
}

fn unittest(text: &str, cases: &[Logged]) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = match only_one(&lines, |l| ran(l).is_some(), "unittest", "`Ran N tests`") {
        Ok(at) => at,
        Err(why) => return Some(why),
    };
    let n = ran(lines[at]).unwrap_or(0);
    let Some(result) = lines[at + 1..]
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
    else {
        return Some(
            "unittest's result (`OK` or `FAILED (…)`) is missing after `Ran N tests`".into(),
        );
    };
    let failing = if result == "OK" || result.starts_with("OK (") {
        0
    } else if let Some(inner) = result
        .strip_prefix("FAILED (")
        .and_then(|r| r.strip_suffix(')'))
    {
        let pairs: Option<Vec<(String, u64)>> = inner
            .split(", ")
            .map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect();
        let Some(pairs) = pairs else {
            return Some(format!(
                "unittest's result `{result}` does not read as a count"
            ));
        };
        pairs
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "failures" | "errors" | "unexpected successes"))
            .map(|(_, v)| v)
            .sum()
    } else {
        return Some(format!(
            "unittest's result after `Ran {n} tests` is `{result}`, not `OK` or `FAILED (…)`"
        ));
    };
    let mut seen = std::collections::BTreeSet::new();
    for c in cases {
        if !seen.insert((&c.classname, &c.name)) {
            return Some(format!(
                "the output shows `{} ({})` twice: a result line was printed by something other than the runner",
                c.name, c.classname
            ));
        }
    }
    let tests = cases.iter().filter(|c| !is_fixture(&c.name)).count() as u64;
    if tests != n {
        return Some(format!(
            "the output shows {tests} test results, but unittest ran {n} tests"
        ));
    }
    let (_, shown) = super::django_lines(text);
    if shown != failing {
        return Some(format!(
            "the output shows {shown} failing results, but unittest's result is `{result}`"
        ));
    }
    None
}

fn sympy(text: &str, cases: &[Logged]) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = match only_one(
        &lines,
        |l| l.contains("tests finished: "),
        "sympy",
        "`tests finished: …`",
    ) {
        Ok(at) => at,
        Err(why) => return Some(why),
    };
    // The count may wrap onto a second line before `in T seconds`.
    let mut count = lines[at]
        .split_once("tests finished: ")
        .map(|(_, r)| r.to_string())
        .unwrap_or_default();
    if !count.contains(" seconds")
        && let Some(next) = lines.get(at + 1)
    {
        count.push_str(next);
    }
    let count = count.trim().trim_matches('=').trim();
    let Some((counts, _)) = count.rsplit_once("in ") else {
        return Some(format!(
            "sympy's closing count `{count}` does not read as a count"
        ));
    };
    let Some(pairs) = pairs(counts) else {
        return Some(format!(
            "sympy's closing count `{count}` does not read as a count"
        ));
    };
    let passed = count_of(&pairs, &["passed"]);
    let failing = count_of(
        &pairs,
        &["failed", "exceptions", "expected to fail but passed"],
    );
    let import_failed = text.contains("[?]   Failed to import");
    let (got_passed, got_failed, _) = tally(cases);
    if got_passed != passed {
        return Some(format!(
            "the output shows {got_passed} passed tests, but sympy's closing count says {passed}"
        ));
    }
    if got_failed > failing || (got_failed == 0 && failing > 0 && !import_failed) {
        return Some(format!(
            "the output shows {got_failed} failed tests, but sympy's closing count says {failing} failed, erred or passed unexpectedly"
        ));
    }
    None
}

/// The failed tests a runner's closing line claims: pytest's `N failed` and
/// `N errors`, unittest's `failures=`, `errors=` and `unexpected
/// successes=` (a test that fails and then errors in its teardown counts
/// twice there, and once in a report: such a run is `runner_subverted`,
/// fail-closed),
/// cargo's `N failed`, go's `FAIL pkg` (one), mocha's `N failing`,
/// jest's and vitest's `Tests: N failed`. Whether cargo's counts add up
/// (one line per test binary).
fn claimed_failures(line: &str) -> Option<(u64, bool)> {
    let t = line.trim();
    if let Some(p) = pytest_closing(t) {
        return Some((count_of(&p, &["failed", "error", "errors"]), false));
    }
    if let Some(inner) = t.strip_prefix("FAILED (").and_then(|r| r.strip_suffix(')')) {
        let mut failures = 0;
        let mut errors = 0;
        for part in inner.split(", ") {
            match part.split_once('=') {
                Some(("failures", n)) => failures = n.parse().ok()?,
                Some(("errors", n)) => errors = n.parse::<u64>().ok()?,
                Some(("unexpected successes", n)) => failures += n.parse::<u64>().ok()?,
                Some(_) => {}
                None => return None,
            }
        }
        return (failures + errors > 0).then_some((failures + errors, false));
    }
    if let Some(rest) = t
        .strip_prefix("test result: FAILED.")
        .or_else(|| t.strip_prefix("test result: ok."))
    {
        let n = rest
            .split(';')
            .find_map(|p| p.trim().strip_suffix(" failed"))
            .and_then(|n| n.trim().parse().ok())?;
        return Some((n, true));
    }
    // go: `FAIL\tpkg\t0.1s` for each failing package (summed), and a last
    // bare `FAIL` for the run.
    if t.strip_prefix("FAIL\t").is_some_and(|r| !r.is_empty()) {
        return Some((1, true));
    }
    if t == "FAIL" {
        return Some((1, false));
    }
    if let Some(n) = t.strip_suffix(" failing")
        && let Ok(n) = n.parse::<u64>()
    {
        return Some((n, false));
    }
    if let Some(rest) = t
        .strip_prefix("Tests:")
        .or_else(|| t.strip_prefix("Tests "))
        && let Some((n, _)) = rest.trim().split_once(" failed")
    {
        return n.trim().parse().ok().map(|n| (n, false));
    }
    None
}

/// With a report the command wrote: whether the report shows fewer failed
/// tests (`report_failures`) than the runners' closing counts in `text`
/// claim (every count, not only the last: a count printed after the
/// runner's never lowers it). The count is the runner's; the report may be
/// the code's.
pub fn report_disagreement(text: &str, report_failures: u64) -> Option<String> {
    let mut most = 0u64;
    let mut summed = 0u64;
    let mut shown = None;
    for line in text.lines() {
        let Some((n, adds)) = claimed_failures(line) else {
            continue;
        };
        if adds {
            summed += n;
        } else {
            most = most.max(n);
        }
        if n > 0 && shown.is_none() {
            shown = Some(line.trim().to_string());
        }
    }
    let claimed = most.max(summed);
    (claimed > report_failures).then(|| {
        format!(
            "the runner's closing count (`{}`) shows {claimed} failed tests, but the report shows {report_failures}: the report is not the runner's account",
            crate::output::inert(shown.as_deref().unwrap_or_default())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, seen: Seen) -> Logged {
        Logged {
            classname: "m.C".into(),
            name: name.into(),
            seen,
        }
    }

    #[test]
    fn pytest_closing_lines() {
        assert_eq!(
            pytest_closing("==== 1 failed, 2 passed, 3 warnings in 0.12s ====").unwrap(),
            [
                (1, "failed".to_string()),
                (2, "passed".into()),
                (3, "warnings".into())
            ]
        );
        assert_eq!(pytest_closing("2 passed in 0.01s").unwrap().len(), 1);
        assert_eq!(pytest_closing("=== no tests ran in 0.01s ===").unwrap(), []);
        assert!(pytest_closing("=== 2 passed in 1.00s (0:00:01) ===").is_some());
        // pytest before 5.
        assert_eq!(
            pytest_closing("==== 1 failed, 2 passed in 0.12 seconds ====")
                .unwrap()
                .len(),
            2
        );
        assert!(pytest_closing("I got 2 passed in a row").is_none());
    }

    #[test]
    fn unittest_counts() {
        let ok = [case("test_a", Seen::Passed), case("test_b", Seen::Failed)];
        let text = "test_a (m.C) ... ok\ntest_b (m.C) ... FAIL\nRan 2 tests in 0.01s\n\nFAILED (failures=1)\n";
        assert_eq!(unittest(text, &ok), None);
        // `ok` printed by the code: the FAIL never read.
        let forged_text = "test_a (m.C) ... ok\ntest_b (m.C) ... ok\nFAIL\nRan 2 tests in 0.01s\n\nFAILED (failures=1)\n";
        let forged = [case("test_a", Seen::Passed), case("test_b", Seen::Passed)];
        assert!(
            unittest(forged_text, &forged)
                .unwrap()
                .contains("0 failing results")
        );
        // Subtests: one test, two failures counted.
        let sub = "test_s (m.C.test_s) ... \n  test_s (m.C.test_s) [a] ... FAIL\n  test_s (m.C.test_s) (i=2) ... FAIL\nRan 1 test in 0.1s\n\nFAILED (failures=2)\n";
        assert_eq!(unittest(sub, &[case("test_s", Seen::Failed)]), None);
        // A subtest line printed under a test read as passed is not the
        // runner's: it does not stand in for the FAIL it hid.
        let hidden = "test_a (m.C) ... ok\n  test_a (m.C.test_a) [x] ... FAIL\nFAIL\ntest_n (m.C) ... ERROR\nRan 2 tests in 0.01s\n\nFAILED (failures=1, errors=1)\n";
        let read = [case("test_a", Seen::Passed), case("test_n", Seen::Failed)];
        assert!(
            unittest(hidden, &read)
                .unwrap()
                .contains("1 failing results")
        );
        let twice = "Ran 2 tests in 0.01s\nOK\nRan 2 tests in 0.01s\n\nFAILED (failures=1)\n";
        assert!(unittest(twice, &ok).unwrap().contains("2 times"));
        assert!(unittest("nothing", &ok).unwrap().contains("missing"));
        let dup = [case("test_a", Seen::Passed), case("test_a", Seen::Failed)];
        assert!(unittest(text, &dup).unwrap().contains("twice"));
        let fixture = [
            case("test_a", Seen::Passed),
            case("test_b", Seen::Failed),
            case("setUpClass", Seen::Failed),
        ];
        assert_eq!(
            unittest(
                "test_a (m.C) ... ok\ntest_b (m.C) ... FAIL\nsetUpClass (m.C) ... ERROR\nRan 2 tests in 0.1s\n\nFAILED (failures=1, errors=1)\n",
                &fixture
            ),
            None
        );
    }

    #[test]
    fn sympy_counts() {
        let cases = [case("test_a", Seen::Passed), case("test_b", Seen::Failed)];
        let text =
            "==== tests finished: 1 passed, 1 failed, in 0.10 seconds ====\nDO *NOT* COMMIT!\n";
        assert_eq!(sympy(text, &cases), None);
        let forged = [case("test_a", Seen::Passed), case("test_b", Seen::Passed)];
        assert!(sympy(text, &forged).is_some());
        let wrapped = "== tests finished: 1 passed, 1 failed, 2 skipped, \n1 exceptions, in 0.10 seconds ==\n";
        assert_eq!(sympy(wrapped, &cases), None);
    }

    #[test]
    fn a_report_greener_than_the_runners_count() {
        let log = "collected 2 items\n=== 1 failed, 1 passed in 0.1s ===\n";
        assert!(report_disagreement(log, 0).is_some());
        assert!(report_disagreement(log, 1).is_none());
        assert!(report_disagreement("=== 2 passed in 0.1s ===\n", 0).is_none());
        // A count printed after the runner's does not lower it.
        let later =
            format!("{log}=== 2 passed in 0.01s ===\ntest result: ok. 2 passed; 0 failed\n");
        assert!(report_disagreement(&later, 0).is_some());
        // A failure of another test in the report does not excuse one
        // more claimed.
        let two = "FAILED (failures=2, errors=1)\n";
        assert!(report_disagreement(two, 2).is_some());
        assert!(report_disagreement(two, 3).is_none());
        let cargo =
            "test result: FAILED. 1 passed; 1 failed;\ntest result: FAILED. 0 passed; 2 failed;\n";
        assert!(report_disagreement(cargo, 2).is_some());
        assert!(report_disagreement(cargo, 3).is_none());
        assert!(report_disagreement("  3 passing\n  1 failing\n", 0).is_some());
        assert!(report_disagreement("FAIL\tgithub.com/x/y\t0.1s\n", 0).is_some());
        // One failing test in one package: `FAIL pkg`, then `FAIL`.
        let go = "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\tgithub.com/x/y\t0.1s\nFAIL\n";
        assert!(report_disagreement(go, 1).is_none());
        assert!(report_disagreement(go, 0).is_some());
        assert!(report_disagreement("Tests:       1 failed, 2 passed, 3 total\n", 0).is_some());
        assert!(report_disagreement("no runner here\n", 0).is_none());
    }
}
