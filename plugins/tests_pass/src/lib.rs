//! `tests_pass`: the trial's JUnit report (`/inputs/junit.xml`) ran at least
//! one test and has no failed or errored test except ones covered by an
//! active flake freeze. The host hands the frozen test ids (active at the
//! trial's injected now) in the `frozen` configuration, one per line; every
//! frozen failure is still listed, as a finding marked frozen.

use agent_ledger_guest::{Finding, Guest, Info, Outcome, Trial, config, finding};

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
                    item.frozen = true;
                    item.message = format!("{id} failed (frozen flake, not counted): {what}");
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
