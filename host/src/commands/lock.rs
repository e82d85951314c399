//! `agent-ledger lock`: lock the fixture roots of the working tree, or
//! compare a lock with it.

use crate::chain::{self, Locked};
use crate::exit::{Error, ExitCode, Result};
use crate::ledger::{self, RunId};
use crate::lock::{check_consistent, compare, normalize_root, scan};
use crate::output::{self, OutputArgs, inert};
use crate::record::FixtureLock;
use crate::resolve::{ConfigAt, Needs, Resolved, ScopeArgs};
use std::path::{Path, PathBuf};

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
    /// A fixture root, relative to the repository (repeatable) [default: the
    /// configuration's `[fixtures].roots`].
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<String>,
    /// Compare this lock file with the tree instead of writing a lock
    /// (roots default to the lock's own).
    #[arg(long, value_name = "LOCKFILE")]
    pub compare: Option<PathBuf>,
    /// Lock the fixture roots of this revision (checked out apart from the
    /// working tree, roots from its configuration) rather than of the
    /// working tree: the only lock `check` trusts for a trial on that base.
    #[arg(long, value_name = "REV", requires = "run")]
    pub base: Option<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl LockArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let roots = self
            .roots
            .iter()
            .map(|r| normalize_root(r))
            .collect::<Result<Vec<_>>>()?;
        let needs = match &self.base {
            Some(rev) => Needs {
                repo: true,
                config_at: ConfigAt::Revision(rev),
            },
            None => Needs {
                repo: false,
                config_at: ConfigAt::WorkingTree,
            },
        };
        match &self.compare {
            Some(_) if ledger.is_some() => Err(Error::Usage(
                "`--ledger` has no effect on `lock --compare`, which reads the lock file it is given: drop it".into(),
            )),
            Some(lockfile) => {
                // git's discovery is a child process to wait for: the lock
                // is read meanwhile, and its roots picked out of it so that
                // the scan can start while the rest of it is parsed.
                let (resolved, read) = rayon::join(
                    || self.scope.resolve(ledger, needs),
                    || -> Result<_> {
                        let bytes = crate::input::read_file(lockfile, crate::input::RECORD_CAP)?;
                        let roots = match roots.is_empty() {
                            true => lock_roots(lockfile, &bytes)?,
                            false => roots,
                        };
                        Ok((bytes, roots))
                    },
                );
                let resolved = resolved?;
                let (bytes, roots) = read?;
                self.compare(&resolved, &bytes, lockfile, &roots)
            }
            None => {
                let resolved = self.scope.resolve(ledger, needs)?;
                let run = RunId::parse(self.run.as_deref().unwrap_or_default())?;
                let roots = if roots.is_empty() {
                    resolved.config.config.fixtures.roots.clone()
                } else {
                    roots
                };
                if roots.is_empty() {
                    return Err(Error::Usage(format!(
                        "`lock --run` needs at least one `--root DIR`, or `[fixtures].roots` in the configuration ({})",
                        resolved.config.source
                    )));
                }
                self.write(&resolved, &run, &roots)
            }
        }
    }

    fn write(&self, resolved: &Resolved, run: &RunId, roots: &[String]) -> Result<ExitCode> {
        let ledger = &resolved.ledger;
        let target = ledger.lock(run);
        if target.symlink_metadata().is_ok() {
            return Err(Error::Exists {
                path: target,
                hint: ledger::RETRY_HINT.into(),
            });
        }
        let transcript = chain::read_transcript(ledger, run)?.ok_or_else(|| {
            Error::Missing(format!(
                "no transcript receipt `{}` for run `{run}`: capture comes before lock",
                ledger.transcript(run).display()
            ))
        })?;
        // A revision is checked out apart from the working tree, which may
        // already hold the agent's edits.
        let base = match (&resolved.repo, &resolved.revision) {
            (Some(repo), Some(rev)) if self.base.is_some() => {
                Some((crate::replay::BaseTree::new(repo, rev)?, rev.as_str()))
            }
            _ => None,
        };
        let tree = base
            .as_ref()
            .map_or(resolved.root.as_path(), |(b, _)| b.checkout.tree.as_path());
        let lock = match chain::write_lock(
            ledger,
            run,
            tree,
            roots,
            base.as_ref().map(|(_, rev)| *rev),
            &transcript.loaded,
            chain::LockExtras {
                evaluation: None,
                none: resolved.config.config.fixtures.none.clone(),
            },
        )? {
            Locked::Written(lock) => lock,
            // `execute` refuses an empty root list before this.
            Locked::NoRoots => return Err(Error::Internal("no fixture roots to lock".into())),
            Locked::EmptyRoots(empty) => {
                let value = LockOutput::Empty {
                    result: LockResult::FixtureMismatch,
                    empty_roots: &empty,
                };
                output::emit(self.output.format, &value, || {
                    format!(
                        "fixture_mismatch: fixture root(s) {} hold no files; no lock was written\n",
                        empty
                            .iter()
                            .map(|r| format!("`{}`", inert(r)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
                return Ok(ExitCode::FixtureMismatch);
            }
        };
        let record = &lock.record;
        let value = LockOutput::Written {
            run_id: &record.run_id,
            lock: &lock.path,
            sha256: &lock.sha256,
            count: record.count,
            dir_hash: &record.dir_hash,
        };
        output::emit(self.output.format, &value, || {
            format!(
                "locked {} file(s) under {} for run {} (dirHash {})\n",
                record.count,
                inert(&record.roots.join(", ")),
                inert(&record.run_id),
                record.dir_hash
            )
        })?;
        Ok(ExitCode::Ok)
    }

    fn compare(
        &self,
        resolved: &Resolved,
        bytes: &[u8],
        lockfile: &Path,
        roots: &[String],
    ) -> Result<ExitCode> {
        // The lock is parsed and its own consistency checked while the tree
        // is scanned; nothing is compared until both are done.
        let (lock, scanned) = rayon::join(
            || -> Result<FixtureLock> {
                let lock = ledger::parse_unhashed::<FixtureLock>(lockfile, bytes)?;
                check_consistent(&lock, lockfile)?;
                Ok(lock)
            },
            || scan(&resolved.root, roots),
        );
        let lock = lock?;
        let scanned = scanned?;
        let drift = compare(&lock.files, &scanned.entries);
        let matches = drift.is_empty() && !lock.files.is_empty();
        let value = LockOutput::Compared {
            result: if matches {
                LockResult::Match
            } else {
                LockResult::FixtureMismatch
            },
            lock: lockfile,
            drift: &drift,
        };
        output::emit(self.output.format, &value, || {
            let mut text = if matches {
                format!("match: {} file(s) as locked\n", lock.count)
            } else if lock.files.is_empty() {
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
                    text.push_str(&format!("  {kind}: {}\n", inert(p)));
                }
            }
            text
        })?;
        Ok(if matches {
            ExitCode::Ok
        } else {
            ExitCode::FixtureMismatch
        })
    }
}

/// The roots a lock file names: only that field is read, so that the scan
/// can start before the rest is parsed. A file it cannot be read from is
/// parsed whole, for the error that names what is wrong with it.
fn lock_roots(lockfile: &Path, bytes: &[u8]) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Roots {
        roots: Vec<String>,
    }
    let roots = match serde_json::from_slice::<Roots>(bytes) {
        Ok(r) => r.roots,
        Err(_) => ledger::parse_unhashed::<FixtureLock>(lockfile, bytes)?.roots,
    };
    Ok(covering(roots))
}

/// The roots of `roots` that no other one holds, each once: a scan of them
/// finds every entry a scan of all would (the scan keeps each path once),
/// so a lock naming a root many times, or roots inside roots, costs one
/// walk of the tree, not one per root (and an inconsistent one is refused
/// as soon as it has been parsed, not after thousands of walks).
fn covering(mut roots: Vec<String>) -> Vec<String> {
    roots.sort();
    roots.dedup();
    let named: std::collections::HashSet<&str> = roots.iter().map(String::as_str).collect();
    // `a/b` is inside `a` and inside `` (the whole repository).
    let inside_another = |root: &str| {
        !root.is_empty()
            && (named.contains("")
                || root
                    .match_indices('/')
                    .any(|(at, _)| named.contains(&root[..at])))
    };
    roots
        .iter()
        .filter(|r| !inside_another(r))
        .cloned()
        .collect()
}

/// `lock --format json`: one of three documents.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum LockOutput<'a> {
    /// A lock was written.
    Written {
        run_id: &'a str,
        /// The lock record's path.
        lock: &'a Path,
        /// sha256 of the lock record.
        sha256: &'a str,
        /// Files locked.
        count: u64,
        /// The roots' `dirHash` (see the fixture-lock schema).
        dir_hash: &'a str,
    },
    /// No lock was written: these roots hold no files.
    Empty {
        /// Always `fixture_mismatch`.
        result: LockResult,
        empty_roots: &'a [String],
    },
    /// `lock --compare`: the tree against a lock.
    Compared {
        result: LockResult,
        /// The lock compared with.
        lock: &'a Path,
        /// Paths added, removed and changed since the lock.
        #[serde(flatten)]
        drift: &'a crate::record::Drift,
    },
}

/// What `lock` found.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LockResult {
    /// The tree is as locked.
    Match,
    /// It is not, or there was nothing to lock.
    FixtureMismatch,
}

#[cfg(test)]
#[test]
fn covering_keeps_each_outermost_root_once() {
    let roots = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        covering(roots(&["a/b", "a", "a-b", "ab", "a", "a/b/c", "x/a"])),
        roots(&["a", "a-b", "ab", "x/a"])
    );
    assert_eq!(covering(roots(&["a", "", "b/c", ""])), roots(&[""]));
    assert_eq!(covering(roots(&["a/", "a/b"])), roots(&["a/", "a/b"]));
}
