//! Archives of runs: one tar file holding the records of selected runs, the
//! objects they name (plugins, configurations, known-bad patches) and
//! `MANIFEST.json` listing every file with its sha256. `verify` reads an
//! archive by unpacking it into a temporary directory, refusing any entry
//! that is not a plain file at a plain relative path, and any file the
//! manifest does not list with the same digest.

use crate::digest::sha256_hex;
use crate::exit::{Error, Result};
use crate::ledger::{self, Ledger, RunId};
use crate::record::PropertyRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Component, Path};

pub const MANIFEST: &str = "MANIFEST.json";

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub schema: u32,
    /// Always `"archive_manifest"`.
    pub record: String,
    pub runs: Vec<String>,
    /// Ledger-relative path => sha256, for every other file in the archive.
    pub files: BTreeMap<String, String>,
}

/// The ledger-relative files that belong to a run, where they exist.
fn run_files(ledger: &Ledger, run: &RunId) -> Result<Vec<String>> {
    let mut files = vec![
        format!("transcripts/{run}.json"),
        format!("transcripts/{run}.patch"),
        format!("transcripts/{run}.response"),
        format!("transcripts/{run}.request"),
        format!("transcripts/{run}.trace.jsonl"),
        format!("fixtures/{run}.lock.json"),
        format!("properties/{run}.json"),
        format!("properties/{run}.junit.xml"),
        format!("properties/{run}.base-junit.xml"),
        format!("properties/{run}.eval.patch"),
        format!("properties/{run}.test.log"),
        format!("verdicts/{run}.json"),
        format!("signatures/{run}.dsse.json"),
    ];
    if let Some(p) = ledger::read_optional::<PropertyRecord>(&ledger.properties(run))? {
        files.push(format!("objects/{}", p.record.config_sha256));
        for r in &p.record.properties {
            if !r.plugin_sha256.is_empty() {
                files.push(format!("objects/{}", r.plugin_sha256));
            }
            if let Some(kb) = r.inputs.get("known_bad") {
                files.push(format!("objects/{kb}"));
            }
        }
    }
    files.retain(|f| ledger.root().join(f).is_file());
    Ok(files)
}

/// Writes an archive of `runs` to `out` (never over an existing file).
pub fn pack(ledger: &Ledger, runs: &[RunId], out: &Path) -> Result<Manifest> {
    let mut files = BTreeMap::new();
    for run in runs {
        let found = run_files(ledger, run)?;
        if found.is_empty() {
            return Err(Error::Missing(format!(
                "run `{run}` has no records in `{}`",
                ledger.root().display()
            )));
        }
        for f in found {
            let path = ledger.root().join(&f);
            let bytes = std::fs::read(&path).map_err(|e| Error::read(&path, e))?;
            files.insert(f, sha256_hex(&bytes));
        }
    }
    let manifest = Manifest {
        schema: 1,
        record: "archive_manifest".into(),
        runs: runs.iter().map(|r| r.to_string()).collect(),
        files,
    };
    let mut tar = tar::Builder::new(Vec::new());
    let mut add = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes)
    };
    let mut text = serde_json::to_vec_pretty(&manifest).expect("manifests serialise");
    text.push(b'\n');
    add(MANIFEST, &text).map_err(|e| Error::write(out, e))?;
    for f in manifest.files.keys() {
        let path = ledger.root().join(f);
        let bytes = std::fs::read(&path).map_err(|e| Error::read(&path, e))?;
        add(f, &bytes).map_err(|e| Error::write(out, e))?;
    }
    let bytes = tar.into_inner().map_err(|e| Error::write(out, e))?;
    ledger::write_new(out, &bytes)?;
    Ok(manifest)
}

