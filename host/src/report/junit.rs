//! JUnit XML: one `<testsuite>` per run, one `<testcase>` per property and
//! one named `verdict`, so a CI test view shows every trial and why it
//! failed. A `miss`, `error` or `vacuous` property is a `<failure>` whose
//! message is its first finding (or its error) and whose text lists every
//! finding; a verdict other than `review` is a failure too, and a run that
//! is not classified or whose chain is broken is an `<error>`. The
//! `test_command` case and its suite carry the test command's wall time
//! (`time`), the one duration the records hold.
//!
//! Written with `quick-junit` (the crate cargo-nextest writes its reports
//! with), which escapes markup through `quick-xml` and drops characters XML
//! cannot carry. Before that, every untrusted string goes through `inert`,
//! so a control character shows as an escape instead of vanishing and a
//! finding cannot start a line that reads as another finding.

use super::{Trial, TrialStatus, finding_line};
use crate::exit::{Error, Result};
use crate::output::inert;
use crate::record::{Outcome, PropertyResult};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

/// The report's XML text.
pub fn render(trials: &[Trial]) -> Result<String> {
    let mut report = Report::new("agent-ledger");
    for t in trials {
        let mut suite = TestSuite::new(text(&t.run_id));
        suite.add_test_case(verdict_case(t));
        // The test command's wall time is the one duration on record
        // (properties are measured in fuel, so replays stay identical).
        let took = t.about.test_ms.map(std::time::Duration::from_millis);
        for p in &t.properties {
            let mut case = property_case(t, p);
            if let Some(d) = took.filter(|_| p.name == crate::replay::TEST_COMMAND) {
                case.set_time(d);
            }
            suite.add_test_case(case);
        }
        if let Some(d) = took {
            suite.set_time(d);
        }
        report.add_test_suite(suite);
    }
    report
        .to_string()
        .map_err(|e| Error::Internal(format!("cannot write the JUnit report: {e}")))
}

fn verdict_case(t: &Trial) -> TestCase {
    let reasons = t
        .reasons
        .iter()
        .map(|r| format!("{}: {}", text(r.code.as_str()), text(&r.message)))
        .collect::<Vec<_>>()
        .join("\n");
    let status = match t.status {
        TrialStatus::Review => TestCaseStatus::success(),
        TrialStatus::Incomplete | TrialStatus::FixtureMismatch | TrialStatus::Reject => failed(
            NonSuccessKind::Failure,
            t.status.as_str(),
            format!("verdict `{}`", t.status.as_str()),
            reasons,
        ),
        TrialStatus::NotClassified => failed(
            NonSuccessKind::Error,
            t.status.as_str(),
            "no verdict on file: the run was not classified".into(),
            String::new(),
        ),
        TrialStatus::Broken => failed(
            NonSuccessKind::Error,
            "broken_chain",
            "the records of this run do not hold together".into(),
            reasons,
        ),
    };
    case("verdict", t, status)
}

fn property_case(t: &Trial, p: &PropertyResult) -> TestCase {
    let mut lines: Vec<String> = p.error.iter().map(|e| text(e)).collect();
    lines.extend(p.findings.iter().map(|f| text(&finding_line(f))));
    let status = match p.outcome {
        Outcome::Holds => TestCaseStatus::success(),
        outcome => {
            let message = lines.first().cloned().unwrap_or_else(|| match outcome {
                Outcome::Vacuous => "the property did not miss on its known-bad patch".into(),
                _ => outcome.as_str().into(),
            });
            failed(
                NonSuccessKind::Failure,
                outcome.as_str(),
                message,
                lines.join("\n"),
            )
        }
    };
    let mut case = case(&p.name, t, status);
    // Findings of a property that holds (frozen flakes) stay visible.
    if p.outcome == Outcome::Holds && !lines.is_empty() {
        case.set_system_out(lines.join("\n"));
    }
    case
}

fn case(name: &str, t: &Trial, status: TestCaseStatus) -> TestCase {
    let mut case = TestCase::new(text(name), status);
    case.set_classname(text(&t.run_id));
    case
}

fn failed(kind: NonSuccessKind, ty: &str, message: String, body: String) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status.set_type(ty).set_message(message);
    if !body.is_empty() {
        status.set_description(body);
    }
    status
}

/// Untrusted text for one XML value: controls escaped visibly, and the two
/// noncharacters XML 1.0 refuses replaced (quick-xml escapes the markup).
fn text(s: &str) -> String {
    inert(s).replace(['\u{fffe}', '\u{ffff}'], "\u{fffd}")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{HOSTILE, trials};
    use super::*;

    #[test]
    fn the_test_commands_wall_time_is_its_cases_and_its_suites_duration() {
        let mut t = trials().remove(0);
        let mut run = t.properties[0].clone();
        run.name = crate::replay::TEST_COMMAND.into();
        t.properties.push(run);
        let xml = render(&[t]).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        assert_eq!(suite.attribute("time"), Some("1.500"), "{xml}");
        let case = |name: &str| {
            doc.descendants()
                .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
                .unwrap()
        };
        assert_eq!(
            case("test_command").attribute("time"),
            Some("1.500"),
            "{xml}"
        );
        assert_eq!(case("tests_not_deleted").attribute("time"), None, "{xml}");
    }

    #[test]
    fn one_suite_per_run_one_case_per_property_and_failures_for_misses() {
        let xml = render(&trials()).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suites: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        let names: Vec<_> = suites
            .iter()
            .map(|s| s.attribute("name").unwrap())
            .collect();
        assert_eq!(names, ["good", "bad", "cut", "pending", "tampered"]);
        let bad = suites[1];
        assert_eq!(bad.attribute("tests"), Some("3"));
        assert_eq!(bad.attribute("failures"), Some("3"));
        let miss = bad
            .descendants()
            .find(|n| {
                n.has_tag_name("testcase") && n.attribute("name") == Some("tests_not_deleted")
            })
            .unwrap();
        let failure = miss.children().find(|n| n.has_tag_name("failure")).unwrap();
        assert_eq!(failure.attribute("type"), Some("miss"));
        assert_eq!(
            failure.attribute("message"),
            Some("tests/test_retry.py:3: test file deleted")
        );
        // The hostile finding is one line of text, its markup inert.
        let body = failure.text().unwrap();
        assert_eq!(body.lines().count(), 2, "{body}");
        assert!(body.contains("<script>alert(1)</script>"), "{body}");
        assert!(body.contains("\\n::error::forged"), "{body}");
        assert!(body.contains("\\u{1b}[2J"), "{body}");
        assert!(!xml.contains("<script>"), "{xml}");
        assert!(HOSTILE.contains('<'));
        // Not classified and broken runs are errors, not silence.
        let errors: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("error"))
            .map(|n| n.attribute("type").unwrap())
            .collect();
        assert_eq!(errors, ["not_classified", "broken_chain"]);
    }

    #[test]
    fn characters_xml_cannot_carry_do_not_break_the_document() {
        let mut t = trials();
        t[1].properties[0].findings[0].message = "nul \0 fffe \u{fffe} bell \x07".into();
        let xml = render(&t).unwrap();
        roxmltree::Document::parse(&xml).unwrap();
        assert!(xml.contains("nul \\0 fffe \u{fffd} bell \\u{7}"), "{xml}");
    }
}
