//! SARIF 2.1.0: one SARIF run per trial, whose properties name the run id,
//! its status and verdict; one result per finding, with the property as the
//! rule (`tool.driver.rules` lists each property of the trial), level
//! `error` for a finding of a failing property and `note` for a frozen one
//! (or one of a property that holds), the path relative to the repository
//! root (`%SRCROOT%`) and the line as `region.startLine` when there is one.
//! A failing property with no finding (a trap, a vacuous self-test) gets one
//! result without a location, so it is not lost.
//!
//! Each trial gets its own `automationDetails.id`, so code scanning treats
//! the trials as separate categories rather than one run uploaded twice.
//! Messages are plain `text` and carry the exact value (JSON escapes it);
//! a path is percent-encoded into a relative URI reference, so no path can
//! pass for an absolute URI.

use super::{Status, Trial, fails};
use crate::record::{Finding, Outcome, PropertyResult, Reason};
use serde::Serialize;

/// The schema the log names (the OASIS errata 01 location).
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The base every artifact URI is relative to: the repository root.
pub const SRCROOT: &str = "%SRCROOT%";

#[derive(Serialize)]
struct Log {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run {
    tool: Tool,
    automation_details: AutomationDetails,
    results: Vec<SarifResult>,
    properties: RunProperties,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
struct Driver {
    name: &'static str,
    version: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    short_description: Message,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct RuleProperties {
    plugin: String,
}

#[derive(Serialize)]
struct AutomationDetails {
    id: String,
}

#[derive(Serialize)]
struct RunProperties {
    run_id: String,
    status: Status,
    /// The verdict, or null when there is none.
    verdict: Option<&'static str>,
    reasons: Vec<Reason>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: String,
    rule_index: usize,
    level: &'static str,
    message: Message,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<Location>,
    properties: ResultProperties,
}

#[derive(Serialize)]
struct ResultProperties {
    outcome: Outcome,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    frozen: bool,
}

#[derive(Serialize)]
struct Message {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    uri_base_id: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u32,
}

/// The SARIF log, as pretty JSON.
pub fn render(trials: &[Trial]) -> String {
    let log = Log {
        schema: SCHEMA_URI,
        version: "2.1.0",
        runs: trials.iter().map(run).collect(),
    };
    let mut text = serde_json::to_string_pretty(&log).expect("a SARIF log serialises");
    text.push('\n');
    text
}

fn run(t: &Trial) -> Run {
    let mut rules: Vec<Rule> = Vec::new();
    let mut results = Vec::new();
    for p in &t.properties {
        let index = match rules.iter().position(|r| r.id == p.name) {
            Some(i) => i,
            None => {
                rules.push(Rule {
                    id: p.name.clone(),
                    short_description: Message {
                        text: format!("agent-ledger property `{}` ({})", p.name, p.plugin),
                    },
                    properties: RuleProperties {
                        plugin: p.plugin.clone(),
                    },
                });
                rules.len() - 1
            }
        };
        results.extend(p.findings.iter().map(|f| finding(p, index, f)));
        if fails(p.outcome) && p.findings.iter().all(|f| f.frozen) {
            let text = match (&p.error, p.outcome) {
                (Some(e), _) => e.clone(),
                (None, Outcome::Vacuous) => {
                    "the property did not miss on its known-bad patch".into()
                }
                (None, outcome) => format!("the property's outcome is `{}`", outcome.as_str()),
            };
            results.push(SarifResult {
                rule_id: p.name.clone(),
                rule_index: index,
                level: "error",
                message: Message { text },
                locations: Vec::new(),
                properties: ResultProperties {
                    outcome: p.outcome,
                    frozen: false,
                },
            });
        }
    }
    Run {
        tool: Tool {
            driver: Driver {
                name: "agent-ledger",
                version: env!("CARGO_PKG_VERSION"),
                rules,
            },
        },
        automation_details: AutomationDetails {
            id: format!("agent-ledger/{}/", t.run_id),
        },
        results,
        properties: RunProperties {
            run_id: t.run_id.clone(),
            status: t.status,
            verdict: t.status.verdict().map(|v| v.as_str()),
            reasons: t.reasons.clone(),
        },
    }
}

fn finding(p: &PropertyResult, index: usize, f: &Finding) -> SarifResult {
    let level = if f.frozen || !fails(p.outcome) {
        "note"
    } else {
        "error"
    };
    let locations = if f.path.is_empty() {
        Vec::new()
    } else {
        vec![Location {
            physical_location: PhysicalLocation {
                artifact_location: ArtifactLocation {
                    uri: uri(&f.path),
                    uri_base_id: SRCROOT,
                },
                // SARIF lines start at 1; a plugin's 0 names no line.
                region: f
                    .line
                    .filter(|l| *l >= 1)
                    .map(|start_line| Region { start_line }),
            },
        }]
    };
    SarifResult {
        rule_id: p.name.clone(),
        rule_index: index,
        level,
        message: Message {
            text: if f.message.is_empty() {
                format!("`{}`: {}", p.name, p.outcome.as_str())
            } else {
                f.message.clone()
            },
        },
        locations,
        properties: ResultProperties {
            outcome: p.outcome,
            frozen: f.frozen,
        },
    }
}

/// A repository-relative path as a relative URI reference: every byte but
/// the unreserved ones and `/` percent-encoded, so `:`, `?`, `#`, `%`,
/// spaces and non-ASCII text stay part of the path.
pub fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{HOSTILE, trials};
    use super::*;

    #[test]
    fn one_result_per_finding_with_the_property_as_its_rule() {
        let log: serde_json::Value = serde_json::from_str(&render(&trials())).unwrap();
        assert_eq!(log["version"], "2.1.0");
        let runs = log["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 5);
        let bad = &runs[1];
        assert_eq!(bad["properties"]["run_id"], "bad");
        assert_eq!(bad["properties"]["verdict"], "reject");
        assert_eq!(bad["automationDetails"]["id"], "agent-ledger/bad/");
        let rules: Vec<_> = bad["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(rules, ["tests_not_deleted", "oracle"]);
        let results = bad["results"].as_array().unwrap();
        // Two findings, and the oracle's error with no finding.
        assert_eq!(results.len(), 3);
        let first = &results[0];
        assert_eq!(first["ruleId"], "tests_not_deleted");
        assert_eq!(first["level"], "error");
        let loc = &first["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "tests/test_retry.py");
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(loc["region"]["startLine"], 3);
        assert_eq!(results[1]["message"]["text"], HOSTILE);
        assert_eq!(results[2]["ruleId"], "oracle");
        assert_eq!(results[2]["ruleIndex"], 1);
        assert!(results[2].get("locations").is_none());
        assert_eq!(runs[3]["properties"]["status"], "not_classified");
        assert_eq!(runs[3]["properties"]["verdict"], serde_json::Value::Null);
    }

    #[test]
    fn paths_become_relative_uri_references() {
        assert_eq!(uri("src/a b/ré.py"), "src/a%20b/r%C3%A9.py");
        assert_eq!(uri("http://x/y?z#w"), "http%3A//x/y%3Fz%23w");
        assert_eq!(uri("100%.txt"), "100%25.txt");
    }
}
