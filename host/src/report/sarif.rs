//! SARIF 2.1.0: one SARIF run for the tool, holding every trial's results
//! (GitHub code scanning refuses a file of more than 20 runs, and treats
//! one tool's runs as one analysis). Each result is one finding, with the
//! property as its rule (`tool.driver.rules` lists every property any
//! trial ran, each with a description and help text), level `error` for a
//! finding of a failing property and `note` for a frozen one (or one of a
//! property that holds); its message starts with the run id and its
//! properties name the run, so alerts of different trials stay apart.
//! A failing property with no finding (a trap, a vacuous self-test) gets
//! one result, and so does a trial that is not `review` for a reason no
//! property result carries (incomplete, fixture mismatch, not classified,
//! a broken chain: rule `trial_verdict`).
//!
//! Every result is located, as GitHub requires: at the finding's path
//! (relative to `%SRCROOT%`, `region.startLine` its line, or 1 when it
//! has none); a result with no path of its own at line 1 of the first file
//! the trial's patch names, else of `agent-ledger.toml`. Each trial's status, verdict
//! and reasons are in the run's `properties.trials`. Messages are plain
//! `text` and carry the exact value (JSON escapes it); a path is
//! percent-encoded into a relative URI reference, so no path can pass for
//! an absolute URI.

use super::{Trial, TrialStatus, fails};
use crate::record::{Finding, Outcome, PropertyResult, Reason};
use serde::Serialize;

/// The schema the log names (the OASIS errata 01 location).
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The base every artifact URI is relative to: the repository root.
pub const SRCROOT: &str = "%SRCROOT%";

/// Where a result with no path of its own points when its trial's patch
/// names no file.
const FALLBACK_PATH: &str = "agent-ledger.toml";

/// The rule of a trial-level result.
const VERDICT_RULE: &str = "trial_verdict";

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
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    semantic_version: &'static str,
    information_uri: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    name: String,
    short_description: Message,
    full_description: Message,
    help: Help,
    default_configuration: Configuration,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    /// The plugin that implements the property (`builtin:NAME` or a path).
    plugin: String,
}

#[derive(Serialize)]
struct AutomationDetails {
    id: String,
}

#[derive(Serialize)]
struct RunProperties {
    /// Every trial reported, in report order.
    trials: Vec<TrialProperties>,
}

#[derive(Serialize)]
struct TrialProperties {
    run_id: String,
    status: TrialStatus,
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
    locations: Vec<Location>,
    properties: ResultProperties,
}

