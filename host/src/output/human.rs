//! Human renderers: the sentences and tables people read. JSON output is the
//! serialised record or report itself, so only the human side lives here.
//! Every value that comes from a record, a plugin, a patch or a tree goes
//! through `inert` on its way in.

use super::inert;
use crate::reconcile::ReconcileReport;
use crate::record::{PropertyRecord, VerdictRecord};
use crate::report::{Summary, TrialStatus};
use crate::verify::RunVerification;

/// The verdict and its reasons.
pub fn verdict(verdict: &VerdictRecord) -> String {
    let mut text = format!(
        "verdict: {} (exit {}) for run {}\n",
        verdict.verdict.as_str(),
        verdict.exit_code,
        inert(&verdict.run_id)
    );
    for r in &verdict.reasons {
        text.push_str(&format!(
            "  - {}: {}\n",
            inert(r.code.as_str()),
            inert(&r.message)
        ));
    }
    text
}

/// The verdict, notes, then the property table: what `check` prints.
pub fn check(
    verdict_record: &VerdictRecord,
    notes: &[String],
    props: Option<&PropertyRecord>,
) -> String {
    let mut text = verdict(verdict_record);
    for note in notes {
        text.push_str(&format!("  note: {}\n", inert(note)));
    }
    if let Some(p) = props {
        text.push('\n');
        text.push_str(&property_table(p));
    }
    text
}

