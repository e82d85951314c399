//! What plugins are not shown: the known-bad patches that lie in the
//! repository. Each self-test hands a plugin a known-bad patch as if it
//! were the trial's; a plugin that could also read the configured known-bad
//! files (in `/base`, in `/patched`, or by digest in `/inputs/lock.json`)
//! would know which run is its self-test and could miss only there. So in
//! every run of every property, the trial's and each self-test's alike,
//! those files are absent from both trees and from the lock's view.

use crate::config::PropertyConfig;
use crate::exit::{Error, Result};
use crate::record::{FixtureLock, TranscriptReceipt};
use std::path::{Component, Path, PathBuf};

/// The repository-relative paths of the properties' known-bad patches that
/// are read from the base revision (not absolute paths outside it).
pub(super) fn known_bad_paths(props: &[PropertyConfig]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = props
        .iter()
        .filter_map(|p| p.known_bad.as_deref())
        .map(Path::new)
        .filter(|p| p.is_relative())
        .filter_map(|p| {
            // `.` components are dropped (git reads `rev:./path` as
            // `rev:path`); a path with `..` names no file plugins see.
            let parts: Option<Vec<_>> = p
                .components()
                .filter(|c| *c != Component::CurDir)
                .map(|c| match c {
                    Component::Normal(n) => Some(n),
                    _ => None,
                })
                .collect();
            parts
                .filter(|v| !v.is_empty())
                .map(|v| v.iter().collect::<PathBuf>())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Removes each of `paths` from `tree` (a private copy: its files are
/// hard links or its own), through a capability on the tree: a parent that
/// is a symlink or not a directory means the path holds nothing to hide,
/// and the last component is removed, never followed.
pub(super) fn hide(tree: &Path, paths: &[PathBuf]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let root = cap_std::fs::Dir::open_ambient_dir(tree, cap_std::ambient_authority())
        .map_err(|e| Error::read(tree, e))?;
    'paths: for rel in paths {
        let full = tree.join(rel);
        let mut parts: Vec<_> = rel.iter().collect();
        let Some(last) = parts.pop() else {
            continue;
        };
        let mut dir = root.try_clone().map_err(|e| Error::read(tree, e))?;
        for part in parts {
            match dir.symlink_metadata(part) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => continue 'paths,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue 'paths,
                Err(e) => return Err(Error::read(&full, e)),
            }
            dir = dir.open_dir(part).map_err(|e| Error::read(&full, e))?;
        }
        match dir.symlink_metadata(last) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => dir.remove_file(last).map_err(|e| Error::write(&full, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::read(&full, e)),
        }
    }
    Ok(())
}

/// The transcript receipt as plugins see it (`/inputs/transcript.json`), in
/// every run: without what describes the response rather than the patch
/// (the response file, declared length, request id, token usage and HTTP
/// exchange), which a self-test could not make agree with its known-bad
/// patch. `known_bad`: the view a self-test on that patch shows, whose body
/// is the known-bad patch, applied at strip level 1 as the self-test
/// applies it.
pub(super) fn transcript_view(
    receipt: &TranscriptReceipt,
    known_bad: Option<&[u8]>,
) -> TranscriptReceipt {
    let mut view = receipt.clone();
    view.response = None;
    view.declared_bytes = None;
    view.request_id = None;
    view.usage = None;
    view.http = None;
    if let Some(patch) = known_bad {
        view.body.sha256 = crate::digest::sha256_hex(patch);
        view.body.bytes = patch.len() as u64;
        view.strip = 1;
    }
    view
}

/// The fixture lock as plugins see it: without entries for `paths`, its
/// count and `dir_hash` made again from what is left.
pub(super) fn lock_view(lock: &FixtureLock, paths: &[PathBuf]) -> Option<FixtureLock> {
    let hidden = |p: &str| paths.iter().any(|h| Path::new(p) == h);
    if !lock.files.iter().any(|e| hidden(&e.path)) {
        return None;
    }
    let mut view = lock.clone();
    view.files.retain(|e| !hidden(&e.path));
    view.count = view.files.len() as u64;
    view.dir_hash = crate::lock::dir_hash(&view.files);
    Some(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(known_bad: Option<&str>) -> PropertyConfig {
        PropertyConfig {
            name: "p".into(),
            plugin: "builtin:p".into(),
            known_bad: known_bad.map(str::to_string),
            config: Default::default(),
            fuel: None,
            memory_mb: None,
            timeout_ms: None,
        }
    }

    #[test]
    fn only_plain_relative_known_bad_paths_are_hidden() {
        let props = [
            prop(Some("oracles/known-bad/a.diff")),
            prop(Some("./oracles/./known-bad/a.diff")),
            prop(Some("/etc/outside.diff")),
            prop(Some("../up.diff")),
            prop(None),
            prop(Some("oracles/known-bad/a.diff")),
        ];
        assert_eq!(
            known_bad_paths(&props),
            vec![PathBuf::from("oracles/known-bad/a.diff")]
        );
    }

    #[test]
    fn hiding_never_follows_a_symlink_out_of_the_tree() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("a.diff"), "keep").unwrap();
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir(tree.path().join("kb")).unwrap();
        std::fs::write(tree.path().join("kb/a.diff"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("a.diff"), tree.path().join("last"))
            .unwrap();
        hide(
            tree.path(),
            &[
                PathBuf::from("kb/a.diff"),
                PathBuf::from("link/a.diff"),
                PathBuf::from("last"),
            ],
        )
        .unwrap();
        assert!(!tree.path().join("kb/a.diff").exists());
        assert!(tree.path().join("link").exists());
        assert!(std::fs::symlink_metadata(tree.path().join("last")).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("a.diff")).unwrap(),
            "keep"
        );
    }
}
