//! Inputs the fuzzers (fuzz/, `bash .ci/fuzz`) found wrong, fed through the
//! CLI as a user would, with what the user must see. Each input is kept in
//! `fuzz/regressions/TARGET/`, which `.ci/fuzz` also runs on every smoke run.

use crate::support::{run, tempdir};
use std::path::{Path, PathBuf};

fn regression(target: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target)
        .join(name)
}

/// `verify ARCHIVE` on an archive whose entry names cannot be laid out as
/// files refuses it as bad data (65), naming the entry and what is wrong with
/// it, never a write failure (73) naming the scratch directory.
#[test]
fn an_archive_entry_that_cannot_be_unpacked_is_bad_data() {
    for (name, says) in [
        // fuzz target `archive`: a regular-file entry named `a/…/a/` (a
        // trailing slash names a directory).
        (
            "file-named-like-a-directory.tar",
            "is not a plain relative path",
        ),
        // fuzz target `archive`: a GNU long name with NUL bytes inside.
        ("nul-in-a-long-name.tar", "is not a plain relative path"),
        // The same family, made by hand: `a` then `a/b`, `a/b` then `a`,
        // and a 300-byte name.
        (
            "file-then-directory-of-one-name.tar",
            "entry `a/b` cannot be unpacked under its name",
        ),
        (
            "directory-then-file-of-one-name.tar",
            "entry `a` cannot be unpacked under its name",
        ),
        ("name-too-long.tar", "cannot be unpacked under its name"),
        // `transcripts/x.json`, then `transcripts//x.json`: one file under
        // two names, the second replacing the first on disk.
        (
            "one-file-under-two-names.tar",
            "entry `transcripts//x.json` is not a plain relative path",
        ),
    ] {
        let dir = tempdir();
        let archive = dir.path().join("in.tar");
        std::fs::copy(regression("archive", name), &archive).unwrap();
        let out = run(dir.path(), &["verify", "in.tar"]);
        out.assert_code(65);
        assert!(
            out.stderr.contains("`in.tar`: entry `") && out.stderr.contains(says),
            "{name}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("agent-ledger-verify-"),
            "{name}: names the scratch directory: {}",
            out.stderr
        );
    }
}

/// Every kept archive regression is refused as bad data.
#[test]
fn every_kept_archive_regression_is_bad_data() {
    let cwd = tempdir();
    for entry in std::fs::read_dir(regression("archive", "")).unwrap() {
        let path = entry.unwrap().path();
        let out = run(cwd.path(), &["verify", path.to_str().unwrap()]);
        out.assert_code(65);
    }
}
