//! `report --swebench`: the SWE-bench harness's run report, per model, from
//! a manifest's labels and a ledger's runs, with our verdict beside every
//! instance.

use super::read_dataset;
use crate::exit::{Error, Result};
use crate::record::ReasonCode;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `report --swebench`: the harness's run-report fields per model, with
/// our verdict and reasons beside `resolved` for every instance.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunReport {
    pub schema: u32,
    /// Always `"swebench_report"`.
    pub record: String,
    pub models: Vec<ModelReport>,
}

/// One model's run report: the harness's fields, then ours.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct ModelReport {
    pub model: String,
    /// The dataset's instances (`--dataset`), else those submitted.
    pub total_instances: usize,
    pub submitted_instances: usize,
    /// Judged to a verdict, with a patch.
    pub completed_instances: usize,
    /// Verdict `review`.
    pub resolved_instances: usize,
    pub unresolved_instances: usize,
    pub empty_patch_instances: usize,
    /// No verdict: the trial could not be judged, or its records are broken.
    pub error_instances: usize,
    pub completed_ids: Vec<String>,
    pub incomplete_ids: Vec<String>,
    pub empty_patch_ids: Vec<String>,
    pub submitted_ids: Vec<String>,
    pub resolved_ids: Vec<String>,
    pub unresolved_ids: Vec<String>,
    pub error_ids: Vec<String>,
    /// Every submitted instance, by id.
    pub instances: Vec<InstanceReport>,
}

/// One instance as we judged it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InstanceReport {
    pub instance_id: String,
    pub run: String,
    /// The trial's verdict, or `not_classified` / `broken` for an error.
    pub verdict: crate::report::TrialStatus,
    pub resolved: bool,
    /// The verdict's reasons, `code: message`.
    pub reasons: Vec<String>,
    /// Set where we differ from the harness by design: the required tests
    /// pass (the harness would count it resolved), but the patch deletes or
    /// weakens tests; says which property and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differs_by_design: Option<String>,
    /// Ids `swebench import` left out of the dataset's lists, and why: no
    /// runner reports them (fragments of the harness's log). Absent when
    /// none were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_ids: Option<String>,
    /// Each required test (`FAIL_TO_PASS`, `PASS_TO_PASS`, `require_pass`)
    /// as the property record has it: its list, how it fared on the base
    /// and after the patch, and whether it passes. Empty without a test
    /// report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<crate::record::RequiredOutcome>,
}

/// The properties whose miss alone can make a resolved instance ours to
/// reject: they judge what the patch does to tests, which the harness does
/// not look at.
const BY_DESIGN: &[&str] = &["tests_not_deleted", "assertions_not_weakened"];

