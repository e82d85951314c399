//! `merge`: combine the ledgers of a partitioned batch. Every file of every
//! source ledger is copied into the target unless the target already holds
//! the same bytes; the object store merges by content. Two different files
//! under one name (two records for one run id) are a conflict: nothing is
//! written, and each conflict is named.
//!
//! A source brings whole runs only. Every file outside `objects/` must
//! belong to a run whose records the source holds (its name is the run id
//! and a suffix), each such run's records must read as one linked chain
//! (`chain::read_run`), and a signature must sign exactly that run's
//! records: its statement is compared with them, and with `--trusted-key`
//! its signature is checked too. So a shard cannot add a stray file (a junk
//! signature, a second report) to a run another shard holds.

use crate::exit::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every run a source brings (its property record) must be a line of
/// `manifest` and must have been judged as that line says
/// (`ManifestLine::disagreement`).
fn answers_manifest(manifest: &Path, wanted: &BTreeMap<String, (Vec<u8>, PathBuf)>) -> Result<()> {
    let mut lines = BTreeMap::new();
    for (_, parsed) in crate::batch::read_manifest(manifest)? {
        let line = parsed.map_err(|e| Error::data(manifest, e))?;
        lines.insert(line.run.clone(), line);
    }
    for (rel, (bytes, from)) in wanted {
        let Some(run) = rel
            .strip_prefix("properties/")
            .and_then(|r| r.strip_suffix(".json"))
        else {
            continue;
        };
        let Some(line) = lines.get(run) else {
            return Err(Error::data(
                from,
                format!("run `{run}` is not a line of `{}`", manifest.display()),
            ));
        };
        let record: crate::record::PropertyRecord = serde_json::from_slice(bytes)
            .map_err(|e| Error::data(&from.join(rel), format!("not a property record: {e}")))?;
        let receipt: Option<crate::record::TranscriptReceipt> = wanted
            .get(&format!("transcripts/{run}.json"))
            .map(|(bytes, _)| serde_json::from_slice(bytes))
            .transpose()
            .map_err(|e| {
                Error::data(from, format!("run `{run}`: not a transcript receipt: {e}"))
            })?;
        if let Some(why) = line.disagreement(&record, receipt.as_ref())? {
            return Err(Error::data(
                from,
                format!(
                    "run `{run}` does not answer its line of `{}`: {why}; nothing was merged",
                    manifest.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The directories of a ledger, all merged.
const DIRS: &[&str] = &[
    "transcripts",
    "fixtures",
    "properties",
    "verdicts",
    "objects",
    "signatures",
];

/// The files of a run, by directory: the run id followed by one of these.
const RUN_FILES: &[(&str, &str)] = &[
    ("transcripts", ".json"),
    ("transcripts", ".patch"),
    ("transcripts", ".response"),
    ("transcripts", ".request"),
    ("transcripts", ".trace.jsonl"),
    ("fixtures", ".lock.json"),
    ("properties", ".json"),
    ("properties", ".junit.xml"),
    ("properties", ".base-junit.xml"),
    ("properties", ".eval.patch"),
    ("properties", ".test.log"),
    ("verdicts", ".json"),
    ("signatures", ".dsse.json"),
];

/// What a merge did.
#[derive(Debug, Default, serde::Serialize, schemars::JsonSchema)]
pub struct Merged {
    /// Files copied into the target, ledger-relative.
    pub copied: Vec<String>,
    /// Files the target already held with the same bytes.
    pub identical: usize,
}

/// Merges `sources` into `into` (created when missing). With `trusted`
/// keys, every signature a source brings must verify under one; with a
/// `manifest`, every run's property record must answer its line.
pub fn merge(
    into: &Path,
    sources: &[PathBuf],
    trusted: &[ed25519_dalek::VerifyingKey],
    manifest: Option<&Path>,
) -> Result<Merged> {
    // relative path -> (bytes, the source it came from)
    let mut wanted: BTreeMap<String, (Vec<u8>, PathBuf)> = BTreeMap::new();
    let mut conflicts = Vec::new();
    for src in sources {
        if !src.is_dir() {
            return Err(Error::Missing(format!(
                "`{}` is not a ledger directory",
                src.display()
            )));
        }
        if src.canonicalize().ok() == into.canonicalize().ok() {
            return Err(Error::Usage(format!(
                "`{}` is the target itself",
                src.display()
            )));
        }
        let listed = files(src)?;
        whole_runs(src, &listed, trusted)?;
        for (rel, path) in listed {
            let bytes = crate::input::read_file(&path, crate::input::OBJECT_CAP)?;
            if rel.starts_with("objects/") {
                let name = rel.trim_start_matches("objects/");
                if crate::digest::sha256_hex(&bytes) != name {
                    return Err(Error::data(
                        &path,
                        "an object whose bytes do not hash to its name",
                    ));
                }
            }
            match wanted.get(&rel) {
                Some((have, from)) if *have != bytes => conflicts.push(format!(
                    "{rel}: `{}` and `{}` differ",
                    from.display(),
                    src.display()
                )),
                Some(_) => {}
                None => {
                    wanted.insert(rel, (bytes, src.clone()));
                }
            }
        }
    }
    if let Some(manifest) = manifest {
        answers_manifest(manifest, &wanted)?;
    }
    let mut merged = Merged::default();
    let mut to_write = Vec::new();
    for (rel, (bytes, from)) in &wanted {
        let target = into.join(rel);
        match std::fs::symlink_metadata(&target) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                to_write.push((rel, target, bytes))
            }
            Err(e) => return Err(Error::read(&target, e)),
            Ok(meta) if !meta.is_file() => conflicts.push(format!(
                "{rel}: the target holds something other than a file there"
            )),
            Ok(_) => {
                let have = crate::input::read_file(&target, crate::input::OBJECT_CAP)?;
                if have == *bytes {
                    merged.identical += 1;
                } else {
                    conflicts.push(format!(
                        "{rel}: the target's differs from `{}`'s",
                        from.display()
                    ));
                }
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::data(
            into,
            format!(
                "{} conflict(s), nothing written: {}",
                conflicts.len(),
                conflicts.join("; ")
            ),
        ));
    }
    // `merge --into .agent-ledger` runs in a pull request's checkout: no
    // record is written through a link the branch committed.
    if into
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(Error::data(
            into,
            "is a symbolic link: records are never written through a link; pass the directory itself",
        ));
    }
    if let Err(link) = crate::resolve::refuse_linked_entries(into) {
        return Err(Error::data(
            &link,
            "is a symbolic link inside the ledger merged into: records are never written through a link; remove it",
        ));
    }
    crate::ledger::Ledger::new(into).create()?;
    for (rel, target, bytes) in to_write {
        crate::ledger::write_new(&target, bytes)?;
        merged.copied.push(rel.clone());
    }
    Ok(merged)
}

/// Refuses a source that holds part of a run: a file that belongs to no run
/// whose records it holds, a run whose records do not link, or a signature
/// that does not sign its run's records (or, with `trusted` keys, does not
/// verify under one).
fn whole_runs(
    src: &Path,
    listed: &[(String, PathBuf)],
    trusted: &[ed25519_dalek::VerifyingKey],
) -> Result<()> {
    use crate::ledger::{Ledger, RunId};
    let ledger = Ledger::new(src);
    let runs = crate::verify::runs_in(&ledger);
    let whole_only = "merge takes whole runs only";
    for (rel, path) in listed {
        if rel.starts_with("objects/") {
            continue;
        }
        let (dir, name) = rel.split_once('/').unwrap_or(("", rel.as_str()));
        // Exactly a run id and one of the names the ledger gives a run's
        // files in that directory: run ids may hold `.`, so a prefix would
        // let run `t` claim `t.1.dsse.json`, run `t.1`'s signature.
        let owned = RUN_FILES
            .iter()
            .filter(|(d, _)| *d == dir)
            .filter_map(|(_, suffix)| name.strip_suffix(suffix))
            .any(|run| runs.iter().any(|r| r == run));
        if !owned {
            return Err(Error::data(
                path,
                format!(
                    "it belongs to no run whose records `{}` holds: {whole_only}",
                    src.display()
                ),
            ));
        }
    }
    for run in &runs {
        let id = RunId::parse(run)?;
        let records = crate::chain::read_run(&ledger, &id).map_err(|e| {
            Error::data(
                src,
                format!(
                    "run `{}` is not whole or does not link ({e}): {whole_only}",
                    crate::output::inert(run)
                ),
            )
        })?;
        crate::classify::stored_verdict_follows(&id, &records).map_err(|why| {
            Error::data(src, format!("run `{}`: {why}", crate::output::inert(run)))
        })?;
        let sig = ledger.signature(&id);
        if std::fs::symlink_metadata(&sig).is_err() {
            continue;
        }
        let bytes = crate::input::read_file(&sig, crate::input::RECORD_CAP)?;
        let (Some(t), Some(v)) = (&records.transcript, &records.verdict) else {
            return Err(Error::data(
                &sig,
                "a signature of a run without its transcript and verdict in the same ledger",
            ));
        };
        let statement = if trusted.is_empty() {
            crate::sign::claimed(&bytes)
        } else {
            crate::sign::open(&bytes, trusted)
        }
        .map_err(|e| Error::data(&sig, e))?;
        let expected = crate::sign::statement(
            run,
            &crate::digest::sha256_hex(&t.patch),
            &v.record,
            &v.sha256,
        );
        if statement != expected {
            return Err(Error::data(
                &sig,
                "the signed statement does not match the run's records (subject, verdict or record digests differ)",
            ));
        }
    }
    Ok(())
}

/// The files of a ledger, ledger-relative: regular files only (a symlink
/// or anything else in a source is refused), temp files skipped.
fn files(ledger: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for dir in DIRS {
        let d = ledger.join(dir);
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::read(&d, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::read(&d, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(Error::data(&entry.path(), "a file name that is not UTF-8"));
            };
            if name.starts_with(".tmp-") {
                continue;
            }
            let ft = entry
                .file_type()
                .map_err(|e| Error::read(&entry.path(), e))?;
            if !ft.is_file() {
                return Err(Error::data(
                    &entry.path(),
                    "not a regular file: a ledger holds only files",
                ));
            }
            out.push((format!("{dir}/{name}"), entry.path()));
        }
    }
    Ok(out)
}
