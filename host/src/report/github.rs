//! GitHub Actions workflow commands: `::error file=…,line=…,title=…::…`
//! for each finding of a failing property (`::notice` for a frozen one),
//! and one line per trial whose verdict is not `review`, that was not
//! classified, or whose chain is broken.
//!
//! GitHub shows at most 10 annotations of a step: so at most [`SHOWN`]
//! commands are written, the most severe first (errors, then warnings,
//! then notices, each in report order); when there are more, the last of
//! them is a warning that counts the ones left out and says where they
//! are (the SARIF, JUnit and Markdown reports hold every one).
//!
//! A workflow command is a line of the step's stdout, so everything
//! untrusted is escaped by GitHub's rules: in the message `%`, `\r` and
//! `\n`; in a property value `:` and `,` as well. No finding can therefore
//! end the line and start a command of its own (`::add-mask::`,
//! `::stop-commands::`), or add a property. Any other control character is
//! written as a visible escape (`inert`).

use super::{Trial, TrialStatus, fails};
use crate::output::inert;
use crate::record::{Finding, PropertyResult};

/// How many annotations GitHub shows for one step.
pub const SHOWN: usize = 10;

/// The workflow commands, one per line: at most [`SHOWN`], the most
/// severe first, the last counting the rest when there are more.
pub fn render(trials: &[Trial]) -> String {
    let all = every_command(trials);
    let mut lines: Vec<(usize, &str)> = all
        .lines()
        .map(|l| {
            let rank = ["::error", "::warning", "::notice"]
                .iter()
                .position(|p| l.starts_with(p))
                .unwrap_or(3);
            (rank, l)
        })
        .collect();
    // Stable: report order within a level.
    lines.sort_by_key(|(rank, _)| *rank);
    let mut out = String::new();
    let shown = if lines.len() > SHOWN {
        SHOWN - 1
    } else {
        lines.len()
    };
    for (_, line) in &lines[..shown] {
        out.push_str(line);
        out.push('\n');
    }
    let rest = &lines[shown..];
    if !rest.is_empty() {
        let count = |rank: usize| rest.iter().filter(|(r, _)| *r == rank).count();
        command(
            &mut out,
            "warning",
            &[("title", "agent-ledger: more annotations")],
            &format!(
                "{} more not shown ({} error, {} warning, {} notice): GitHub shows {SHOWN} annotations a step; the SARIF, JUnit and Markdown reports hold every one",
                rest.len(),
                count(0),
                count(1),
                count(2)
            ),
        );
    }
    out
}

/// Every workflow command, one per line, in report order.
fn every_command(trials: &[Trial]) -> String {
    let mut out = String::new();
    for t in trials {
        let title = format!("agent-ledger {}", t.run_id);
        let reasons = || {
            t.reasons
                .iter()
                .map(|r| format!("{}: {}", r.code, r.message))
                .collect::<Vec<_>>()
                .join("; ")
        };
        match t.status {
            TrialStatus::Review => {}
            TrialStatus::Broken => command(
                &mut out,
                "error",
                &[("title", &title)],
                &format!("broken chain: {}", reasons()),
            ),
            TrialStatus::NotClassified => command(
                &mut out,
                "warning",
                &[("title", &title)],
                "no verdict on file: the run was not classified",
            ),
            status => command(
                &mut out,
                "error",
                &[("title", &title)],
                &format!("verdict {}: {}", status.as_str(), reasons()),
            ),
        }
        for p in &t.properties {
            property(&mut out, &t.run_id, p);
        }
    }
    out
}

fn property(out: &mut String, run: &str, p: &PropertyResult) {
    let title = format!("agent-ledger {run}: {} {}", p.name, p.outcome.as_str());
    for f in &p.findings {
        finding(out, &title, p, f);
    }
    if fails(p.outcome) && p.findings.iter().all(|f| f.frozen) {
        let message = p.error.clone().unwrap_or_else(|| p.outcome.as_str().into());
        command(out, "error", &[("title", &title)], &message);
    }
}

