//! `agent-ledger check`: lock (when no lock exists, from the base tree),
//! replay and classify in one command. The CI gate: it exits with the
//! verdict code.

use crate::classify::{Records, classify};
use crate::cli::{OutputArgs, OutputFormat};
use crate::commands::classify::{store_verdict, verdict_text};
use crate::commands::replay::{TrialArgs, property_table};
use crate::exit::Result;
use crate::output;
use crate::replay;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub trial: TrialArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl CheckArgs {
    pub fn execute(self, ledger: Option<&std::path::Path>) -> Result<i32> {
        let r = self.trial.resolve(ledger)?;
        let mut records = Records {
            transcript: None,
            lock: None,
            properties: None,
        };
        let mut notes = Vec::new();
        // The report is kept even for a trial that goes no further, so a
        // flake observation can see which trial it came from.
        if let Some(bytes) = &r.junit {
            r.store_junit(bytes)?;
        }
        if let Some((transcript, patch)) = replay::read_transcript(&r.ledger, &r.run)? {
            if transcript.record.complete {
                // One checkout of the base serves the lock and the replay.
                let trees = replay::TrialTrees::new(&r.repo, &r.base)?;
                let lock = match replay::read_lock(&r.ledger, &r.run, &transcript)? {
                    Some(l) => Some(l),
                    None => match replay::lock_from_base(
                        &r.ledger,
                        &r.run,
                        &trees,
                        &r.base,
                        &r.config.config,
                        &transcript,
                    )? {
                        Ok(l) => Some(l),
                        Err(empty) if empty.is_empty() => {
                            notes.push(format!(
                                "no fixture roots are configured ({}): nothing was locked",
                                r.config.source
                            ));
                            None
                        }
                        Err(empty) => {
                            notes.push(format!("fixture root(s) {} hold no files at the base revision: nothing was locked", empty.join(", ")));
                            None
                        }
                    },
                };
                if let Some(lock) = &lock {
                    let sandbox = r.sandbox()?;
                    records.properties =
                        Some(r.replay(&sandbox, &transcript, &patch, lock, &trees)?);
                }
                records.lock = lock;
            }
            records.transcript = Some(transcript);
        }
        let verdict = classify(&r.run, &records)?;
        store_verdict(&r.ledger, &r.run, &verdict)?;
        match self.output.format {
            OutputFormat::Json => output::print_json(&serde_json::json!({
                "verdict": verdict,
                "properties": records.properties.as_ref().map(|p| &p.record),
                "notes": notes,
            }))?,
            OutputFormat::Human => {
                let mut text = verdict_text(&verdict);
                for note in &notes {
                    text.push_str(&format!("  note: {note}\n"));
                }
                if let Some(p) = &records.properties {
                    text.push('\n');
                    text.push_str(&property_table(&p.record));
                }
                output::print(&text)?;
            }
        }
        Ok(verdict.exit_code)
    }
}