#[derive(Serialize)]
struct ResultProperties {
    run_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
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
    region: Region,
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

/// What a built-in property checks, and what to do about a miss: the
/// rule's description and help. A third-party plugin gets generic text
/// naming the plugin.
fn describe(name: &str, plugin: &str) -> (String, String) {
    let (what, fix) = match name {
        "tests_not_deleted" => (
            "A test file the base revision tracks (by the configured test globs) must not be deleted, emptied of tests or moved out of the globs by the patch.",
            "Restore the test file, or make the change without removing tests; a test that is truly obsolete is removed by a person, not by the agent's patch.",
        ),
        "assertions_not_weakened" => (
            "The patch must not weaken the assertions of existing tests: removing or loosening an assert, skipping or x-failing a test, or catching the failure it checks.",
            "Keep the test's assertions as they were and fix the code under test instead.",
        ),
        "span_bijection" => (
            "Every change in the working tree must be one the agent's tool-call trace records, and every write the trace records must be in the tree (no ghost or phantom writes).",
            "Make every change through the traced adapter (`agent-ledger trace`), and capture the trace the run produced.",
        ),
        "tests_pass" => (
            "The project's tests must pass on the patched tree: every required test present and passing, and no test that passed on the base revision failing after the patch.",
            "Run the failing tests locally on the patched tree; the record keeps the test command's output and each test's transition (F2P, P2P, F2F, P2F).",
        ),
        VERDICT_RULE => (
            "The trial's verdict must be `review`: a trial whose transcript is incomplete, whose fixtures do not match their lock, which was not classified, or whose chain of records is broken is not judged.",
            "Read the reasons in the message: capture the run again (a retry is a new run id), restore the fixtures, or re-run `check`.",
        ),
        _ => (
            "A property of a third-party plugin: see the plugin's documentation for what it checks.",
            "Read the finding's message and the plugin's documentation.",
        ),
    };
    let full = format!("{what} (plugin `{plugin}`)");
    // Backticks cannot end the code spans early (a plugin path is the
    // operator's, but it is still only text here).
    let code = |t: &str| t.replace('`', "'");
    let markdown = format!(
        "**`{}`** (plugin `{}`)\n\n{what}\n\n{fix}",
        code(name),
        code(plugin)
    );
    (full, markdown)
}

/// The SARIF log, as pretty JSON.
pub fn render(trials: &[Trial]) -> String {
    let log = Log {
        schema: SCHEMA_URI,
        version: "2.1.0",
        runs: vec![run(trials)],
    };
    let mut text = serde_json::to_string_pretty(&log).expect("a SARIF log serialises");
    text.push('\n');
    text
}

/// The index of the rule of `name`, added on first use.
fn rule_index(rules: &mut Vec<Rule>, name: &str, plugin: &str) -> usize {
    if let Some(i) = rules.iter().position(|r| r.id == name) {
        return i;
    }
    let (full, markdown) = describe(name, plugin);
    rules.push(Rule {
        id: name.to_string(),
        name: name.to_string(),
        short_description: Message {
            text: format!("agent-ledger property `{name}`"),
        },
        full_description: Message { text: full.clone() },
        help: Help {
            text: full,
            markdown,
        },
        default_configuration: Configuration { level: "error" },
        properties: RuleProperties {
            plugin: plugin.to_string(),
        },
    });
    rules.len() - 1
}

fn run(trials: &[Trial]) -> Run {
    let mut rules: Vec<Rule> = Vec::new();
    let mut results = Vec::new();
    for t in trials {
        let fallback = t
            .patched
            .first()
            .map_or(FALLBACK_PATH, String::as_str)
            .to_string();
        let mut failing_result = false;
        for p in &t.properties {
            let index = rule_index(&mut rules, &p.name, &p.plugin);
            for f in &p.findings {
                let r = finding(t, p, index, f, &fallback);
                failing_result |= r.level == "error";
                results.push(r);
            }
            if fails(p.outcome) && p.findings.iter().all(|f| f.frozen) {
                let text = match (&p.error, p.outcome) {
                    (Some(e), _) => e.clone(),
                    (None, Outcome::Vacuous) => {
                        "the property did not miss on its known-bad patch".into()
                    }
                    (None, outcome) => {
                        format!("the property's outcome is `{}`", outcome.as_str())
                    }
                };
                failing_result = true;
                results.push(SarifResult {
                    rule_id: p.name.clone(),
                    rule_index: index,
                    level: "error",
                    message: Message {
                        text: format!("run `{}`: {text}", t.run_id),
                    },
                    locations: vec![location(&fallback, None)],
                    properties: ResultProperties {
                        run_id: t.run_id.clone(),
                        outcome: Some(p.outcome),
                        frozen: false,
                    },
                });
            }
        }
        if t.status != TrialStatus::Review && !failing_result {
            let index = rule_index(&mut rules, VERDICT_RULE, "agent-ledger");
            let reasons: Vec<String> = t
                .reasons
                .iter()
                .map(|r| format!("{}: {}", r.code, r.message))
                .collect();
            results.push(SarifResult {
                rule_id: VERDICT_RULE.into(),
                rule_index: index,
                level: "error",
                message: Message {
                    text: format!(
                        "run `{}`: {}{}{}",
                        t.run_id,
                        t.status.as_str(),
                        if reasons.is_empty() { "" } else { ": " },
                        reasons.join("; ")
                    ),
                },
                locations: vec![location(&fallback, None)],
                properties: ResultProperties {
                    run_id: t.run_id.clone(),
                    outcome: None,
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
                semantic_version: env!("CARGO_PKG_VERSION"),
                information_uri: env!("CARGO_PKG_REPOSITORY"),
                rules,
            },
        },
        automation_details: AutomationDetails {
            id: "agent-ledger/".into(),
        },
        results,
        properties: RunProperties {
            trials: trials
                .iter()
                .map(|t| TrialProperties {
                    run_id: t.run_id.clone(),
                    status: t.status,
                    verdict: t.status.verdict().map(|v| v.as_str()),
                    reasons: t.reasons.clone(),
                })
                .collect(),
        },
    }
}

fn location(path: &str, line: Option<u32>) -> Location {
    Location {
        physical_location: PhysicalLocation {
            artifact_location: ArtifactLocation {
                uri: uri(path),
                uri_base_id: SRCROOT,
            },
            // SARIF lines start at 1; a plugin's 0 names no line. GitHub
            // wants a region on every location: without a line, the
            // first.
            region: Region {
                start_line: line.filter(|l| *l >= 1).unwrap_or(1),
            },
        },
    }
}

fn finding(
    t: &Trial,
    p: &PropertyResult,
    index: usize,
    f: &Finding,
    fallback: &str,
) -> SarifResult {
    let level = if f.frozen || !fails(p.outcome) {
        "note"
    } else {
        "error"
    };
    let location = if f.path.is_empty() {
        location(fallback, None)
    } else {
        location(&f.path, f.line)
    };
    let text = if f.message.is_empty() {
        format!("`{}`: {}", p.name, p.outcome.as_str())
    } else {
        f.message.clone()
    };
    SarifResult {
        rule_id: p.name.clone(),
        rule_index: index,
        level,
        message: Message {
            text: format!("run `{}`: {text}", t.run_id),
        },
        locations: vec![location],
        properties: ResultProperties {
            run_id: t.run_id.clone(),
            outcome: Some(p.outcome),
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
    fn one_run_holds_every_trial_and_every_result_is_located() {
        let log: serde_json::Value = serde_json::from_str(&render(&trials())).unwrap();
        assert_eq!(log["version"], "2.1.0");
        let runs = log["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        assert_eq!(run["automationDetails"]["id"], "agent-ledger/");
        let trials = run["properties"]["trials"].as_array().unwrap();
        assert_eq!(trials.len(), 5);
        assert_eq!(trials[1]["run_id"], "bad");
        assert_eq!(trials[1]["verdict"], "reject");
        assert_eq!(trials[3]["status"], "not_classified");
        assert_eq!(trials[3]["verdict"], serde_json::Value::Null);
        let rules: Vec<_> = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(rules, ["tests_not_deleted", "oracle", "trial_verdict"]);
        for rule in run["tool"]["driver"]["rules"].as_array().unwrap() {
            assert!(!rule["help"]["text"].as_str().unwrap().is_empty());
            assert!(!rule["help"]["markdown"].as_str().unwrap().is_empty());
        }
        let results = run["results"].as_array().unwrap();
        for r in results {
            assert!(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].is_string());
        }
        let of = |id: &str| -> Vec<&serde_json::Value> {
            results
                .iter()
                .filter(|r| r["properties"]["run_id"] == id)
                .collect()
        };
        // Two findings, and the oracle's error with no finding: located at
        // the first file of the trial's patch.
        let bad = of("bad");
        assert_eq!(bad.len(), 3);
        assert_eq!(bad[0]["ruleId"], "tests_not_deleted");
        assert_eq!(bad[0]["level"], "error");
        assert_eq!(bad[0]["message"]["text"], "run `bad`: test file deleted");
        let loc = &bad[0]["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "tests/test_retry.py");
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(loc["region"]["startLine"], 3);
        assert_eq!(bad[1]["message"]["text"], format!("run `bad`: {HOSTILE}"));
        assert_eq!(bad[2]["ruleId"], "oracle");
        assert_eq!(bad[2]["ruleIndex"], 1);
        assert_eq!(
            bad[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "tests/test_retry.py"
        );
        // A review trial has no result; every other trial without a
        // failing property result has its verdict as one.
        assert!(of("good").is_empty());
        for (id, path) in [
            ("cut", "src/cut.py"),
            ("pending", "agent-ledger.toml"),
            ("tampered", "agent-ledger.toml"),
        ] {
            let r = of(id);
            assert_eq!(r.len(), 1, "{id}");
            assert_eq!(r[0]["ruleId"], "trial_verdict");
            assert_eq!(r[0]["ruleIndex"], 2);
            assert_eq!(r[0]["level"], "error");
            assert_eq!(
                r[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                path
            );
        }
        assert!(
            of("cut")[0]["message"]["text"]
                .as_str()
                .unwrap()
                .contains("incomplete: hunk_truncated"),
        );
    }

    #[test]
    fn paths_become_relative_uri_references() {
        assert_eq!(uri("src/a b/ré.py"), "src/a%20b/r%C3%A9.py");
        assert_eq!(uri("http://x/y?z#w"), "http%3A//x/y%3Fz%23w");
        assert_eq!(uri("100%.txt"), "100%25.txt");
    }
}
