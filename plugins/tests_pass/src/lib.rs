//! `tests_pass`: the trial's JUnit report (`/inputs/junit.xml`) ran at least
//! one test and has no failed or errored test except ones covered by an
//! active flake freeze or, when the test command ran on the base revision
//! too, ones that failed there as well (`fail_to_fail`: recorded, not the
//! patch's fault); and every test the evaluator requires (`fail_to_pass`,
//! `pass_to_pass`, `require_pass` in the configuration, one id per line,
//! matched by the rules of `agent_ledger_junit::Required`) is in the report
//! and passes. The host hands the frozen test ids (active at the
//! trial's injected now) in the `frozen` configuration, one per line; every
//! frozen failure is still listed, as a finding marked frozen.
//!
//! A freeze covers a test as it was observed flaking, not as a patch
//! rewrote it: a frozen failure is counted when the patch changes the file
//! that defines the test (its JUnit `file`, or a path its `classname` names:
//! `tests.test_queue.TestRetry` is defined by `tests/test_queue.py`,
//! `com.x.FooTest` by `src/test/java/com/x/FooTest.java`), since otherwise a
//! patch could move a real failure under a frozen id.
//!
//! When the test command also ran on the base revision, its report is
//! `/inputs/base-junit.xml`: every test that passed there must run after
//! the patch too (pass or fail). One that is skipped or absent was stopped
//! from running by the patch (a skip marker, a changed runner
//! configuration, a file moved where the runner does not look), which no
//! scan of the diff sees in every spelling; the run's own account does. A
//! test whose defining file the patch deletes is left to
//! `tests_not_deleted`.

use agent_ledger_guest::{
    ChangeKind, Finding, Globs, Guest, Info, Outcome, Trial, config, finding, test_globs,
};
use agent_ledger_junit::{Case, Fate, Judgement, Kind, Required, cases, judge, parse, split_ids};
use std::collections::BTreeMap;

/// At most this many findings for tests that stopped running; past it, one
/// more finding counts the rest.
const MAX_NOT_RUN: usize = 50;

/// Whether `path` could define tests of JUnit class `classname`: the path's
/// directories and file stem (before its first `.`) end with a leading run
/// of the class name's dotted segments.
fn could_define(classname: &str, path: &str) -> bool {
    defines(classname, path, false)
}

/// [`could_define`], and the run reaches the module: at most one segment
/// (the class) of the class name is left after it. `tests.test_retry.T`
/// is defined by `tests/test_retry.py`, never by `ci/tests.yml`.
fn surely_defines(classname: &str, path: &str) -> bool {
    defines(classname, path, true)
}

fn defines(classname: &str, path: &str, whole: bool) -> bool {
    let mut segments: Vec<&str> = path.split('/').collect();
    if let Some(last) = segments.last_mut() {
        *last = last.split('.').next().unwrap_or("");
    }
    let class: Vec<&str> = classname.split(['.', '/', ':']).collect();
    (1..=segments.len().min(class.len())).any(|k| {
        segments[segments.len() - k..] == class[..k]
            && !class[k - 1].is_empty()
            && (!whole || class.len() - k <= 1)
    })
}

/// The first path the patch changes that defines the test `classname` (or
/// is its JUnit `file`).
fn changed_definition<'a>(
    trial: &'a Trial,
    classname: &str,
    file: Option<&str>,
) -> Option<&'a str> {
    trial
        .changes
        .iter()
        .flat_map(|c| std::iter::once(c.path.as_str()).chain(c.old_path.as_deref()))
        .find(|p| Some(*p) == file || (!classname.is_empty() && could_define(classname, p)))
}

/// Whether the patch deletes the file that defines `classname` (or is its
/// JUnit `file`): only a test file (in the test globs, which is what
/// `tests_not_deleted` judges) that surely defines it, since deleting any
/// file this names exempts the test (`docs/test_retry.md` shares a stem
/// with `test_retry.TestBackoff`).
fn deleted_definition(trial: &Trial, classname: &str, file: Option<&str>) -> bool {
    // An invalid glob exempts nothing (`tests_not_deleted` reports it).
    let Ok(globs) = Globs::new(&test_globs(trial)) else {
        return false;
    };
    trial.changes.iter().any(|c| {
        c.kind == ChangeKind::Deleted
            && globs.is_match(&c.path)
            && (Some(c.path.as_str()) == file
                || (!classname.is_empty() && surely_defines(classname, &c.path)))
    })
}