fn finding(out: &mut String, title: &str, p: &PropertyResult, f: &Finding) {
    let level = if f.frozen || !fails(p.outcome) {
        "notice"
    } else {
        "error"
    };
    let line = f.line.filter(|l| *l >= 1).map(|l| l.to_string());
    let mut props: Vec<(&str, &str)> = Vec::new();
    if !f.path.is_empty() {
        props.push(("file", &f.path));
        if let Some(line) = &line {
            props.push(("line", line));
        }
    }
    props.push(("title", title));
    let message = if f.frozen {
        format!("[frozen] {}", f.message)
    } else {
        f.message.clone()
    };
    command(out, level, &props, &message);
}

fn command(out: &mut String, level: &str, props: &[(&str, &str)], message: &str) {
    out.push_str("::");
    out.push_str(level);
    for (i, (key, value)) in props.iter().enumerate() {
        out.push(if i == 0 { ' ' } else { ',' });
        out.push_str(key);
        out.push('=');
        out.push_str(&escape_property(value));
    }
    out.push_str("::");
    out.push_str(&escape_data(message));
    out.push('\n');
}

/// A command's message: `%`, `\r`, `\n` percent-encoded (`%` first).
pub fn escape_data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    inert(&s).into_owned()
}

/// A command's property value: as [`escape_data`], and `:` and `,`.
pub fn escape_property(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace(':', "%3A")
        .replace(',', "%2C");
    inert(&s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::super::tests::trials;
    use super::*;

    #[test]
    fn a_finding_cannot_forge_a_second_command() {
        let text = render(&trials());
        for line in text.lines() {
            assert!(line.starts_with("::"), "{line}");
            // Exactly one command per line: the level, then `::` once more.
            let command = line[2..].split([' ', ':']).next().unwrap();
            assert!(["error", "warning", "notice"].contains(&command), "{line}");
        }
        let hostile = text.lines().find(|l| l.contains("forged")).unwrap();
        assert!(
            hostile.starts_with("::error file=src/<script>"),
            "{hostile}"
        );
        assert!(hostile.contains("%0A::error::forged %250A"), "{hostile}");
        assert!(hostile.contains("\\u{1b}[2J"), "{hostile}");
        // The path's `:` and `,`-free properties stay three.
        let props = hostile.split("::").nth(1).unwrap();
        assert_eq!(props.matches(',').count(), 2, "{props}");
        assert!(props.contains("line=7"), "{props}");
    }

    #[test]
    fn at_most_ten_annotations_most_severe_first_and_a_count_of_the_rest() {
        // Forty trials, each with a notice (a frozen finding) and an
        // error verdict, one not classified (a warning).
        let mut many = Vec::new();
        for i in 0..40 {
            let mut t = trials().remove(1);
            t.run_id = format!("bad{i:02}");
            t.properties[0].findings[0].frozen = true;
            many.push(t);
        }
        many.push(trials().remove(3));
        let text = render(&many);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), SHOWN, "{text}");
        assert!(
            lines[..SHOWN - 1].iter().all(|l| l.starts_with("::error")),
            "{text}"
        );
        assert!(lines[0].contains("agent-ledger bad00"), "{text}");
        let last = lines[SHOWN - 1];
        assert!(
            last.starts_with("::warning title=agent-ledger%3A more annotations::"),
            "{last}"
        );
        let total = every_command(&many).lines().count();
        assert!(
            last.contains(&format!("{} more not shown", total - (SHOWN - 1))),
            "{last}"
        );
        assert!(last.contains("1 warning, 40 notice"), "{last}");
        // Ten or fewer: all of them, nothing added.
        assert_eq!(
            render(&trials()).lines().count(),
            every_command(&trials()).lines().count()
        );
    }

    #[test]
    fn github_escaping_rules() {
        assert_eq!(escape_data("50%\r\nx::y,z"), "50%25%0D%0Ax::y,z");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    #[test]
    fn every_trial_that_is_not_review_gets_a_line() {
        let text = render(&trials());
        assert!(!text.contains("agent-ledger good::"), "{text}");
        for (run, level) in [
            ("bad", "error"),
            ("cut", "error"),
            ("pending", "warning"),
            ("tampered", "error"),
        ] {
            assert!(
                text.contains(&format!("::{level} title=agent-ledger {run}::")),
                "{run}: {text}"
            );
        }
    }
}
