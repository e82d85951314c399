//! The HTML report: one self-contained file (inline CSS, inline SVG charts,
//! no script, no external reference of any kind) with the summary, a bar
//! chart of trials per status and one of each property's outcomes, the
//! trials that used the most fuel, and a `<details>` drill-down per trial
//! (`id="trial-RUN"`) with its reasons, properties and findings.
//!
//! Every value from a record is escaped as HTML text or attribute (`&`,
//! `<`, `>`, `"`, `'`), control characters shown as escapes; and the page
//! carries a Content-Security-Policy that allows no script and no fetch, so
//! even a missed escape could not run code or call out.

use super::{Summary, Trial, TrialStatus, finding_line};
use crate::output::inert;
use crate::record::Outcome;
use std::fmt::Write;

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#1f2328}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
td.n{text-align:right}code{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
details{border:1px solid #d0d7de;border-radius:6px;margin:.4em 0;padding:.3em .8em}
summary{cursor:pointer}.badge{display:inline-block;border-radius:1em;padding:0 .6em;color:#fff;font-size:.9em;margin-right:.5em}
.review{background:#1a7f37}.incomplete{background:#6e7781}.fixture_mismatch{background:#bc4c00}
.reject{background:#cf222e}.not_classified{background:#9a6700}.broken{background:#8250df}
.holds{fill:#1a7f37}.miss{fill:#cf222e}.error{fill:#bc4c00}.vacuous{fill:#8250df}
rect.review{fill:#1a7f37}rect.incomplete{fill:#6e7781}rect.fixture_mismatch{fill:#bc4c00}
rect.reject{fill:#cf222e}rect.not_classified{fill:#9a6700}rect.broken{fill:#8250df}
svg text{font:12px system-ui,sans-serif;fill:#1f2328}ul{margin:.2em 0;padding-left:1.4em}
";

const BAR: f64 = 420.0;

/// The page.
pub fn render(summary: &Summary, trials: &[Trial]) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str("<title>agent-ledger report</title>\n<style>");
    h.push_str(STYLE);
    h.push_str("</style>\n</head>\n<body>\n<h1>agent-ledger report</h1>\n");
    let c = &summary.counts;
    let _ = writeln!(
        h,
        "<p>{} trials: {} review, {} not review.</p>",
        c.trials,
        c.review,
        c.trials - c.review
    );
    verdicts(&mut h, summary);
    properties(&mut h, summary);
    slowest(&mut h, summary);
    h.push_str("<section id=\"trials\">\n<h2>Trials</h2>\n");
    for t in trials {
        trial(&mut h, t);
    }
    h.push_str("</section>\n</body>\n</html>\n");
    h
}

fn verdicts(h: &mut String, summary: &Summary) {
    let c = &summary.counts;
    let max = TrialStatus::ALL
        .iter()
        .map(|s| c.get(*s))
        .max()
        .unwrap_or(0)
        .max(1);
    let height = 24 * TrialStatus::ALL.len() + 8;
    h.push_str("<section id=\"verdicts\">\n<h2>Verdicts</h2>\n");
    let _ = writeln!(
        h,
        "<svg role=\"img\" aria-label=\"trials per status\" width=\"640\" height=\"{height}\" viewBox=\"0 0 640 {height}\">"
    );
    for (i, status) in TrialStatus::ALL.iter().enumerate() {
        let n = c.get(*status);
        let y = 4 + 24 * i;
        let w = BAR * n as f64 / max as f64;
        let _ = writeln!(
            h,
            "<text x=\"0\" y=\"{}\">{}</text><rect class=\"{}\" x=\"130\" y=\"{y}\" width=\"{w:.1}\" height=\"18\"></rect><text x=\"{:.1}\" y=\"{}\">{n}</text>",
            y + 14,
            status.label(),
            status.as_str(),
            136.0 + w,
            y + 14
        );
    }
    h.push_str("</svg>\n<table><tr><th>status</th><th>trials</th></tr>\n");
    for status in TrialStatus::ALL {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td></tr>",
            status.label(),
            c.get(status)
        );
    }
    h.push_str("</table>\n</section>\n");
}

const OUTCOMES: [Outcome; 4] = [
    Outcome::Holds,
    Outcome::Miss,
    Outcome::Error,
    Outcome::Vacuous,
];

fn properties(h: &mut String, summary: &Summary) {
    h.push_str("<section id=\"properties\">\n<h2>Property outcomes</h2>\n");
    if summary.properties.is_empty() {
        h.push_str("<p>No trial has a property record.</p>\n</section>\n");
        return;
    }
    let max = summary
        .properties
        .iter()
        .map(|p| p.total())
        .max()
        .unwrap_or(0)
        .max(1);
    let height = 24 * summary.properties.len() + 30;
    let _ = writeln!(
        h,
        "<svg role=\"img\" aria-label=\"outcomes per property\" width=\"640\" height=\"{height}\" viewBox=\"0 0 640 {height}\">"
    );
    for (i, p) in summary.properties.iter().enumerate() {
        let y = 4 + 24 * i;
        let _ = write!(
            h,
            "<text x=\"0\" y=\"{}\">{}</text>",
            y + 14,
            escape(&clip(&p.name))
        );
        let mut x = 200.0;
        for outcome in OUTCOMES {
            let n = p.get(outcome);
            if n == 0 {
                continue;
            }
            let w = (BAR - 10.0) * n as f64 / max as f64;
            let _ = write!(
                h,
                "<rect class=\"{}\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"18\"><title>{}: {n}</title></rect>",
                outcome.as_str(),
                outcome.as_str()
            );
            x += w;
        }
        h.push('\n');
    }
    // The legend.
    let y = 4 + 24 * summary.properties.len() + 8;
    for (i, outcome) in OUTCOMES.iter().enumerate() {
        let x = 200 + 90 * i;
        let _ = write!(
            h,
            "<rect class=\"{}\" x=\"{x}\" y=\"{y}\" width=\"12\" height=\"12\"></rect><text x=\"{}\" y=\"{}\">{}</text>",
            outcome.as_str(),
            x + 16,
            y + 11,
            outcome.as_str()
        );
    }
    h.push_str("\n</svg>\n<table><tr><th>property</th><th>holds</th><th>miss</th><th>error</th><th>vacuous</th></tr>\n");
    for p in &summary.properties {
        let _ = write!(h, "<tr><td>{}</td>", escape(&p.name));
        for outcome in OUTCOMES {
            let _ = write!(h, "<td class=\"n\">{}</td>", p.get(outcome));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n</section>\n");
}

fn slowest(h: &mut String, summary: &Summary) {
    h.push_str("<section id=\"slowest\">\n<h2>Slowest trials (by fuel)</h2>\n");
    h.push_str("<p>Ranked by the fuel their properties used: deterministic and recorded, unlike wall time.</p>\n");
    if summary.slowest.is_empty() {
        h.push_str("<p>No trial ran a property.</p>\n</section>\n");
        return;
    }
    h.push_str("<table><tr><th>run</th><th>status</th><th>fuel</th></tr>\n");
    for t in &summary.slowest {
        let _ = writeln!(
            h,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td class=\"n\">{}</td></tr>",
            escape(&anchor(&t.run_id)),
            escape(&t.run_id),
            t.status.label(),
            human_count(t.fuel_used)
        );
    }
    h.push_str("</table>\n</section>\n");
}

fn trial(h: &mut String, t: &Trial) {
    let _ = writeln!(
        h,
        "<details id=\"{}\" data-run=\"{}\" class=\"trial\"{}>",
        escape(&anchor(&t.run_id)),
        escape(&t.run_id),
        if t.status == TrialStatus::Review {
            ""
        } else {
            " open"
        }
    );
    let _ = writeln!(
        h,
        "<summary><span class=\"badge {}\">{}</span><strong>{}</strong> &middot; fuel {}</summary>",
        t.status.as_str(),
        t.status.label(),
        escape(&t.run_id),
        human_count(t.fuel())
    );
    about(h, &t.about);
    if !t.reasons.is_empty() {
        h.push_str("<ul class=\"reasons\">\n");
        for r in &t.reasons {
            let _ = writeln!(
                h,
                "<li><code>{}</code> {}</li>",
                escape(r.code.as_str()),
                escape(&r.message)
            );
        }
        h.push_str("</ul>\n");
    }
    if !t.properties.is_empty() {
        h.push_str(
            "<table><tr><th>property</th><th>outcome</th><th>fuel</th><th>findings</th></tr>\n",
        );
        for p in &t.properties {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>",
                escape(&p.name),
                p.outcome.as_str(),
                human_count(p.fuel_used)
            );
            if let Some(e) = &p.error {
                let _ = write!(h, "<p class=\"error\"><code>{}</code></p>", escape(e));
            }
            if !p.findings.is_empty() {
                h.push_str("<ul class=\"findings\">");
                for f in &p.findings {
                    let _ = write!(h, "<li><code>{}</code></li>", escape(&finding_line(f)));
                }
                h.push_str("</ul>");
            }
            h.push_str("</td></tr>\n");
        }
        h.push_str("</table>\n");
    }
    h.push_str("</details>\n");
}

/// The trial's repository, base, model, commits and patch (folded).
fn about(h: &mut String, a: &super::About) {
    let mut rows = Vec::new();
    if let Some(r) = &a.repository {
        rows.push(("repository", escape(r)));
    }
    if let Some(b) = &a.base {
        rows.push(("base", format!("<code>{}</code>", escape(b))));
    }
    if let Some(r) = &a.range {
        rows.push(("commits", format!("<code>{}</code>", escape(r))));
    }
    if let Some(m) = &a.model {
        rows.push(("model", escape(m)));
    }
    if let Some(n) = a.patch_bytes {
        rows.push(("patch", human_bytes(n)));
    }
    if !rows.is_empty() {
        h.push_str("<table class=\"about\">");
        for (k, v) in rows {
            let _ = write!(h, "<tr><th>{k}</th><td>{v}</td></tr>");
        }
        h.push_str("</table>\n");
    }
    if let (Some(p), Some(n)) = (&a.patch, a.patch_bytes) {
        let shown = if (p.len() as u64) < n {
            format!(" (the first {})", human_bytes(p.len() as u64))
        } else {
            String::new()
        };
        let _ = write!(
            h,
            "<details class=\"patch\"><summary>the patch{shown}</summary><pre><code>"
        );
        // Line by line: the line breaks are the page's, everything else
        // in a line is escaped text.
        let lines: Vec<String> = p.split('\n').map(escape).collect();
        h.push_str(&lines.join("\n"));
        h.push_str("</code></pre></details>\n");
    }
}

/// A count for people: `950`, `711 k`, `3.58 M`, `1.2 G`.
pub fn human_count(n: u64) -> String {
    let v = n as f64;
    if n < 1_000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.0} k", v / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.2} M", v / 1e6)
    } else {
        format!("{:.2} G", v / 1e9)
    }
}

/// A size for people: `512 B`, `2.4 KiB`, `2.38 MiB`.
pub fn human_bytes(n: u64) -> String {
    let v = n as f64;
    if n < 1 << 10 {
        format!("{n} B")
    } else if n < 1 << 20 {
        format!("{:.1} KiB", v / 1024.0)
    } else if n < 1 << 30 {
        format!("{:.2} MiB", v / 1048576.0)
    } else {
        format!("{:.2} GiB", v / 1073741824.0)
    }
}

/// The element id of a trial.
pub fn anchor(run_id: &str) -> String {
    format!("trial-{run_id}")
}

/// A long property name cut for the chart (the table has it whole).
fn clip(s: &str) -> String {
    if s.chars().count() <= 28 {
        s.to_string()
    } else {
        let mut cut: String = s.chars().take(27).collect();
        cut.push('…');
        cut
    }
}

/// Untrusted text as HTML text or a quoted attribute value.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in inert(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::trials;
    use super::*;

    #[test]
    fn every_trial_has_a_drill_down_and_nothing_untrusted_is_markup() {
        let t = trials();
        let page = render(&Summary::of(&t), &t);
        for run in ["good", "bad", "cut", "pending", "tampered"] {
            assert!(
                page.contains(&format!("<details id=\"trial-{run}\"")),
                "{run}"
            );
        }
        assert_eq!(page.matches("<script").count(), 0, "{page}");
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        // Nothing links or loads anything (a repository's URL is text).
        assert!(!page.contains("src="), "{page}");
        assert!(
            page.match_indices("href=\"")
                .all(|(i, _)| page[i..].starts_with("href=\"#")),
            "{page}"
        );
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn each_trial_shows_its_repository_base_model_and_patch_and_sizes_for_people() {
        let t = trials();
        let page = render(&Summary::of(&t), &t);
        let good = &page[page.find("<details id=\"trial-good\"").unwrap()..];
        let good = &good[..good.find("</details>\n<details id=").unwrap()];
        assert!(
            good.contains("<th>repository</th><td>https://example.test/&lt;script&gt;"),
            "{good}"
        );
        assert!(
            good.contains("<th>base</th><td><code>0123abcd</code>"),
            "{good}"
        );
        assert!(
            good.contains("<th>model</th><td>model-&lt;script&gt;"),
            "{good}"
        );
        assert!(good.contains("<th>patch</th><td>2.38 MiB</td>"), "{good}");
        assert!(good.contains("the patch (the first"), "{good}");
        assert!(
            good.contains("<pre><code>diff --git a/x b/x\n+&lt;script&gt;"),
            "{good}"
        );
        // Control characters in a line are escaped text.
        assert!(good.contains("\\u{1b}[2J"), "{good}");
        assert!(!page.contains('\u{1b}'));
        assert_eq!(page.matches("<script").count(), 0);
        assert_eq!(human_count(950), "950");
        assert_eq!(human_count(711_125), "711 k");
        assert_eq!(human_count(3_580_085), "3.58 M");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(2_500), "2.4 KiB");
    }
}
