//! JUnit XML reports: the test cases and how each ended, read by
//! `agent-ledger-junit` (the same reading `tests_pass` makes), and each
//! test's transition from the base revision's report, for the property
//! record. A test id is the testcase's `classname` and `name` joined by
//! `::`.

use std::path::Path;

use crate::exit::{Error, Result};
pub use agent_ledger_junit::Fate as Status;
use agent_ledger_junit::{Kind, Required};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportCase {
    pub id: String,
    pub status: Status,
}

fn text<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|_| Error::data(path, "JUnit report is not UTF-8"))
}

/// Parses a report's test cases, in document order.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<ReportCase>> {
    let doc = agent_ledger_junit::parse(text(path, bytes)?, "the report")
        .map_err(|e| Error::data(path, format!("not a JUnit XML report: {e}")))?;
    Ok(agent_ledger_junit::cases(&doc)
        .into_iter()
        .map(|c| ReportCase {
            id: c.id,
            status: c.fate,
        })
        .collect())
}

/// Each test's transition, as `tests_pass` judged it: the required tests
/// one by one, the others grouped by transition (ids sorted; tests that
/// passed on both sides only counted).
pub fn transitions(
    report: &[u8],
    base: Option<&[u8]>,
    required: &crate::record::RequiredTests,
) -> Result<crate::record::TestTransitions> {
    let path = Path::new("junit.xml");
    let after_doc = agent_ledger_junit::parse(text(path, report)?, "the test report")
        .map_err(|e| Error::data(path, e))?;
    let base_path = Path::new("base-junit.xml");
    let base_doc = match base {
        Some(b) => Some(
            agent_ledger_junit::parse(text(base_path, b)?, "the base report")
                .map_err(|e| Error::data(base_path, e))?,
        ),
        None => None,
    };
    let after = agent_ledger_junit::cases(&after_doc);
    let base_cases = base_doc.as_ref().map(agent_ledger_junit::cases);
    let wanted = required.kinds();
    let judged = agent_ledger_junit::judge(base_cases.as_deref(), &after, &wanted);
    let mut out = crate::record::TestTransitions {
        required: judged
            .required
            .iter()
            .map(|r| crate::record::RequiredOutcome {
                id: r.test.id.clone(),
                list: r.kind.into(),
                base: if judged.baseline {
                    Some(r.transition.base.into())
                } else {
                    None
                },
                after: r.transition.after.into(),
                passes: r.holds(),
            })
            .collect(),
        ..Default::default()
    };
    for (id, t) in &judged.others {
        if !judged.baseline {
            match t.after {
                Some(Status::Failed) => out.failed.push(id.clone()),
                Some(Status::Passed) => out.passed += 1,
                _ => out.skipped += 1,
            }
            continue;
        }
        match t.name() {
            "pass_to_pass" => out.pass_to_pass += 1,
            "new_passed" => out.new_passed += 1,
            "fail_to_pass" => out.fail_to_pass.push(id.clone()),
            "fail_to_fail" => out.fail_to_fail.push(id.clone()),
            "pass_to_fail" => out.pass_to_fail.push(id.clone()),
            "new_failed" => out.new_failed.push(id.clone()),
            "skipped" => out.skipped += 1,
            _ => out.absent.push(id.clone()),
        }
    }
    Ok(out)
}

impl crate::record::RequiredTests {
    /// Each id with the list it came from, parsed by the matching rules.
    pub fn kinds(&self) -> Vec<(Kind, Required)> {
        let lists = [
            (Kind::FailToPass, &self.fail_to_pass),
            (Kind::PassToPass, &self.pass_to_pass),
            (Kind::Required, &self.require_pass),
        ];
        lists
            .into_iter()
            .flat_map(|(k, ids)| ids.iter().map(move |id| (k, Required::parse(id))))
            .collect()
    }
}
