//! The test cases of a JUnit report.

/// How a test case ended in one report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fate {
    Skipped,
    Failed,
    Passed,
}

impl Fate {
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Skipped => "skipped",
            Fate::Failed => "failed",
            Fate::Passed => "passed",
        }
    }
}

/// One test case of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case<'a> {
    /// `classname::name`.
    pub id: String,
    pub classname: &'a str,
    pub name: &'a str,
    /// The `file` attribute, when the writer gives one.
    pub file: Option<&'a str>,
    pub fate: Fate,
    /// Why it failed: its `<failure>`/`<error>` message, else the element's
    /// or status attribute's name; empty otherwise.
    pub message: &'a str,
}

/// Parses a report; `what` names it in errors. The root must be
/// `testsuites` or `testsuite`.
pub fn parse<'a>(text: &'a str, what: &str) -> Result<roxmltree::Document<'a>, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("{what} is not XML: {e}"))?;
    let root = doc.root_element().tag_name().name();
    if root != "testsuites" && root != "testsuite" {
        return Err(format!("{what} is not JUnit XML (root `{root}`)"));
    }
    Ok(doc)
}

/// A status given as an attribute (`skipped="true"`, `status`, `result`,
/// `outcome`) rather than as a child element, as some writers do: a
/// failure or a skip all the same, never a pass by default.
fn attribute_fate<'a>(case: roxmltree::Node<'a, '_>) -> Option<(Fate, &'a str)> {
    if case
        .attribute("skipped")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Some((Fate::Skipped, "skipped"));
    }
    ["status", "result", "outcome"].iter().find_map(|name| {
        let value = case.attribute(*name)?;
        match value.to_ascii_lowercase().as_str() {
            "fail" | "failed" | "failure" | "error" | "errored" | "broken" | "timeout" => {
                Some((Fate::Failed, value))
            }
            "skip" | "skipped" | "disabled" | "ignored" | "notrun" | "not_run" | "pending"
            | "todo" | "xfail" | "xfailed" | "notexecuted" | "inconclusive" => {
                Some((Fate::Skipped, value))
            }
            _ => None,
        }
    })
}

/// Every test case of a parsed report, in document order. A `<failure>` or
/// `<error>` child fails a case whatever its attributes say; then a status
/// attribute; then a `<skipped>` child; else it passed.
pub fn cases<'a>(doc: &'a roxmltree::Document<'a>) -> Vec<Case<'a>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|case| {
            let classname = case.attribute("classname").unwrap_or("");
            let name = case.attribute("name").unwrap_or("");
            let failure = case
                .children()
                .find(|c| c.has_tag_name("failure") || c.has_tag_name("error"));
            let skipped = case.children().any(|c| c.has_tag_name("skipped"));
            let (fate, message) = match (failure, skipped, attribute_fate(case)) {
                (Some(f), _, _) => (
                    Fate::Failed,
                    f.attribute("message").unwrap_or(f.tag_name().name()),
                ),
                (None, _, Some((Fate::Failed, status))) => (Fate::Failed, status),
                (None, true, _) | (None, false, Some((Fate::Skipped, _))) => (Fate::Skipped, ""),
                _ => (Fate::Passed, ""),
            };
            Case {
                id: format!("{classname}::{name}"),
                classname,
                name,
                file: case.attribute("file"),
                fate,
                message,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fates_from_children_and_attributes() {
        let text = r#"<testsuite>
            <testcase classname="a" name="ok"/>
            <testcase classname="a" name="bad"><failure message="boom"/></testcase>
            <testcase classname="a" name="err"><error/></testcase>
            <testcase classname="a" name="skip"><skipped/></testcase>
            <testcase classname="a" name="attr" status="FAILED"/>
            <testcase classname="a" name="flag" skipped="true"/>
            <testcase classname="a" name="both" status="passed"><failure/></testcase>
        </testsuite>"#;
        let doc = parse(text, "report").unwrap();
        let got: Vec<(String, Fate, &str)> = cases(&doc)
            .into_iter()
            .map(|c| (c.id, c.fate, c.message))
            .collect();
        assert_eq!(
            got,
            [
                ("a::ok".to_string(), Fate::Passed, ""),
                ("a::bad".into(), Fate::Failed, "boom"),
                ("a::err".into(), Fate::Failed, "error"),
                ("a::skip".into(), Fate::Skipped, ""),
                ("a::attr".into(), Fate::Failed, "FAILED"),
                ("a::flag".into(), Fate::Skipped, ""),
                ("a::both".into(), Fate::Failed, "failure"),
            ]
        );
    }

    #[test]
    fn only_junit_roots() {
        assert!(parse("<html/>", "r").unwrap_err().contains("root `html`"));
        assert!(parse("<testsuites/>", "r").is_ok());
        assert!(parse("not xml", "r").unwrap_err().contains("is not XML"));
    }
}