/// Unpacks an archive into `dir` (a fresh ledger). Returns the manifest and
/// every way the files differ from it (a verification failure, not a data
/// error: the records themselves are then judged run by run).
pub fn unpack(archive: &Path, dir: &Path) -> Result<(Manifest, Vec<String>)> {
    let file = std::fs::File::open(archive).map_err(|e| Error::read(archive, e))?;
    let mut tar = tar::Archive::new(file);
    let mut seen = BTreeMap::new();
    let entries = tar
        .entries()
        .map_err(|e| Error::data(archive, format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry =
            entry.map_err(|e| Error::data(archive, format!("not a tar archive: {e}")))?;
        let name = entry
            .path()
            .map_err(|e| Error::data(archive, format!("bad entry name: {e}")))?
            .into_owned();
        let shown = name.display().to_string();
        if !entry.header().entry_type().is_file() {
            return Err(Error::data(
                archive,
                format!("entry `{shown}` is not a plain file"),
            ));
        }
        // A trailing `/` names a directory, whatever the entry type says; a
        // NUL (possible in a GNU long name) names no file at all.
        // Only a name in normal form: `a//b` or `a/./b` would be one file
        // under two names, the second replacing the first on disk while
        // both are listed.
        let raw = entry.path_bytes();
        let normal: Vec<&[u8]> = raw.split(|&b| b == b'/').collect();
        if raw.ends_with(b"/")
            || raw.contains(&0)
            || normal
                .iter()
                .any(|c| c.is_empty() || *c == b"." || *c == b"..")
            || name
                .components()
                .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(Error::data(
                archive,
                format!("entry `{shown}` is not a plain relative path"),
            ));
        }
        let cap = crate::input::OBJECT_CAP;
        if entry.header().size().map_or(true, |n| n > cap) {
            return Err(Error::data(
                archive,
                format!("entry `{shown}` is larger than the {cap}-byte cap"),
            ));
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut entry, cap + 1), &mut bytes)
            .map_err(|e| Error::read(archive, e))?;
        if bytes.len() as u64 > cap {
            return Err(Error::data(
                archive,
                format!("entry `{shown}` is larger than the {cap}-byte cap"),
            ));
        }
        let dest = dir.join(&name);
        if seen.insert(shown.clone(), sha256_hex(&bytes)).is_some() {
            return Err(Error::data(
                archive,
                format!("entry `{shown}` appears twice"),
            ));
        }
        // `dir` starts empty, so a name that cannot be created there (a
        // file where another entry needs a directory, or the reverse; a
        // name too long) is the archive's fault: bad data, not a write error.
        let unpackable = |at: &Path, e: std::io::Error| {
            use std::io::ErrorKind::{AlreadyExists, InvalidFilename, IsADirectory, NotADirectory};
            if matches!(
                e.kind(),
                AlreadyExists | NotADirectory | IsADirectory | InvalidFilename
            ) {
                Error::data(
                    archive,
                    format!("entry `{shown}` cannot be unpacked under its name: {e}"),
                )
            } else {
                Error::write(at, e)
            }
        };
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| unpackable(parent, e))?;
        }
        std::fs::write(&dest, &bytes).map_err(|e| unpackable(&dest, e))?;
    }
    let text = std::fs::read(dir.join(MANIFEST))
        .map_err(|_| Error::data(archive, format!("no `{MANIFEST}` in the archive")))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| Error::data(archive, format!("bad `{MANIFEST}`: {e}")))?;
    if manifest.schema != 1 || manifest.record != "archive_manifest" {
        return Err(Error::data(
            archive,
            format!("`{MANIFEST}` has an unknown schema or kind"),
        ));
    }
    seen.remove(MANIFEST);
    let mut problems = Vec::new();
    for (name, sha) in &seen {
        match manifest.files.get(name) {
            Some(listed) if listed == sha => {}
            Some(_) => problems.push(format!(
                "`{name}` does not match its digest in `{MANIFEST}`"
            )),
            None => problems.push(format!("`{name}` is not listed in `{MANIFEST}`")),
        }
    }
    for missing in manifest.files.keys().filter(|f| !seen.contains_key(*f)) {
        problems.push(format!(
            "`{missing}` is listed in `{MANIFEST}` but not in the archive"
        ));
    }
    Ok((manifest, problems))
}
