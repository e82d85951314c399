//! An example third-party property: a domain oracle for the demo project.
//!
//! Rule: the retry policy in `src/retry.py` may retry on 5xx statuses and on
//! the 4xx statuses listed in the `allowed_4xx` configuration (default
//! `429`), never on any other 4xx: retrying a 404 hammers a server for a page
//! that is not there. Its known-bad patch adds 404 to the list.

use agent_ledger_guest::{Guest, Info, Outcome, Trial, config, finding};

struct RetryOracle;

impl Guest for RetryOracle {
    fn describe() -> Info {
        Info {
            name: "retry_oracle".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: "the retry policy never retries a 4xx status other than the allowed ones"
                .into(),
        }
    }

    fn check(trial: Trial) -> Result<Outcome, String> {
        let file = config(&trial, "file").unwrap_or("src/retry.py");
        let allowed: Vec<u32> = config(&trial, "allowed_4xx")
            .unwrap_or("429")
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .map_err(|_| format!("`allowed_4xx` has a bad status `{s}`"))
            })
            .collect::<Result<_, _>>()?;
        let source = std::fs::read_to_string(format!("/patched/{file}"))
            .map_err(|e| format!("cannot read `{file}` in the patched tree: {e}"))?;
        let mut findings = Vec::new();
        for (n, line) in source.lines().enumerate() {
            if !line.contains("status in") {
                continue;
            }
            for word in line
                .split(|c: char| !c.is_ascii_digit())
                .filter(|w| w.len() == 3)
            {
                let status: u32 = word.parse().unwrap_or(0);
                if (400..500).contains(&status) && !allowed.contains(&status) {
                    findings.push(finding(
                        file,
                        Some(n as u32 + 1),
                        format!("retries on client error {status}"),
                    ));
                }
            }
        }
        Ok(if findings.is_empty() {
            Outcome::Holds(Vec::new())
        } else {
            Outcome::Miss(findings)
        })
    }
}

agent_ledger_guest::export!(RetryOracle with_types_in agent_ledger_guest);
