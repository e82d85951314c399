//! Log parsers: a test runner's output turned into a JUnit report, for
//! runners that write none (`--test-log-parser`, a manifest's
//! `log_parser`), as the SWE-bench harness has one per repository. The
//! output is untrusted (the code under test prints it), exactly as a report
//! it writes would be: a parsed report is judged like any other, and the
//! test command's exit status must agree with it.
//!
//! - `sympy`: `bin/test` (`--verbose`): a file header `path.py[N]`, then a
//!   line per test, `test_name STATUS` (`ok` passed; `F`, `E` and `X`, an
//!   unexpected pass, failed; `f`, an expected failure, and `s` skipped).
//!   Cases are `classname` the file's module, `name` the function.
//! - `django`: `runtests.py --verbosity 2` (unittest's verbose lines):
//!   `test_name (module.Class) ... STATUS`, the status on the same line or,
//!   after a docstring, a later one (`ok`; `FAIL`, `ERROR`, `unexpected
//!   success` failed; `skipped …`, `expected failure` skipped).
//! - `pytest`: `pytest -rA`'s short summary: `PASSED node_id`, `FAILED
//!   node_id - …`, `ERROR node_id`, `SKIPPED …`, `XFAIL node_id`, `XPASS
//!   node_id`; node ids become cases as `tests_pass` reads node ids. Only
//!   the last `short test summary info` block is read.
//!
//! What a parser reads must agree with the runner's own closing count
//! (`summary`), or the run is `runner_subverted`. With a parser set, a
//! report file the command wrote is never read: the code under test could
//! have written it.

mod summary;
pub use summary::report_disagreement;

use crate::exit::{Error, Result};
use agent_ledger_junit::{module_of, split_node};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

/// The runners a log parser exists for (a test run's `log_parser`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LogParser {
    Sympy,
    Django,
    Pytest,
}

impl LogParser {
    pub fn as_str(self) -> &'static str {
        match self {
            LogParser::Sympy => "sympy",
            LogParser::Django => "django",
            LogParser::Pytest => "pytest",
        }
    }

    pub fn parse(name: &str) -> Option<LogParser> {
        <LogParser as clap::ValueEnum>::from_str(name, false).ok()
    }
}

/// How a test ended, as a log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Passed,
    Failed,
    Skipped,
}

/// One case a log names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Logged {
    classname: String,
    name: String,
    seen: Seen,
}

/// What a log parser read in a log.
#[derive(Debug)]
pub struct Parsed {
    /// The JUnit report it makes; `None` when it finds no test.
    pub report: Option<Vec<u8>>,
    /// Why what it read is not the runner's account (`runner_subverted`):
    /// it disagrees with the runner's closing count, or that count is
    /// missing or printed twice (see `summary`).
    pub disagreement: Option<String>,
}

impl LogParser {
    /// Whether the runner writes its results to stderr (unittest's
    /// `TextTestRunner`, so Django's `runtests.py`); pytest and sympy's
    /// `bin/test` write to stdout. Only that stream is read: what the code
    /// under test writes to the other one is never a result.
    pub fn reads_stderr(self) -> bool {
        matches!(self, LogParser::Django)
    }
}

/// What `parser` reads in `log` (the runner's own stream,
/// [`LogParser::reads_stderr`]).
pub fn read(parser: LogParser, log: &[u8]) -> Result<Parsed> {
    let text = String::from_utf8_lossy(log);
    let cases = match parser {
        LogParser::Sympy => sympy(&text),
        LogParser::Django => django(&text),
        LogParser::Pytest => pytest(&text),
    };
    let disagreement = summary::disagreement(parser, &text, &cases);
    Ok(Parsed {
        report: report_of(parser, cases)?,
        disagreement,
    })
}

/// The JUnit report of `cases`; `None` when there are none.
fn report_of(parser: LogParser, cases: Vec<Logged>) -> Result<Option<Vec<u8>>> {
    if cases.is_empty() {
        return Ok(None);
    }
    let mut suite = TestSuite::new(parser.as_str());
    for c in cases {
        let status = match c.seen {
            Seen::Passed => TestCaseStatus::success(),
            Seen::Failed => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message("failed (from the runner's log)");
                s
            }
            Seen::Skipped => TestCaseStatus::skipped(),
        };
        let mut case = TestCase::new(clean(&c.name), status);
        case.set_classname(clean(&c.classname));
        suite.add_test_case(case);
    }
    let mut report = Report::new(format!("{} log", parser.as_str()));
    report.add_test_suite(suite);
    report
        .to_string()
        .map(|s| Some(s.into_bytes()))
        .map_err(|e| Error::Internal(format!("cannot write the parsed report: {e}")))
}

