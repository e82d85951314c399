//! Test ids as an evaluator writes them (`--require-pass`, a manifest's
//! `fail_to_pass` and `pass_to_pass`), and the rules that match one to the
//! cases of a JUnit report. In order:
//!
//! 1. `path/to/test_x.py::Class::test_y[param]`, a pytest node id (the part
//!    before the first `::` names a `.py` file or holds a `/`): the cases
//!    whose `classname` is the path without `.py`, `/` read as `.`, then
//!    the classes, joined by `.` (`path.to.test_x.Class`), and whose `name`
//!    is the last part (`test_y[param]`), as pytest's `--junitxml` writes
//!    them. `::` inside a parameter's brackets does not split. A node id
//!    whose last `[` is never closed was cut at a space (the SWE-bench
//!    harness splits its log on whitespace, and its datasets carry such
//!    ids: `test_x[a` for `test_x[a b]`): it names every case of that
//!    class whose `name` starts with it.
//! 2. `path/to/test_x.py`: every case of that module (`classname`
//!    `path.to.test_x` or below it).
//! 3. `classname::name`, a JUnit id: the cases with exactly that id.
//! 4. `test_y (module.Class)`, unittest's and Django's spelling (also
//!    `test_y (module.Class.test_y)`, Python 3.11's): `classname`
//!    `module.Class`, `name` `test_y`.
//! 5. anything else, a bare name (`test_y`, as sympy's runner prints):
//!    the cases named so, in any class.
//!
//! Only the first line of an id counts (Django's ids may carry the test's
//! docstring on the next), trimmed. A required test is present when at
//! least one case matches, and passes when every matching case passed.

use crate::cases::Case;

/// A test id an evaluator requires, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Required {
    /// The id as given (its first line, trimmed).
    pub id: String,
    rule: Rule,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// `classname` and `name`, both exact.
    Exact { classname: String, name: String },
    /// `classname` exact, `name` starting with the prefix (a parametrized
    /// id cut at a space).
    Prefix { classname: String, name: String },
    /// Every case of a module: `classname` equal to it or below it.
    Module(String),
    /// Any case with this `name`.
    Name(String),
}

