//! Each test's transition from the base revision's report to the patched
//! one, and what `tests_pass` counts against the patch:
//!
//! - a required test (an evaluator's `fail_to_pass`, `pass_to_pass` or
//!   `--require-pass`) must be in the patched report and pass there;
//! - any other test that fails after the patch counts unless it failed on
//!   the base too (`fail_to_fail`: recorded, not the patch's fault); with no
//!   base report every failure counts;
//! - a test that passed on the base and is skipped or gone after is judged
//!   by `tests_pass` itself (it needs the patch's changes to know which
//!   deletions excuse it).

use crate::cases::{Case, Fate};
use crate::ids::Required;
use std::collections::BTreeMap;

/// Which evaluator list a required test came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// SWE-bench's `FAIL_TO_PASS`: fails on the base, must pass after.
    FailToPass,
    /// SWE-bench's `PASS_TO_PASS`: passes on the base, must still pass.
    PassToPass,
    /// `--require-pass`: must pass after, whatever it did before.
    Required,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::FailToPass => "fail_to_pass",
            Kind::PassToPass => "pass_to_pass",
            Kind::Required => "require_pass",
        }
    }
}

/// How one test (all the cases of one id, or all a required id matches)
/// fared on the base and after the patch: `None` is absent from that
/// report. Several cases of one test fail when any fails, else pass when
/// any passed, else were skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub base: Option<Fate>,
    pub after: Option<Fate>,
}

impl Transition {
    /// SWE-bench's name for it (`fail_to_pass`, `pass_to_pass`,
    /// `fail_to_fail`, `pass_to_fail`), or, where one side was skipped or
    /// absent, `new_passed`, `new_failed`, `skipped` (skipped after the
    /// patch), `absent` (not in the patched report).
    pub fn name(self) -> &'static str {
        use Fate::*;
        match (self.base, self.after) {
            (Some(Failed), Some(Passed)) => "fail_to_pass",
            (Some(Passed), Some(Passed)) => "pass_to_pass",
            (Some(Failed), Some(Failed)) => "fail_to_fail",
            (Some(Passed), Some(Failed)) => "pass_to_fail",
            (Some(Skipped) | None, Some(Passed)) => "new_passed",
            (Some(Skipped) | None, Some(Failed)) => "new_failed",
            (_, Some(Skipped)) => "skipped",
            (_, None) => "absent",
        }
    }
}

/// A required test and how it fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredFate {
    pub test: Required,
    pub kind: Kind,
    pub transition: Transition,
}

impl RequiredFate {
    /// Present after the patch and passing there.
    pub fn holds(&self) -> bool {
        self.transition.after == Some(Fate::Passed)
    }
}

/// What a pair of reports says about every test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// The required tests, in the order given.
    pub required: Vec<RequiredFate>,
    /// Every other test id of either report and its transition (with no
    /// base report, every `base` is `None`).
    pub others: BTreeMap<String, Transition>,
    /// Whether there was a base report to compare with.
    pub baseline: bool,
}

impl Judgement {
    /// Whether a failure of the test `id` after the patch counts: it is not
    /// a required test's (those are judged in `required`) and it did not
    /// fail on the base revision too.
    pub fn failure_counts(&self, id: &str) -> bool {
        self.others
            .get(id)
            .is_none_or(|t| t.base != Some(Fate::Failed))
    }

    /// Whether the case is one a required id matches.
    pub fn is_required(&self, case: &Case<'_>) -> bool {
        self.required.iter().any(|r| r.test.matches(case))
    }
}

fn combine(acc: Option<Fate>, fate: Fate) -> Option<Fate> {
    Some(match (acc, fate) {
        (Some(Fate::Failed), _) | (_, Fate::Failed) => Fate::Failed,
        (Some(Fate::Passed), _) | (_, Fate::Passed) => Fate::Passed,
        _ => Fate::Skipped,
    })
}

/// How a required test fared in one report: every case it matches must
/// pass, so one failing case fails it, and one skipped case (with none
/// failing) leaves it skipped, never passed.
fn required_fate<'c>(cases: impl Iterator<Item = &'c Case<'c>>) -> Option<Fate> {
    cases.fold(None, |acc, c| {
        Some(match (acc, c.fate) {
            (Some(Fate::Failed), _) | (_, Fate::Failed) => Fate::Failed,
            (Some(Fate::Skipped), _) | (_, Fate::Skipped) => Fate::Skipped,
            _ => Fate::Passed,
        })
    })
}

