//! `tests_pass`: the trial's JUnit report (`/inputs/junit.xml`) ran at least
//! one test and has no failed or errored test except ones covered by an
//! active flake freeze. The host hands the frozen test ids (active at the
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

use agent_ledger_guest::{ChangeKind, Finding, Guest, Info, Outcome, Trial, config, finding};
use std::collections::BTreeMap;

/// At most this many findings for tests that stopped running; past it, one
/// more finding counts the rest.
const MAX_NOT_RUN: usize = 50;

/// Whether `path` could define tests of JUnit class `classname`: the path's
/// directories and file stem (before its first `.`) end with a leading run
/// of the class name's dotted segments.
fn could_define(classname: &str, path: &str) -> bool {
    let mut segments: Vec<&str> = path.split('/').collect();
    if let Some(last) = segments.last_mut() {
        *last = last.split('.').next().unwrap_or("");
    }
    let class: Vec<&str> = classname.split(['.', '/', ':']).collect();
    (1..=segments.len().min(class.len()))
        .any(|k| segments[segments.len() - k..] == class[..k] && !class[k - 1].is_empty())
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
/// JUnit `file`).
fn deleted_definition(trial: &Trial, classname: &str, file: Option<&str>) -> bool {
    trial.changes.iter().any(|c| {
        c.kind == ChangeKind::Deleted
            && (Some(c.path.as_str()) == file
                || (!classname.is_empty() && could_define(classname, &c.path)))
    })
}

/// How a test fared in one report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fate {
    Skipped,
    Failed,
    Passed,
}

/// One test case of a JUnit report.
struct Case<'a> {
    id: String,
    classname: &'a str,
    file: Option<&'a str>,
    fate: Fate,
}

/// Every test case of a parsed JUnit report.
fn cases<'a>(doc: &'a roxmltree::Document<'a>) -> Vec<Case<'a>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|case| {
            let classname = case.attribute("classname").unwrap_or("");
            let failed = case
                .children()
                .any(|c| c.has_tag_name("failure") || c.has_tag_name("error"));
            let skipped = case.children().any(|c| c.has_tag_name("skipped"));
            Case {
                id: format!("{classname}::{}", case.attribute("name").unwrap_or("")),
                classname,
                file: case.attribute("file"),
                fate: match (failed, skipped) {
                    (true, _) => Fate::Failed,
                    (false, true) => Fate::Skipped,
                    (false, false) => Fate::Passed,
                },
            }
        })
        .collect()
}

/// Parses a JUnit report; `what` names it in errors.
fn parse<'a>(text: &'a str, what: &str) -> Result<roxmltree::Document<'a>, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("{what} is not XML: {e}"))?;
    let root = doc.root_element().tag_name().name();
    if root != "testsuites" && root != "testsuite" {
        return Err(format!("{what} is not JUnit XML (root `{root}`)"));
    }
    Ok(doc)
}

/// Only a repository-relative file attribute names a path.
fn finding_path(file: Option<&str>) -> &str {
    file.filter(|p| !p.starts_with('/') && !p.split('/').any(|c| c == ".."))
        .unwrap_or("")
}

/// Tests that passed on the base revision and did not run after the patch.
fn stopped_running(trial: &Trial, base: &[Case<'_>], after: &[Case<'_>]) -> Vec<Finding> {
    let mut fate_after: BTreeMap<&str, Fate> = BTreeMap::new();
    for c in after {
        let best = fate_after.entry(c.id.as_str()).or_insert(c.fate);
        *best = (*best).max(c.fate);
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut more = 0usize;
    for c in base.iter().filter(|c| c.fate == Fate::Passed) {
        if !seen.insert(c.id.as_str()) {
            continue;
        }
        let why = match fate_after.get(c.id.as_str()) {
            Some(Fate::Passed | Fate::Failed) => continue,
            Some(Fate::Skipped) => "is skipped after the patch",
            None => "is not in the report after the patch",
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
        let mut ran = 0;
        let mut findings: Vec<Finding> = Vec::new();
        for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
            let id = format!(
                "{}::{}",
                case.attribute("classname").unwrap_or(""),
                case.attribute("name").unwrap_or("")
            );
            let failure = case
                .children()
                .find(|c| c.has_tag_name("failure") || c.has_tag_name("error"));
            if case.children().any(|c| c.has_tag_name("skipped")) && failure.is_none() {
                continue;
            }
            ran += 1;
            if let Some(f) = failure {
                let what = f.attribute("message").unwrap_or(f.tag_name().name());
                let path = finding_path(case.attribute("file"));
                let mut item = finding(path, None, format!("{id} failed: {what}"));
                if frozen.contains(&id.as_str()) {
                    let classname = case.attribute("classname").unwrap_or("");
                    match changed_definition(&trial, classname, case.attribute("file")) {
                        Some(defined) => {
                            item.message = format!(
                                "{id} failed: {what} (frozen, but counted: the patch changes `{defined}`, which defines it, and a freeze covers the test as observed, not as a patch rewrote it)"
                            );
                        }
                        None => {
                            item.frozen = true;
                            item.message =
                                format!("{id} failed (frozen flake, not counted): {what}");
                        }
                    }
                }
                findings.push(item);
            }
        }
        if ran == 0 {
            findings.push(finding("", None, "the test report ran zero tests"));
        }
        match std::fs::read_to_string("/inputs/base-junit.xml") {
            Ok(base_text) => {
                let base = parse(&base_text, "the base revision's test report")?;
                findings.extend(stopped_running(&trial, &cases(&base), &cases(&doc)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read the base revision's test report: {e}")),
        }
        Ok(if findings.iter().all(|f| f.frozen) {
            Outcome::Holds(findings)
        } else {
            Outcome::Miss(findings)
        })
    }
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
}
