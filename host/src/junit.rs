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