/// Judges the patched report `after` against the base revision's `base`
/// (when the test command ran there) for the `required` tests. A required
/// id that matches several cases (a module, a parametrized id cut at a
/// space, a bare name) passes only when every case it matched on the base
/// is in the patched report too, and every case it matches there passes:
/// a case that drops out or is skipped leaves it unpassed.
pub fn judge(
    base: Option<&[Case<'_>]>,
    after: &[Case<'_>],
    required: &[(Kind, Required)],
) -> Judgement {
    let required_fates = required
        .iter()
        .map(|(kind, test)| {
            let mut after_fate = required_fate(after.iter().filter(|c| test.matches(c)));
            if let Some(b) = base {
                let gone = b.iter().filter(|c| test.matches(c)).any(|c| {
                    !after
                        .iter()
                        .any(|a| a.id == c.id && a.fate != Fate::Skipped)
                });
                if gone && after_fate == Some(Fate::Passed) {
                    after_fate = Some(Fate::Skipped);
                }
            }
            RequiredFate {
                test: test.clone(),
                kind: *kind,
                transition: Transition {
                    base: base.and_then(|b| required_fate(b.iter().filter(|c| test.matches(c)))),
                    after: after_fate,
                },
            }
        })
        .collect();
    let is_required = |c: &Case<'_>| required.iter().any(|(_, r)| r.matches(c));
    let mut others: BTreeMap<String, Transition> = BTreeMap::new();
    for c in base.unwrap_or(&[]).iter().filter(|c| !is_required(c)) {
        let t = others.entry(c.id.clone()).or_insert(Transition {
            base: None,
            after: None,
        });
        t.base = combine(t.base, c.fate);
    }
    for c in after.iter().filter(|c| !is_required(c)) {
        let t = others.entry(c.id.clone()).or_insert(Transition {
            base: None,
            after: None,
        });
        t.after = combine(t.after, c.fate);
    }
    Judgement {
        required: required_fates,
        others,
        baseline: base.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{cases, parse};

    const BASE: &str = r#"<testsuite>
        <testcase classname="t.test_a" name="test_ok"/>
        <testcase classname="t.test_a" name="test_net"><error message="no network"/></testcase>
        <testcase classname="t.test_a" name="test_bug"><failure message="wrong"/></testcase>
        <testcase classname="t.test_a" name="test_keep"/>
    </testsuite>"#;

    #[test]
    fn transitions_and_what_counts() {
        let after = r#"<testsuite>
            <testcase classname="t.test_a" name="test_ok"><failure/></testcase>
            <testcase classname="t.test_a" name="test_net"><error message="no network"/></testcase>
            <testcase classname="t.test_a" name="test_bug"/>
            <testcase classname="t.test_a" name="test_new"><failure/></testcase>
        </testsuite>"#;
        let (b, a) = (parse(BASE, "b").unwrap(), parse(after, "a").unwrap());
        let (b, a) = (cases(&b), cases(&a));
        let required = [
            (Kind::FailToPass, Required::parse("t/test_a.py::test_bug")),
            (Kind::PassToPass, Required::parse("test_keep")),
        ];
        let j = judge(Some(&b), &a, &required);
        assert!(j.required[0].holds());
        assert_eq!(j.required[0].transition.name(), "fail_to_pass");
        assert!(!j.required[1].holds());
        assert_eq!(j.required[1].transition.name(), "absent");
        assert_eq!(j.others["t.test_a::test_ok"].name(), "pass_to_fail");
        assert_eq!(j.others["t.test_a::test_net"].name(), "fail_to_fail");
        assert_eq!(j.others["t.test_a::test_new"].name(), "new_failed");
        assert!(j.failure_counts("t.test_a::test_ok"));
        assert!(!j.failure_counts("t.test_a::test_net"));
        assert!(j.failure_counts("t.test_a::test_new"));
        // Without a base report, every failure counts.
        let j = judge(None, &a, &[]);
        assert!(j.failure_counts("t.test_a::test_net"));
    }

    // A prefix id matched a passing and a skipped case, and was taken as
    // passed.
    #[test]
    fn a_required_test_with_a_skipped_or_vanished_case_does_not_pass() {
        let base = r#"<testsuite>
            <testcase classname="t" name="test_p[a b]"><failure/></testcase>
            <testcase classname="t" name="test_p[a  b c]"><failure/></testcase>
        </testsuite>"#;
        let skipped = r#"<testsuite>
            <testcase classname="t" name="test_p[a b]"/>
            <testcase classname="t" name="test_p[a  b c]"><skipped/></testcase>
        </testsuite>"#;
        let vanished = r#"<testsuite>
            <testcase classname="t" name="test_p[a b]"/>
        </testsuite>"#;
        let all = r#"<testsuite>
            <testcase classname="t" name="test_p[a b]"/>
            <testcase classname="t" name="test_p[a  b c]"/>
        </testsuite>"#;
        let b = parse(base, "b").unwrap();
        let b = cases(&b);
        let req = [(Kind::FailToPass, Required::parse("t.py::test_p[a"))];
        for (after, holds) in [(skipped, false), (vanished, false), (all, true)] {
            let a = parse(after, "a").unwrap();
            let a = cases(&a);
            assert_eq!(
                judge(Some(&b), &a, &req).required[0].holds(),
                holds,
                "{after}"
            );
        }
    }

    #[test]
    fn one_failing_case_fails_a_test() {
        let after = r#"<testsuite>
            <testcase classname="x" name="test_p[1]"/>
            <testcase classname="y" name="test_p"/>
            <testcase classname="z" name="test_p"><failure/></testcase>
        </testsuite>"#;
        let a = parse(after, "a").unwrap();
        let a = cases(&a);
        let j = judge(None, &a, &[(Kind::Required, Required::parse("test_p"))]);
        assert!(!j.required[0].holds());
    }
}