/// Text XML 1.0 can hold: control characters dropped.
fn clean(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() && *c != '\u{FFFE}' && *c != '\u{FFFF}')
        .collect()
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn sympy(text: &str) -> Vec<Logged> {
    let mut out = Vec::new();
    let mut module = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some((path, rest)) = line.split_once(".py[")
            && rest.trim_end().ends_with(']')
            && !path.contains(' ')
        {
            module = module_of(&format!("{path}.py"));
            continue;
        }
        let mut tokens = line.split_whitespace();
        let (Some(name), Some(status)) = (tokens.next(), tokens.next()) else {
            continue;
        };
        if !name.starts_with("test_") || !is_ident(name) {
            continue;
        }
        let seen = match status {
            "ok" => Seen::Passed,
            "F" | "E" | "X" => Seen::Failed,
            "f" | "s" => Seen::Skipped,
            _ => continue,
        };
        out.push(Logged {
            classname: module.clone(),
            name: name.to_string(),
            seen,
        });
    }
    out
}

/// `test_name (module.Class)` (or Python 3.11's `(module.Class.test_name)`).
fn unittest_id(s: &str) -> Option<(String, String)> {
    let (name, rest) = s.trim().split_once(" (")?;
    let inner = rest.strip_suffix(')')?;
    if !is_ident(name) || inner.contains(' ') || inner.is_empty() {
        return None;
    }
    let class = inner
        .strip_suffix(name)
        .and_then(|c| c.strip_suffix('.'))
        .unwrap_or(inner);
    Some((class.to_string(), name.to_string()))
}

fn unittest_status(s: &str) -> Option<Seen> {
    let s = s.trim();
    Some(match s {
        "ok" => Seen::Passed,
        "FAIL" | "ERROR" | "unexpected success" => Seen::Failed,
        "expected failure" => Seen::Skipped,
        _ if s.starts_with("skipped") => Seen::Skipped,
        _ => return None,
    })
}

fn django(text: &str) -> Vec<Logged> {
    django_lines(text).0
}

/// unittest's verbose lines: each test's result, and how many failing
/// results were printed where the runner prints them (a test's own line,
/// or a subtest's `  test_x (…) [msg] ... FAIL`), which the closing count
/// counts one by one.
fn django_lines(text: &str) -> (Vec<Logged>, u64) {
    let mut out = Vec::new();
    let mut failing = 0;
    let mut pending: Option<(String, String)> = None;
    // The test whose line opened last, and how it was read: a subtest's
    // failure counts only right under its own test, while that test is
    // open or failing (a subtest line printed under a test read as passed
    // is not the runner's).
    let mut last: Option<(String, Option<Seen>)> = None;
    for line in text.lines() {
        let (left, status) = match line.rsplit_once(" ... ") {
            Some((l, s)) => (l, unittest_status(s)),
            None => (line, None),
        };
        if let Some(id) = unittest_id(left) {
            last = Some((id.1.clone(), None));
            pending = Some(id);
        }
        let subtest = subtest_of(left).is_some_and(|name| {
            last.as_ref()
                .is_some_and(|(n, seen)| n == name && matches!(seen, None | Some(Seen::Failed)))
        });
        if status == Some(Seen::Failed) && (pending.is_some() || subtest) {
            failing += 1;
        }
        if let Some(seen) = status
            && let Some((classname, name)) = pending.take()
        {
            if let Some(l) = last.as_mut().filter(|(n, _)| *n == name) {
                l.1 = Some(seen);
            }
            out.push(Logged {
                classname,
                name,
                seen,
            });
        }
    }
    (out, failing)
}

/// The test a subtest's description names: `  test_x (module.Class[.test_x])
/// [msg]` or `… (param=1)`, indented by the runner.
fn subtest_of(s: &str) -> Option<&str> {
    let s = s.strip_prefix("  ")?;
    let (name, rest) = s.split_once(" (")?;
    let (inner, tail) = rest.split_once(") ")?;
    (is_ident(name) && !inner.contains(' ') && (tail.starts_with('[') || tail.starts_with('(')))
        .then_some(name)
}

/// The last short summary block only: earlier ones are captured output
/// (`summary`); the whole text when there is no closing line (then the
/// count's absence is the finding).
fn pytest(text: &str) -> Vec<Logged> {
    let mut out = Vec::new();
    let block = summary::pytest_block(text)
        .map(|(lines, _)| lines)
        .unwrap_or_else(|_| text.lines().collect());
    for line in block {
        let Some((word, rest)) = line.split_once(' ') else {
            continue;
        };
        let seen = match word {
            "PASSED" | "XPASS" => Seen::Passed,
            "FAILED" | "ERROR" => Seen::Failed,
            "SKIPPED" | "XFAIL" => Seen::Skipped,
            _ => continue,
        };
        // `FAILED id - message`: the id ends at the first ` - ` outside
        // brackets; SKIPPED lines name a location, not an id.
        let id = node_id(rest);
        let parts = split_node(id);
        if parts.len() < 2 || !parts[0].ends_with(".py") {
            continue;
        }
        let mut classname = module_of(parts[0]);
        for class in &parts[1..parts.len() - 1] {
            classname.push('.');
            classname.push_str(class);
        }
        out.push(Logged {
            classname,
            name: parts[parts.len() - 1].to_string(),
            seen,
        });
    }
    out
}

