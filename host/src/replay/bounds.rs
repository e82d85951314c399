//! Path bounds, judged as part of `patch_applies`: a patch may not name a
//! path outside the tree (absolute, `..`, `.git`), may not touch a protected
//! path (the configuration, `.gitattributes`, `.gitmodules`, the
//! flake-freeze file, the ledger, plugins and known-bad patches,
//! `[protect].paths`), and may not leave a symlink that points out of the
//! tree.

use crate::config;
use crate::exit::{Error, Result};
use crate::git::{Checkout, Repo};
use crate::record::Finding;
use crate::sandbox::Change;
use globset::{GlobSet, GlobSetBuilder};
use std::path::Path;

/// Paths no patch may touch.
pub(super) fn protected(
    loaded: &config::Loaded,
    repo: &Repo,
    ledger_root: &Path,
) -> Result<GlobSet> {
    let c = &loaded.config;
    let mut patterns = vec![
        config::FILE_NAME.to_string(),
        // Git reads these from the tree: attributes select filters and
        // drivers, and submodules name repositories to fetch.
        "**/.gitattributes".to_string(),
        ".gitmodules".to_string(),
        c.flakes.file.clone(),
        c.ledger.clone(),
    ];
    patterns.extend(c.protect.paths.iter().cloned());
    if let Some(rel) = crate::paths::relative_to(&repo.root, ledger_root)
        && !rel.as_os_str().is_empty()
    {
        patterns.push(rel.to_string_lossy().replace('\\', "/"));
    }
    for p in &c.properties {
        if !p.plugin.starts_with("builtin:") && !Path::new(&p.plugin).is_absolute() {
            patterns.push(p.plugin.clone());
        }
        patterns.extend(
            p.known_bad
                .iter()
                .filter(|k| !Path::new(k).is_absolute())
                .cloned(),
        );
    }
    glob_set(&patterns, "protected path")
}

fn glob_set(patterns: &[String], what: &str) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim_end_matches('/');
        let glob = |s: &str| {
            globset::GlobBuilder::new(s)
                .literal_separator(true)
                .build()
                .map_err(|e| Error::Usage(format!("invalid {what} pattern `{s}`: {e}")))
        };
        b.add(glob(p)?);
        // A plain directory name protects everything under it.
        b.add(glob(&format!("{p}/**"))?);
    }
    b.build()
        .map_err(|e| Error::Usage(format!("invalid {what} patterns: {e}")))
}

/// Header paths that leave the tree or touch protected paths.
pub(super) fn before_apply(patch: &[u8], protected: &GlobSet) -> Vec<Finding> {
    let mut findings = Vec::new();
    for raw in crate::diff::header_paths(patch) {
        let path = String::from_utf8_lossy(&raw).into_owned();
        if escapes(&raw) {
            findings.push(finding(
                &path,
                "path escapes the repository (absolute, `..` or `.git`)",
            ));
        } else if protected.is_match(&path) {
            findings.push(finding(&path, "patch touches a protected path"));
        }
    }
    findings
}

/// After applying: protected paths as git sees them, and symlinks that point
/// out of the tree.
pub(super) fn after_apply(co: &Checkout, changes: &[Change], protected: &GlobSet) -> Vec<Finding> {
    let mut findings = Vec::new();
    for c in changes {
        for p in std::iter::once(&c.path).chain(c.old_path.iter()) {
            if protected.is_match(p) {
                findings.push(finding(p, "patch touches a protected path"));
            }
        }
        let on_disk = co.tree.join(&c.path);
        if let Ok(target) = std::fs::read_link(&on_disk)
            && symlink_escapes(&c.path, &target)
        {
            findings.push(finding(
                &c.path,
                &format!(
                    "symlink points outside the repository (`{}`)",
                    target.display()
                ),
            ));
        }
    }
    findings.dedup();
    findings
}

fn finding(path: &str, message: &str) -> Finding {
    Finding {
        path: path.to_string(),
        line: None,
        message: message.to_string(),
        frozen: false,
    }
}

/// An absolute path, a `..` component, or a `.git` component.
fn escapes(path: &[u8]) -> bool {
    path.starts_with(b"/")
        || path
            .split(|&b| b == b'/')
            .any(|c| c == b".." || c.eq_ignore_ascii_case(b".git"))
}

/// Whether a symlink at repo-relative `path` with `target` resolves outside
/// the repository (judged lexically: the tree holds nothing else to follow).
fn symlink_escapes(path: &str, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    let mut depth: i64 = path.split('/').count() as i64 - 1;
    for c in target.components() {
        match c {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_escape_is_judged_from_the_link_location() {
        assert!(symlink_escapes("a", Path::new("/etc/passwd")));
        assert!(symlink_escapes("a", Path::new("../x")));
        assert!(!symlink_escapes("d/a", Path::new("../x")));
        assert!(symlink_escapes("d/a", Path::new("../../x")));
        assert!(symlink_escapes("d/a", Path::new("x/../../../y")));
    }

    #[test]
    fn escaping_paths() {
        assert!(escapes(b"/etc/passwd"));
        assert!(escapes(b"a/../../b"));
        assert!(escapes(b".git/hooks/pre-commit"));
        assert!(escapes(b"sub/.GIT/config"));
        assert!(!escapes(b"src/..foo/x"));
    }
}
