//! `agent-ledger lock`: lock the fixture roots, or compare a lock with a tree.

use crate::cli::{OutputArgs, OutputFormat};
use crate::exit::{self, Error, Result};
use crate::ledger::{self, Ledger, RunId};
use crate::lock::{check_consistent, compare, dir_hash, normalize_root, scan};
use crate::output;
use crate::record::{FixtureLock, SCHEMA, TranscriptReceipt};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Run id whose lock to write.
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "compare",
        conflicts_with = "compare"
    )]
    pub run: Option<String>,
    /// A fixture root, relative to the repository (repeatable).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<String>,
    /// Compare this lock file with the tree instead of writing a lock
    /// (roots default to the lock's own).
    #[arg(long, value_name = "LOCKFILE")]
    pub compare: Option<PathBuf>,
    /// The repository the roots are relative to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl LockArgs {
    pub fn execute(self, ledger: &Ledger) -> Result<i32> {
        let roots = self
            .roots
            .iter()
            .map(|r| normalize_root(r))
            .collect::<Result<Vec<_>>>()?;
        match &self.compare {
            Some(lockfile) => self.compare(lockfile, roots),
            None => {
                let run = RunId::parse(self.run.as_deref().unwrap_or_default())?;
                if roots.is_empty() {
                    return Err(Error::Usage(
                        "`lock --run` needs at least one `--root DIR`".into(),
                    ));
                }
                self.write(ledger, &run, roots)
            }
        }
    }

    fn write(&self, ledger: &Ledger, run: &RunId, roots: Vec<String>) -> Result<i32> {
        let target = ledger.lock(run);
        if target.symlink_metadata().is_ok() {
            return Err(Error::Exists {
                path: target,
                hint: ledger::RETRY_HINT.into(),
            });
        }
        let transcript_path = ledger.transcript(run);
        let transcript =
            ledger::read_optional::<TranscriptReceipt>(&transcript_path)?.ok_or_else(|| {
                Error::Missing(format!(
                    "no transcript receipt `{}` for run `{run}`: capture comes before lock",
                    transcript_path.display()
                ))
            })?;
        ledger::check_run(&transcript, run)?;
        let scanned = scan(&self.repo, &roots)?;
        if !scanned.empty_roots.is_empty() {
            let text = format!(
                "fixture_mismatch: fixture root(s) {} hold no files; no lock was written\n",
                scanned
                    .empty_roots
                    .iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            self.report_empty(&scanned.empty_roots, &text)?;
            return Ok(exit::FIXTURE_MISMATCH);
        }
        let lock = FixtureLock {
            schema: SCHEMA,
            record: "fixture_lock".into(),
            run_id: run.to_string(),
            transcript_sha256: transcript.sha256,
            base_revision: None,
            roots,
            count: scanned.entries.len() as u64,
            dir_hash: dir_hash(&scanned.entries),
            files: scanned.entries,
        };
        let sha = ledger::write_record(&target, &lock)?;
        match self.output.format {
            OutputFormat::Json => output::print_json(&serde_json::json!({
                "run_id": lock.run_id,
                "lock": target,
                "sha256": sha,
                "count": lock.count,
                "dir_hash": lock.dir_hash,
            }))?,
            OutputFormat::Human => output::print(&format!(
                "locked {} file(s) under {} for run {} (dirHash {})\n",
                lock.count,
                lock.roots.join(", "),
                lock.run_id,
                lock.dir_hash
            ))?,
        }
        Ok(exit::OK)
    }

    fn report_empty(&self, empty: &[String], text: &str) -> Result<()> {
        match self.output.format {
            OutputFormat::Json => output::print_json(&serde_json::json!({
                "result": "fixture_mismatch",
                "empty_roots": empty,
            })),
            OutputFormat::Human => output::print(text),
        }
    }

    fn compare(&self, lockfile: &std::path::Path, roots: Vec<String>) -> Result<i32> {
        let loaded = ledger::read_required::<FixtureLock>(lockfile)?;
        check_consistent(&loaded.record, lockfile)?;
        let roots = if roots.is_empty() {
            loaded.record.roots.clone()
        } else {
            roots
        };
        let scanned = scan(&self.repo, &roots)?;
        let drift = compare(&loaded.record.files, &scanned.entries);
        let matches = drift.is_empty() && !loaded.record.files.is_empty();
        match self.output.format {
            OutputFormat::Json => output::print_json(&serde_json::json!({
                "result": if matches { "match" } else { "fixture_mismatch" },
                "lock": lockfile,
                "added": drift.added,
                "removed": drift.removed,
                "changed": drift.changed,
            }))?,
            OutputFormat::Human => {
                let mut text = if matches {
                    format!("match: {} file(s) as locked\n", loaded.record.count)
                } else if loaded.record.files.is_empty() {
                    "fixture_mismatch: the lock holds no files\n".to_string()
                } else {
                    "fixture_mismatch: the tree drifted from the lock\n".to_string()
                };
                for (kind, paths) in [
                    ("added", &drift.added),
                    ("removed", &drift.removed),
                    ("changed", &drift.changed),
                ] {
                    for p in paths {
                        text.push_str(&format!("  {kind}: {p}\n"));
                    }
                }
                output::print(&text)?;
            }
        }
        Ok(if matches {
            exit::OK
        } else {
            exit::FIXTURE_MISMATCH
        })
    }
}