/// The table of properties, then any fixture drift.
pub fn property_table(record: &PropertyRecord) -> String {
    let width = record
        .properties
        .iter()
        .map(|p| inert(&p.name).len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut text = format!(
        "  {:width$}  {:8}  {:>12}  detail\n",
        "property", "outcome", "fuel"
    );
    for p in &record.properties {
        let mut detail: Vec<String> = p.error.iter().map(|e| inert(e).into_owned()).collect();
        detail.extend(p.findings.iter().map(|f| {
            let at = match (inert(&f.path), f.line) {
                (path, _) if path.is_empty() => String::new(),
                (path, Some(l)) => format!("{path}:{l}: "),
                (path, None) => format!("{path}: "),
            };
            format!(
                "{}{at}{}",
                if f.frozen { "[frozen] " } else { "" },
                inert(&f.message)
            )
        }));
        let fuel = if p.plugin == "host" {
            "-".to_string()
        } else {
            p.fuel_used.to_string()
        };
        let first = detail.first().cloned().unwrap_or_default();
        text.push_str(&format!(
            "  {:width$}  {:8}  {:>12}  {}\n",
            inert(&p.name),
            p.outcome.as_str(),
            fuel,
            first
        ));
        for more in detail.iter().skip(1) {
            text.push_str(&format!(
                "  {:width$}  {:8}  {:>12}  {}\n",
                "", "", "", more
            ));
        }
    }
    for (kind, paths) in [
        ("added", &record.fixtures.added),
        ("removed", &record.fixtures.removed),
        ("changed", &record.fixtures.changed),
    ] {
        for p in paths {
            text.push_str(&format!("  fixture {kind}: {}\n", inert(p)));
        }
    }
    text
}

/// What `reconcile` found; `result` is its machine name (`reconciled`,
/// `mismatch`, `open_spans`, `no_mutation`); `trust` says how the trace was
/// authenticated.
pub fn reconcile(r: &ReconcileReport, result: &str, trust: &str) -> String {
    let mut text = match result {
        "open_spans" => "open spans: the agent run did not finish\n".to_string(),
        "mismatch" => "mismatch: the tree and the trace disagree\n".to_string(),
        "no_mutation" => {
            "no mutation: the tree is clean and the trace has no write or delete\n".to_string()
        }
        _ => format!(
            "reconciled: {} changed path(s), {} closed write/delete span(s)\n",
            r.changed, r.mutating_spans
        ),
    };
    if !r.open.is_empty() {
        text.push_str("open spans:\n");
        for o in &r.open {
            text.push_str(&format!(
                "  {} {} {} (line {})\n",
                inert(&o.span),
                inert(&o.op),
                inert(&o.path),
                o.line
            ));
        }
    }
    for (title, list) in [
        ("ghosts (changed, no span):", &r.ghosts),
        ("phantoms (span, unchanged):", &r.phantoms),
    ] {
        if !list.is_empty() {
            text.push_str(title);
            text.push('\n');
            for p in list {
                text.push_str(&format!("  {}\n", inert(p)));
            }
        }
    }
    if !r.hash_misses.is_empty() {
        text.push_str("hash misses (disk differs from the span):\n");
        for m in &r.hash_misses {
            text.push_str(&format!("  {}\n", inert(&m.path)));
        }
    }
    if !r.breaks.is_empty() {
        text.push_str("breaks (changed outside the trace between two tool calls):\n");
        for b in &r.breaks {
            text.push_str(&format!(
                "  {} (span {}, line {}): {} left {}, the span found {}\n",
                inert(&b.path),
                inert(&b.span),
                b.line,
                b.previous.as_deref().map_or_else(
                    || "the base revision".to_string(),
                    |p| format!("span {}", inert(p))
                ),
                inert(b.expected.as_deref().unwrap_or("no file")),
                inert(b.found.as_deref().unwrap_or("no file")),
            ));
        }
    }
    if !r.aliases.is_empty() {
        text.push_str("aliases (one file on case- or normalisation-insensitive file systems):\n");
        for group in &r.aliases {
            let shown: Vec<String> = group.iter().map(|p| inert(p).into_owned()).collect();
            text.push_str(&format!("  {}\n", shown.join(" = ")));
        }
    }
    if !r.agents.is_empty() {
        text.push_str("more than one agent wrote this workspace:\n");
        for a in &r.agents {
            let shown: Vec<String> = a.paths.iter().map(|p| inert(p).into_owned()).collect();
            text.push_str(&format!(
                "  agent {}: {}\n",
                a.agent
                    .as_deref()
                    .map_or_else(|| "(none)".to_string(), |a| format!("`{}`", inert(a))),
                shown.join(", ")
            ));
        }
    }
    text.push_str(&format!("trace: {}\n", inert(trust)));
    text
}

/// One line per run (failures listed under it), then the count.
pub fn verify(archive_problems: &[String], reports: &[RunVerification]) -> String {
    let mut text = String::new();
    if !archive_problems.is_empty() {
        text.push_str("FAILED  archive manifest\n");
        for p in archive_problems {
            text.push_str(&format!("  - {}\n", inert(p)));
        }
    }
    let mut failed = 0;
    for report in reports {
        if report.ok {
            text.push_str(&format!(
                "ok      {} (signature: {})\n",
                inert(&report.run_id),
                report.signature.as_str()
            ));
        } else {
            failed += 1;
            text.push_str(&format!("FAILED  {}\n", inert(&report.run_id)));
            for f in &report.failures {
                text.push_str(&format!("  - {}\n", inert(f)));
            }
        }
    }
    // What was recomputed and what was read, once per kind of run.
    let mut kinds: Vec<(&crate::verify::Evidence, Vec<&str>)> = Vec::new();
    for report in reports.iter().filter(|r| r.ok) {
        match kinds.iter_mut().find(|(e, _)| **e == report.evidence) {
            Some((_, runs)) => runs.push(&report.run_id),
            None => kinds.push((&report.evidence, vec![&report.run_id])),
        }
    }
    for (evidence, runs) in kinds {
        let which = if runs.len() == reports.len() {
            "every run".to_string()
        } else {
            inert(&runs.join(", ")).into_owned()
        };
        text.push_str(&format!("for {which}:\n"));
        for r in &evidence.recomputed {
            text.push_str(&format!("  recomputed: {}\n", inert(r)));
        }
        for r in &evidence.from_records {
            text.push_str(&format!("  taken from the records: {}\n", inert(r)));
        }
    }
    text.push_str(&format!(
        "{} of {} run(s) verified\n",
        reports.len() - failed,
        reports.len()
    ));
    text
}

/// Trials per status, then each report written.
pub fn report(summary: &Summary) -> String {
    let counts: Vec<String> = TrialStatus::ALL
        .iter()
        .filter(|s| summary.counts.get(**s) > 0)
        .map(|s| format!("{} {}", summary.counts.get(*s), s.label()))
        .collect();
    let mut text = format!(
        "report: {} trial(s): {}\n",
        summary.counts.trials,
        counts.join(", ")
    );
    for w in &summary.written {
        text.push_str(&format!(
            "  wrote {} `{}`\n",
            w.format.as_str(),
            inert(&w.path)
        ));
    }
    text
}