fn node_id(rest: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in rest.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 && rest[i..].starts_with(" - ") => return &rest[..i],
            _ => {}
        }
    }
    rest.trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(parser: LogParser, log: &str) -> Vec<(String, Seen)> {
        let cases = match parser {
            LogParser::Sympy => sympy(log),
            LogParser::Django => django(log),
            LogParser::Pytest => pytest(log),
        };
        cases
            .into_iter()
            .map(|c| (format!("{}::{}", c.classname, c.name), c.seen))
            .collect()
    }

    #[test]
    fn sympy_verbose_output() {
        let log = "============ test process starts ============\n\
                   sympy/core/tests/test_basic.py[3] \n\
                   test_a ok\n\
                   test_b F\n\
                   test_c f\n\
                   sympy/printing/tests/test_latex.py[1] \n\
                   test_d E\n\
                   ________________ sympy/core/tests/test_basic.py:test_b ________\n\
                   tests finished: 1 passed, 1 failed, 1 expected to fail, 1 exceptions\n";
        assert_eq!(
            ids(LogParser::Sympy, log),
            [
                (
                    "sympy.core.tests.test_basic::test_a".to_string(),
                    Seen::Passed
                ),
                ("sympy.core.tests.test_basic::test_b".into(), Seen::Failed),
                ("sympy.core.tests.test_basic::test_c".into(), Seen::Skipped),
                (
                    "sympy.printing.tests.test_latex::test_d".into(),
                    Seen::Failed
                ),
            ]
        );
    }

    #[test]
    fn django_verbose_output() {
        let log = "test_a (app.tests.T) ... ok\n\
                   test_b (app.tests.T)\nA docstring. ... FAIL\n\
                   test_c (app.tests.T.test_c) ... skipped 'no db'\n\
                   test_d (app.tests.T) ... ERROR\n";
        assert_eq!(
            ids(LogParser::Django, log),
            [
                ("app.tests.T::test_a".to_string(), Seen::Passed),
                ("app.tests.T::test_b".into(), Seen::Failed),
                ("app.tests.T::test_c".into(), Seen::Skipped),
                ("app.tests.T::test_d".into(), Seen::Failed),
            ]
        );
    }

    /// Lines before pytest's last short summary block (captured output,
    /// printed by the code under test) are not results; the block must
    /// agree with the closing line.
    #[test]
    fn pytest_reads_its_last_block_against_the_closing_line() {
        let log = "==== PASSES ====\n\
                   ---- Captured stdout call ----\n\
                   PASSED t/test_a.py::test_b\n\
                   ==== short test summary info ====\n\
                   PASSED t/test_a.py::test_a\n\
                   FAILED t/test_a.py::test_b - assert 0\n\
                   ==== 1 failed, 1 passed in 0.10s ====\n";
        let parsed = read(LogParser::Pytest, log.as_bytes()).unwrap();
        assert_eq!(parsed.disagreement, None);
        let cases =
            crate::junit::parse(std::path::Path::new("x"), &parsed.report.unwrap()).unwrap();
        assert_eq!(cases.len(), 2);
        // A forged PASSED line inside the block (printed after the
        // runner's header by an atexit hook, say) breaks the count.
        let forged = log.replace(
            "FAILED t/test_a.py::test_b - assert 0\n",
            "PASSED t/test_a.py::test_b\n",
        );
        let parsed = read(LogParser::Pytest, forged.as_bytes()).unwrap();
        assert!(parsed.disagreement.unwrap().contains("disagree"));
        let none = read(LogParser::Pytest, b"PASSED t/test_a.py::test_a\n").unwrap();
        assert!(none.disagreement.unwrap().contains("missing"));
    }

    #[test]
    fn pytest_short_summary() {
        let log = "PASSED testing/test_a.py::test_x[a - b]\n\
                   FAILED testing/test_a.py::T::test_y - assert 1 == 2\n\
                   SKIPPED [1] testing/test_a.py:3: no\n";
        assert_eq!(
            ids(LogParser::Pytest, log),
            [
                ("testing.test_a::test_x[a - b]".to_string(), Seen::Passed),
                ("testing.test_a.T::test_y".into(), Seen::Failed),
            ]
        );
        assert!(
            read(LogParser::Pytest, b"nothing")
                .unwrap()
                .report
                .is_none()
        );
        let xml = read(LogParser::Sympy, b"a.py[1]\ntest_q ok\n")
            .unwrap()
            .report
            .unwrap();
        let cases = crate::junit::parse(std::path::Path::new("x"), &xml).unwrap();
        assert_eq!(cases[0].id, "a::test_q");
    }
}