/// Only a repository-relative file attribute names a path.
fn finding_path(file: Option<&str>) -> &str {
    file.filter(|p| !p.starts_with('/') && !p.split('/').any(|c| c == ".."))
        .unwrap_or("")
}

/// How many times each test id ran and was skipped in one report.
fn tally<'a>(cases: &'a [Case<'a>]) -> BTreeMap<&'a str, (usize, usize, usize)> {
    let mut out: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for c in cases {
        let (passed, ran, skipped) = out.entry(c.id.as_str()).or_default();
        match c.fate {
            Fate::Passed => {
                *passed += 1;
                *ran += 1;
            }
            Fate::Failed => *ran += 1,
            Fate::Skipped => *skipped += 1,
        }
    }
    out
}

/// Tests that passed on the base revision and did not run after the patch.
/// Counted per id, so that a second test given the same id (the report is
/// written by code the patch controls) cannot stand in for a skipped one:
/// an id that passed on the base is stopped when it is skipped more often,
/// or runs fewer times, than there.
fn stopped_running(
    trial: &Trial,
    base: &[Case<'_>],
    after: &[Case<'_>],
    judgement: &Judgement,
) -> Vec<Finding> {
    let (base_tally, after_tally) = (tally(base), tally(after));
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut more = 0usize;
    for c in base {
        // A required test is judged on its own, with its own finding.
        if !seen.insert(c.id.as_str()) || judgement.is_required(c) {
            continue;
        }
        let (passed, _, base_skipped) = base_tally[c.id.as_str()];
        if passed == 0 {
            continue;
        }
        let (_, ran, skipped) = after_tally.get(c.id.as_str()).copied().unwrap_or_default();
        let why = if skipped > base_skipped {
            "is skipped after the patch"
        } else if ran < passed {
            "is not in the report after the patch"
        } else {
            continue;
        };
        if deleted_definition(trial, c.classname, c.file) {
            continue;
        }
        if out.len() == MAX_NOT_RUN {
            more += 1;
            continue;
        }
        out.push(finding(
            finding_path(c.file),
            None,
            format!(
                "{} passed on the base revision and {why}: a test the patch stops from running counts as failed",
                c.id
            ),
        ));
    }
    if more > 0 {
        out.push(finding(
            "",
            None,
            format!(
                "{more} more tests that passed on the base revision did not run after the patch"
            ),
        ));
    }
    out
}

struct TestsPass;

impl Guest for TestsPass {
    fn describe() -> Info {
        Info {
            name: "tests_pass".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: "the test report ran tests and none failed, but for active flake freezes"
                .into(),
        }
    }

    fn check(trial: Trial) -> Result<Outcome, String> {
        let text = std::fs::read_to_string("/inputs/junit.xml").map_err(|e| {
            format!("no test report for this trial (`--junit` or `--test-cmd`): {e}")
        })?;
        let doc = parse(&text, "the test report")?;
        let frozen: Vec<&str> = config(&trial, "frozen")
            .unwrap_or("")
            .lines()
            .map(str::trim)
            .collect();
        let base_text = match std::fs::read_to_string("/inputs/base-junit.xml") {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read the base revision's test report: {e}")),
        };
        let base_doc = match &base_text {
            Some(t) => Some(parse(t, "the base revision's test report")?),
            None => None,
        };
        let base = base_doc.as_ref().map(cases);
        let after = cases(&doc);
        let required = required_tests(&trial);
        let judgement = judge(base.as_deref(), &after, &required);
        let mut ran = 0;
        let mut findings: Vec<Finding> = Vec::new();
        for case in &after {
            if case.fate == Fate::Skipped {
                continue;
            }
            ran += 1;
            if case.fate != Fate::Failed || judgement.is_required(case) {
                continue;
            }
            let (id, what) = (&case.id, case.message);
            let path = finding_path(case.file);
            let mut item = finding(path, None, format!("{id} failed: {what}"));
            if frozen.contains(&id.as_str()) {
                match changed_definition(&trial, case.classname, case.file) {
                    Some(defined) => {
                        item.message = format!(
                            "{id} failed: {what} (frozen, but counted: the patch changes `{defined}`, which defines it, and a freeze covers the test as observed, not as a patch rewrote it)"
                        );
                    }
                    None => {
                        item.frozen = true;
                        item.message = format!("{id} failed (frozen flake, not counted): {what}");
                    }
                }
            } else if !judgement.failure_counts(id) {
                item.frozen = true;
                item.message = format!(
                    "{id} failed on the base revision too (fail_to_fail, not counted): {what}"
                );
            }
            findings.push(item);
        }
        if ran == 0 {
            findings.push(finding("", None, "the test report ran zero tests"));
        }
        for r in &judgement.required {
            if r.holds() {
                continue;
            }
            let why = match r.transition.after {
                Some(Fate::Failed) => {
                    let message = after
                        .iter()
                        .find(|c| c.fate == Fate::Failed && r.test.matches(c))
                        .map_or("", |c| c.message);
                    format!("failed after the patch: {message}")
                }
                Some(Fate::Skipped) => "was skipped after the patch".to_string(),
                _ => "is not in the report after the patch".to_string(),
            };
            findings.push(finding(
                "",
                None,
                format!("required test `{}` ({}) {why}", r.test.id, r.kind.as_str()),
            ));
        }
        if let Some(base) = &base {
            findings.extend(stopped_running(&trial, base, &after, &judgement));
        }
        Ok(if findings.iter().all(|f| f.frozen) {
            Outcome::Holds(findings)
        } else {
            Outcome::Miss(findings)
        })
    }
}

/// The evaluator's required tests, handed over in the configuration, one
/// id per line: `fail_to_pass`, `pass_to_pass` and `require_pass`.
fn required_tests(trial: &Trial) -> Vec<(Kind, Required)> {
    [Kind::FailToPass, Kind::PassToPass, Kind::Required]
        .into_iter()
        .flat_map(|kind| {
            split_ids(config(trial, kind.as_str()).unwrap_or(""))
                .into_iter()
                .map(move |r| (kind, r))
        })
        .collect()
}

agent_ledger_guest::export!(TestsPass with_types_in agent_ledger_guest);

#[cfg(test)]
mod tests {
    use super::could_define;

    #[test]
    fn a_class_name_names_the_files_that_define_it() {
        assert!(could_define(
            "tests.test_queue.TestRetry",
            "tests/test_queue.py"
        ));
        assert!(could_define("tests.test_queue", "tests/test_queue.py"));
        assert!(could_define("test_queue.TestRetry", "test_queue.py"));
        assert!(could_define(
            "com.x.FooTest",
            "src/test/java/com/x/FooTest.java"
        ));
        assert!(could_define("FooTest", "src/test/kotlin/FooTest.kt"));
        assert!(!could_define(
            "tests.test_queue.TestRetry",
            "tests/test_other.py"
        ));
        assert!(!could_define("tests.test_queue.TestRetry", "src/queue.py"));
        assert!(!could_define(
            "com.x.FooTest",
            "src/test/java/com/y/FooTest.java"
        ));
        assert!(!could_define("", "tests/test_queue.py"));
    }

    #[test]
    fn only_the_module_surely_defines_a_class() {
        use super::surely_defines;
        assert!(surely_defines(
            "tests.test_retry.TestBackoff",
            "tests/test_retry.py"
        ));
        assert!(surely_defines("tests.test_retry", "tests/test_retry.py"));
        assert!(surely_defines(
            "com.x.FooTest",
            "src/test/java/com/x/FooTest.java"
        ));
        // A file whose stem is the first segment only (deleting
        // `.github/workflows/tests.yml` exempted the test) merely could.
        assert!(could_define(
            "tests.test_retry.TestBackoff",
            ".github/workflows/tests.yml"
        ));
        assert!(!surely_defines(
            "tests.test_retry.TestBackoff",
            ".github/workflows/tests.yml"
        ));
        assert!(!surely_defines("tests.test_retry.TestBackoff", "tests.py"));
    }
}
