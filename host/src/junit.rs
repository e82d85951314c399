//! JUnit XML reports: the test cases and how each ended. A test id is the
//! testcase's `classname` and `name` joined by `::`.

use std::path::Path;

use crate::exit::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Passed,
    Failed,
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub id: String,
    pub status: Status,
}

/// A status given as an attribute (`skipped="true"`, `status`, `result`,
/// `outcome`) rather than as a child element, as some writers do: a
/// failure or a skip, never a pass by default. `tests_pass` reads the same
/// attributes the same way.
fn attribute_status(n: roxmltree::Node<'_, '_>) -> Option<Status> {
    if n.attribute("skipped")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Some(Status::Skipped);
    }
    ["status", "result", "outcome"].iter().find_map(|name| {
        match n.attribute(*name)?.to_ascii_lowercase().as_str() {
            "fail" | "failed" | "failure" | "error" | "errored" | "broken" | "timeout" => {
                Some(Status::Failed)
            }
            "skip" | "skipped" | "disabled" | "ignored" | "notrun" | "not_run" | "pending"
            | "todo" | "xfail" | "xfailed" | "notexecuted" | "inconclusive" => {
                Some(Status::Skipped)
            }
            _ => None,
        }
    })
}

/// Parses a report's test cases, in document order.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Case>> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| Error::data(path, "JUnit report is not UTF-8"))?;
    let doc = roxmltree::Document::parse(text)
        .map_err(|e| Error::data(path, format!("not a JUnit XML report: {e}")))?;
    let root = doc.root_element().tag_name().name();
    if root != "testsuites" && root != "testsuite" {
        return Err(Error::data(
            path,
            format!("not a JUnit XML report: the root element is `{root}`"),
        ));
    }
    Ok(doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let class = n.attribute("classname").unwrap_or("");
            let name = n.attribute("name").unwrap_or("");
            let child = |t: &str| n.children().any(|c| c.has_tag_name(t));
            let status = if child("failure") || child("error") {
                Status::Failed
            } else if let Some(status) = attribute_status(n) {
                status
            } else if child("skipped") {
                Status::Skipped
            } else {
                Status::Passed
            };
            Case {
                id: format!("{class}::{name}"),
                status,
            }
        })
        .collect())
}
