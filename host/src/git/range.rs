//! Commits named by the user and a branch's patch (`capture --git`): one
//! commit id per revision, the one merge base of a range and the diff from
//! it, and whether the checked-out HEAD holds a file (a receipt a branch
//! committed rather than one a command here wrote).

use super::{Repo, failed};
use crate::exit::{Error, Result};
use std::path::Path;

impl Repo {
    /// The full commit id `rev` names; `what` says what it is in the error.
    pub fn commit_of(&self, rev: &str, what: &str) -> Result<String> {
        let out = self
            .command()
            .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
            .arg(format!("{rev}^{{commit}}"))
            .output()
            .map_err(|e| super::not_started("rev-parse", e))?;
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        // One object id, nothing else (`^main` would print `^<id>`).
        let one_id = matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit());
        if !out.status.success() || !one_id {
            return Err(Error::Missing(format!(
                "{what} `{rev}` is not a commit in `{}`",
                self.root.display()
            )));
        }
        Ok(id)
    }

    /// The patch of a branch (`capture --git BASE..HEAD`): the merge base
    /// of `base` and `head` (full commit ids) and the binary diff from it
    /// to `head`, with `a/` and `b/` prefixes, full blob ids and no rename
    /// detection, so `git apply -p1` on the merge base rebuilds `head`'s
    /// tree exactly. No external diff or textconv runs (and attributes come
    /// from nowhere: see [`super::command`]).
    pub fn range_patch(&self, base: &str, head: &str) -> Result<(String, Vec<u8>)> {
        let out = self
            .command()
            .args(["merge-base", "--all", "--end-of-options", base, head])
            .output()
            .map_err(|e| super::not_started("merge-base", e))?;
        if !out.status.success() {
            return Err(Error::Missing(format!(
                "`{base}` and `{head}` have no merge base in `{}` (unrelated histories, or a shallow clone: fetch the whole history, e.g. `fetch-depth: 0` with actions/checkout)",
                self.root.display()
            )));
        }
        let bases: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        // After criss-cross merges there is no one base: which one git
        // names follows commit dates the branch's author sets, and a diff
        // from either can leave out what merging the branch would change
        // (a test deleted on one side).
        let [merge_base] = &bases[..] else {
            return Err(Error::Refused(format!(
                "`{base}` and `{head}` have {} merge bases ({}): a patch from any one of them may not be what merging the branch changes; merge `{base}` into the branch (or rebase it) and capture again",
                bases.len(),
                bases.join(", ")
            )));
        };
        let merge_base = merge_base.clone();
        let out = self
            .command()
            .args([
                "diff",
                "--binary",
                "--full-index",
                "--no-renames",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-relative",
                "--ignore-submodules=none",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                "--end-of-options",
                &merge_base,
                head,
            ])
            .output()
            .map_err(|e| super::not_started("diff", e))?;
        if !out.status.success() {
            return Err(failed("diff", &out));
        }
        Ok((merge_base, out.stdout))
    }

    /// Whether the repository's HEAD commit holds `path` (a file in its
    /// working tree): what a branch committed, rather than what a command
    /// here wrote. `false` for a path outside the working tree.
    pub fn head_holds(&self, path: &Path) -> Result<bool> {
        let (Ok(root), Ok(full)) = (self.root.canonicalize(), std::path::absolute(path)) else {
            return Ok(false);
        };
        let full = match (
            full.parent().and_then(|d| d.canonicalize().ok()),
            full.file_name(),
        ) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => return Ok(false),
        };
        let Ok(rel) = full.strip_prefix(&root) else {
            return Ok(false);
        };
        let out = self
            .command()
            .args(["cat-file", "-e", "--end-of-options"])
            .arg(format!("HEAD:{}", rel.display()))
            .output()
            .map_err(|e| super::not_started("cat-file", e))?;
        Ok(out.status.success())
    }
}