/// Builds the run report from the manifest's labels and the ledger's runs.
pub fn run_report(
    manifest: &Path,
    trials: &[crate::report::Trial],
    dataset: Option<&Path>,
) -> Result<RunReport> {
    let total = match dataset {
        Some(d) => Some(read_dataset(d)?.len()),
        None => None,
    };
    let by_run: BTreeMap<&str, &crate::report::Trial> =
        trials.iter().map(|t| (t.run_id.as_str(), t)).collect();
    let mut models: BTreeMap<String, ModelReport> = BTreeMap::new();
    for (n, parsed) in crate::batch::read_manifest(manifest)? {
        let line = parsed.map_err(|e| Error::data(manifest, e))?;
        let (Some(instance), Some(model)) = (&line.instance_id, &line.model) else {
            return Err(Error::data(
                manifest,
                format!(
                    "line {n}: fields `instance_id` and `model` are needed for a SWE-bench report (write the manifest with `swebench import`)"
                ),
            ));
        };
        let m = models.entry(model.clone()).or_insert_with(|| ModelReport {
            model: model.clone(),
            ..Default::default()
        });
        m.submitted_ids.push(instance.clone());
        let report = match by_run.get(line.run.as_str()) {
            None => InstanceReport {
                instance_id: instance.clone(),
                run: line.run.clone(),
                verdict: crate::report::TrialStatus::NotClassified,
                resolved: false,
                reasons: vec!["no record of this run in the ledger".into()],
                differs_by_design: None,
                dropped_ids: None,
                required: Vec::new(),
            },
            Some(t) => {
                if let Some(record) = &t.record
                    && let Some(why) = line.disagreement(record, t.receipt.as_deref())?
                {
                    return Err(Error::data(
                        manifest,
                        format!(
                            "line {n}: run `{}` does not answer this line: {why}; judge it again from this manifest (`batch`)",
                            line.run
                        ),
                    ));
                }
                instance_report(instance, t)
            }
        };
        let mut report = report;
        if !line.dropped_ids.is_empty() {
            let ids: Vec<String> = line
                .dropped_ids
                .iter()
                .map(|d| format!("{} `{}`", d.list, d.id))
                .collect();
            report.dropped_ids = Some(format!(
                "not required, as no test runner reports them (fragments of the harness's log its parser took for test names): {}",
                ids.join(", ")
            ));
        }
        let empty = report
            .reasons
            .iter()
            .any(|r| r.starts_with(ReasonCode::EmptyBody.as_str()));
        if empty {
            m.empty_patch_ids.push(instance.clone());
        } else if matches!(
            report.verdict,
            crate::report::TrialStatus::NotClassified | crate::report::TrialStatus::Broken
        ) {
            m.error_ids.push(instance.clone());
        } else {
            m.completed_ids.push(instance.clone());
            if report.resolved {
                m.resolved_ids.push(instance.clone());
            } else {
                m.unresolved_ids.push(instance.clone());
            }
        }
        m.instances.push(report);
    }
    let mut out = Vec::new();
    for (_, mut m) in models {
        let completed: BTreeSet<&String> = m.completed_ids.iter().collect();
        m.incomplete_ids = m
            .submitted_ids
            .iter()
            .filter(|i| !completed.contains(i))
            .cloned()
            .collect();
        for ids in [
            &mut m.completed_ids,
            &mut m.incomplete_ids,
            &mut m.empty_patch_ids,
            &mut m.submitted_ids,
            &mut m.resolved_ids,
            &mut m.unresolved_ids,
            &mut m.error_ids,
        ] {
            ids.sort();
        }
        m.instances
            .sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        m.submitted_instances = m.submitted_ids.len();
        m.total_instances = total.unwrap_or(m.submitted_instances);
        m.completed_instances = m.completed_ids.len();
        m.resolved_instances = m.resolved_ids.len();
        m.unresolved_instances = m.unresolved_ids.len();
        m.empty_patch_instances = m.empty_patch_ids.len();
        m.error_instances = m.error_ids.len();
        out.push(m);
    }
    Ok(RunReport {
        schema: 1,
        record: "swebench_report".into(),
        models: out,
    })
}

fn instance_report(instance: &str, t: &crate::report::Trial) -> InstanceReport {
    use crate::record::Outcome;
    let verdict = t.status;
    let failing: Vec<&crate::record::PropertyResult> = t
        .properties
        .iter()
        .filter(|p| p.outcome != Outcome::Holds)
        .collect();
    let tests_hold = t
        .properties
        .iter()
        .any(|p| p.name == "tests_pass" && p.outcome == Outcome::Holds);
    let differs_by_design = (verdict == crate::report::TrialStatus::Reject && tests_hold && !failing.is_empty() && failing.iter().all(|p| BY_DESIGN.contains(&p.name.as_str()))).then(|| {
        let why: Vec<String> = failing
            .iter()
            .map(|p| {
                let first = p.findings.first().map(|f| if f.path.is_empty() { f.message.clone() } else { format!("{}: {}", f.path, f.message) });
                format!("`{}` missed ({})", p.name, first.unwrap_or_default())
            })
            .collect();
        format!("the required tests pass, so the harness counts this resolved; agent-ledger rejects it because the patch changes tests: {}", why.join("; "))
    });
    InstanceReport {
        instance_id: instance.to_string(),
        run: t.run_id.clone(),
        resolved: verdict == crate::report::TrialStatus::Review,
        verdict,
        reasons: t
            .reasons
            .iter()
            .map(|r| format!("{}: {}", r.code, r.message))
            .collect(),
        differs_by_design,
        dropped_ids: None,
        required: t
            .record
            .as_ref()
            .and_then(|r| r.tests.as_ref())
            .map(|tests| tests.required.clone())
            .unwrap_or_default(),
    }
}