/// Splits a pytest node id on `::` outside `[...]`.
pub fn split_node(id: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    let bytes = id.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                parts.push(&id[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&id[start..]);
    parts
}

/// Whether a `[` is left open at the end of `s`.
fn unclosed(s: &str) -> bool {
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    depth > 0
}

/// `path/to/test_x.py` as the dotted module pytest writes as a classname.
pub fn module_of(path: &str) -> String {
    let path = path.strip_prefix("./").unwrap_or(path);
    path.strip_suffix(".py").unwrap_or(path).replace('/', ".")
}

impl Required {
    /// Reads one id by the rules above.
    pub fn parse(id: &str) -> Required {
        let id = id.lines().next().unwrap_or("").trim().to_string();
        let rule = Self::rule(&id);
        Required { id, rule }
    }

    fn rule(id: &str) -> Rule {
        let parts = split_node(id);
        let first = parts[0];
        let is_path = first.ends_with(".py") || first.contains('/');
        if parts.len() >= 2 && is_path {
            let mut classname = module_of(first);
            for class in &parts[1..parts.len() - 1] {
                classname.push('.');
                classname.push_str(class);
            }
            let name = parts[parts.len() - 1].to_string();
            return if unclosed(&name) {
                Rule::Prefix { classname, name }
            } else {
                Rule::Exact { classname, name }
            };
        }
        if parts.len() == 1 && first.ends_with(".py") && !first.contains(' ') {
            return Rule::Module(module_of(first));
        }
        if parts.len() >= 2 {
            let (classname, name) = id.rsplit_once("::").unwrap_or(("", id));
            return Rule::Exact {
                classname: classname.to_string(),
                name: name.to_string(),
            };
        }
        if let Some((name, rest)) = id.split_once(" (")
            && let Some(inner) = rest.strip_suffix(')')
            && !name.is_empty()
            && !name.contains(' ')
        {
            let classname = inner
                .strip_suffix(name)
                .and_then(|c| c.strip_suffix('.'))
                .unwrap_or(inner);
            return Rule::Exact {
                classname: classname.to_string(),
                name: name.to_string(),
            };
        }
        Rule::Name(id.to_string())
    }

    /// Whether `case` is (one of the cases of) this test.
    pub fn matches(&self, case: &Case<'_>) -> bool {
        match &self.rule {
            Rule::Exact { classname, name } => case.classname == classname && case.name == name,
            Rule::Prefix { classname, name } => {
                case.classname == classname && case.name.starts_with(name.as_str())
            }
            Rule::Module(module) => {
                case.classname == module
                    || case
                        .classname
                        .strip_prefix(module.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            }
            Rule::Name(name) => case.name == name,
        }
    }
}

/// The ids of a list written one per line (how the host hands them to
/// `tests_pass`), blank lines skipped.
pub fn split_ids(text: &str) -> Vec<Required> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(Required::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::Fate;

    fn case<'a>(classname: &'a str, name: &'a str) -> Case<'a> {
        Case {
            id: format!("{classname}::{name}"),
            classname,
            name,
            file: None,
            fate: Fate::Passed,
            message: "",
        }
    }

    #[test]
    fn pytest_node_ids() {
        let r = Required::parse("testing/test_foo.py::TestBar::test_baz[a::b-1]");
        assert!(r.matches(&case("testing.test_foo.TestBar", "test_baz[a::b-1]")));
        assert!(!r.matches(&case("testing.test_foo", "test_baz[a::b-1]")));
        let r = Required::parse("test_x.py::test_y");
        assert!(r.matches(&case("test_x", "test_y")));
        assert!(!r.matches(&case("other.test_x", "test_y")));
        let r = Required::parse("tests/test_x.py::test_y[a b]");
        assert!(r.matches(&case("tests.test_x", "test_y[a b]")));
    }

    #[test]
    fn a_node_id_cut_at_a_space_names_the_cases_it_begins() {
        // pytest-dev__pytest-11143's PASS_TO_PASS, as SWE-bench has it.
        let r = Required::parse("testing/test_assertrewrite.py::test_get_assertion_exprs[assert");
        assert!(r.matches(&case(
            "testing.test_assertrewrite",
            "test_get_assertion_exprs[assert 1 == 2]"
        )));
        assert!(!r.matches(&case(
            "testing.test_assertrewrite",
            "test_get_assertion_exprs[other]"
        )));
        assert!(!r.matches(&case(
            "testing.test_other",
            "test_get_assertion_exprs[assert x]"
        )));
        // A closed parameter is exact.
        let r = Required::parse("t/test_a.py::test_b[x]");
        assert!(!r.matches(&case("t.test_a", "test_b[x]y")));
    }

    #[test]
    fn a_module_names_all_its_cases() {
        let r = Required::parse("tests/test_x.py");
        assert!(r.matches(&case("tests.test_x", "a")));
        assert!(r.matches(&case("tests.test_x.T", "a")));
        assert!(!r.matches(&case("tests.test_xy", "a")));
    }

    #[test]
    fn junit_ids_and_unittest_spellings() {
        let r = Required::parse("tests.test_q.TestRetry::test_window");
        assert!(r.matches(&case("tests.test_q.TestRetry", "test_window")));
        assert!(!r.matches(&case("tests.test_q", "test_window")));
        let r = Required::parse("test_window (tests.test_q.TestRetry)\nA docstring line");
        assert_eq!(r.id, "test_window (tests.test_q.TestRetry)");
        assert!(r.matches(&case("tests.test_q.TestRetry", "test_window")));
        let r = Required::parse("test_window (tests.test_q.TestRetry.test_window)");
        assert!(r.matches(&case("tests.test_q.TestRetry", "test_window")));
    }

    #[test]
    fn bare_names_match_any_class() {
        let r = Required::parse("test_issue_1234");
        assert!(r.matches(&case("sympy.core.tests.test_basic", "test_issue_1234")));
        assert!(!r.matches(&case("sympy.core.tests.test_basic", "test_issue_12345")));
        assert_eq!(split_ids("a\n\n b \n").len(), 2);
    }
}
