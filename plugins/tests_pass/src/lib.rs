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

use agent_ledger_guest::{Finding, Guest, Info, Outcome, Trial, config, finding};

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
        let doc = roxmltree::Document::parse(&text)
            .map_err(|e| format!("the test report is not XML: {e}"))?;
        let root = doc.root_element().tag_name().name();
        if root != "testsuites" && root != "testsuite" {
            return Err(format!("the test report is not JUnit XML (root `{root}`)"));
        }
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
                // Only a repository-relative file attribute names a path.
                let path = case
                    .attribute("file")
                    .filter(|p| !p.starts_with('/') && !p.split('/').any(|c| c == ".."))
                    .unwrap_or("");
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
