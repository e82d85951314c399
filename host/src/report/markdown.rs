//! The Markdown summary, for `$GITHUB_STEP_SUMMARY`: trials per status, a
//! table of each property's outcomes, the trials that used the most fuel,
//! and the trials that are not `review` with why.
//!
//! Markdown renders inline HTML, links and emphasis, so untrusted text is
//! never written as it is: every ASCII punctuation character is
//! backslash-escaped (CommonMark allows that for each of them, `|` included,
//! which GFM tables need), line breaks become spaces so a value stays in
//! its table cell, and other control characters are shown as escapes.

use super::{Summary, Trial, TrialStatus, fails, finding_line};
use crate::output::inert;
use crate::record::Outcome;

/// At most this many failing trials are listed in detail.
const LISTED: usize = 50;
/// At most this many findings are listed per failing property.
const FINDINGS: usize = 5;

/// The summary as Markdown.
pub fn render(summary: &Summary, trials: &[Trial]) -> String {
    let mut md = String::from("## agent-ledger report\n\n");
    let c = &summary.counts;
    md.push_str(&format!(
        "{} trials: {} review, {} not review.\n\n",
        c.trials,
        c.review,
        c.trials - c.review
    ));
    md.push_str("| status | trials |\n|---|---:|\n");
    for status in TrialStatus::ALL {
        md.push_str(&format!("| {} | {} |\n", status.label(), c.get(status)));
    }

    md.push_str("\n### Properties\n\n");
    if summary.properties.is_empty() {
        md.push_str("No trial has a property record.\n");
    } else {
        md.push_str("| property | holds | miss | error | vacuous |\n|---|---:|---:|---:|---:|\n");
        for p in &summary.properties {
            md.push_str(&format!("| {} |", cell(&p.name)));
            for outcome in [
                Outcome::Holds,
                Outcome::Miss,
                Outcome::Error,
                Outcome::Vacuous,
            ] {
                md.push_str(&format!(" {} |", p.get(outcome)));
            }
            md.push('\n');
        }
    }

    md.push_str("\n### Slowest trials (by fuel)\n\n");
    md.push_str(
        "Ranked by the fuel their properties used: deterministic and recorded, unlike wall time.\n\n",
    );
    if summary.slowest.is_empty() {
        md.push_str("No trial ran a property.\n");
    } else {
        md.push_str("| run | status | fuel |\n|---|---|---:|\n");
        for t in &summary.slowest {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                cell(&t.run_id),
                t.status.label(),
                t.fuel_used
            ));
        }
    }

    let failing: Vec<&Trial> = trials
        .iter()
        .filter(|t| t.status != TrialStatus::Review)
        .collect();
    if !failing.is_empty() {
        md.push_str("\n### Trials that are not review\n\n| run | status | why |\n|---|---|---|\n");
        for t in failing.iter().take(LISTED) {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                cell(&t.run_id),
                t.status.label(),
                why(t)
            ));
        }
        if failing.len() > LISTED {
            md.push_str(&format!(
                "\nand {} more (see the JUnit or HTML report).\n",
                failing.len() - LISTED
            ));
        }
    }
    md
}

/// The reasons and failing properties' findings of a trial, as one cell.
fn why(t: &Trial) -> String {
    let mut parts: Vec<String> = t
        .reasons
        .iter()
        .map(|r| format!("{}: {}", r.code, r.message))
        .collect();
    for p in t.properties.iter().filter(|p| fails(p.outcome)) {
        let mut detail: Vec<String> = p.error.iter().cloned().collect();
        detail.extend(p.findings.iter().take(FINDINGS).map(finding_line));
        if p.findings.len() > FINDINGS {
            detail.push(format!("and {} more", p.findings.len() - FINDINGS));
        }
        parts.push(format!(
            "{} {}: {}",
            p.name,
            p.outcome.as_str(),
            detail.join("; ")
        ));
    }
    parts
        .iter()
        .map(|p| cell(p))
        .collect::<Vec<_>>()
        .join("<br>")
}

/// Untrusted text for one table cell.
pub fn cell(s: &str) -> String {
    let flat = s.replace(['\r', '\n'], " ");
    let mut out = String::with_capacity(flat.len() + 8);
    for c in inert(&flat).chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::trials;
    use super::*;

    #[test]
    fn counts_properties_and_slowest_by_fuel() {
        let t = trials();
        let md = render(&Summary::of(&t), &t);
        assert!(md.contains("| review | 1 |"), "{md}");
        assert!(md.contains("| not classified | 1 |"), "{md}");
        assert!(md.contains("| broken chain | 1 |"), "{md}");
        assert!(
            md.contains("| tests\\_not\\_deleted | 1 | 1 | 0 | 0 |"),
            "{md}"
        );
        assert!(md.contains("### Slowest trials (by fuel)"), "{md}");
        assert!(md.contains("| bad | reject | 2000 |"), "{md}");
    }

    #[test]
    fn a_hostile_finding_stays_in_its_cell_as_text() {
        let t = trials();
        let md = render(&Summary::of(&t), &t);
        let row = md
            .lines()
            .find(|l| l.starts_with("| bad |") && l.contains("script"))
            .unwrap();
        // One row of three cells: every `|` inside is escaped.
        assert_eq!(
            row.matches('|').count() - row.matches("\\|").count(),
            4,
            "{row}"
        );
        assert!(!md.contains("<script>"), "{md}");
        assert!(row.contains("\\<script\\>"), "{row}");
        assert!(!md.contains("\n::error"), "{md}");
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(cell("[x](http://e)"), "\\[x\\]\\(http\\:\\/\\/e\\)");
    }
}
