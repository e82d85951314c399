//! `merge`: combine the ledgers of a partitioned batch. Every file of every
//! source ledger is copied into the target unless the target already holds
//! the same bytes; the object store merges by content. Two different files
//! under one name (two records for one run id) are a conflict: nothing is
//! written, and each conflict is named.

use crate::exit::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The directories of a ledger, all merged.
const DIRS: &[&str] = &[
    "transcripts",
    "fixtures",
    "properties",
    "verdicts",
    "objects",
    "signatures",
];

/// What a merge did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Merged {
    /// Files copied into the target, ledger-relative.
    pub copied: Vec<String>,
    /// Files the target already held with the same bytes.
    pub identical: usize,
}

/// Merges `sources` into `into` (created when missing).
pub fn merge(into: &Path, sources: &[PathBuf]) -> Result<Merged> {
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
        for (rel, path) in files(src)? {
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
    for (rel, target, bytes) in to_write {
        crate::ledger::write_new(&target, bytes)?;
        merged.copied.push(rel.clone());
    }
    Ok(merged)
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
