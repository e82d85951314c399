//! Which paths changed: the working tree against the base, judged in
//! process (`git::worktree_delta`), and the `git status` reading kept for
//! what only git can judge (a checked-out submodule).

use crate::exit::{Error, Result};
use std::collections::BTreeSet;
use std::path::Path;

/// Paths where the working tree differs from `base` (a begun run's) or
/// HEAD; with `ignored`, every git-ignored file too. Judged in process
/// against the base's tree (`git::worktree_delta`), so nothing the agent
/// did to the workspace's index (staged changes, `assume-unchanged` or
/// `skip-worktree` bits) or to the repository's git directory
/// (`info/attributes`, a filter in its config, `info/exclude`) hides a
/// change or runs a program.
pub fn changed_paths(repo: &Path, ignored: bool, base: Option<&str>) -> Result<BTreeSet<Vec<u8>>> {
    // The hermetic git of `git`: no global config, excludes file, fsmonitor
    // or hook of the agent's choosing takes part in judging its tree.
    let git = crate::git::Repo::open(repo)?;
    // Without a begun run, HEAD is the base (trusted in this mode: an agent
    // that can commit can move it). A repository without a commit has
    // nothing to read a tree from: every file is new.
    let base = match base {
        Some(b) => Some(b.to_string()),
        None => git.head().map(str::to_string),
    };
    let cache = crate::resolve::default_cache_dir();
    let (listing, walked) = match base.as_deref() {
        Some(b) => {
            let (l, w) = git.base_of(b, cache.as_deref(), true)?;
            (Some(l), w)
        }
        None => (None, None),
    };
    changed_against(
        &git,
        base.as_deref(),
        listing.as_ref(),
        walked,
        ignored,
        None,
    )
}

/// Paths where `git`'s working tree differs from `listing` (of `base`;
/// `None`: a repository without a commit); `walked`: what the last walk of
/// this tree against `base` learnt (`Repo::base_of`), updated by this one.
/// With `ignored`, git-ignored files are changes too, else `.gitignore`
/// files (never the git directory's `info/exclude`) may excuse new ones;
/// `wanted`: paths whose entries the walk records as it reads them.
pub fn changed_against(
    git: &crate::git::Repo,
    base: Option<&str>,
    listing: Option<&crate::git::Listing>,
    walked: Option<crate::git::StatCache>,
    ignored: bool,
    wanted: Option<&crate::git::Wanted<'_>>,
) -> Result<BTreeSet<Vec<u8>>> {
    let empty;
    let listing = match listing {
        Some(l) => l,
        None => {
            empty = crate::git::Listing::default();
            &empty
        }
    };
    // Our own git directory, made (with the directory that holds it) only
    // when git must look: HEAD at the base (or unborn), no config, no
    // `info/exclude`.
    let scratch = std::cell::OnceCell::new();
    let isolated = || {
        let dir = match scratch.get() {
            Some(d) => d,
            None => {
                let made = crate::replay::tempdir()?;
                scratch.get_or_init(|| made)
            }
        };
        git.isolated(base.unwrap_or("ref: refs/heads/unborn"), dir.path())
    };
    let delta = crate::git::worktree_delta(&git.root, listing, walked.as_ref(), wanted)?;
    if let Some(c) = walked {
        c.store();
    }
    let (mut changed, untracked) = match delta {
        crate::git::Delta::Paths { changed, untracked } => (changed, untracked),
        // A checked-out submodule: git status on a private index from the
        // base knows its commit and whether its tree is dirty.
        crate::git::Delta::Submodule(_) => {
            let base = base.ok_or_else(|| {
                Error::Internal("a submodule needs a commit to be judged from".into())
            })?;
            let isolated = isolated()?;
            read_tree(&isolated, base)?;
            return status(&isolated, ignored);
        }
    };
    if !ignored && !untracked.is_empty() {
        for p in ignored_among(&isolated()?, &untracked)? {
            changed.remove(&p);
        }
    }
    Ok(changed)
}

fn read_tree(isolated: &crate::git::Repo, base: &str) -> Result<()> {
    crate::git::run(
        isolated.command().args(["read-tree", base]),
        &format!("read-tree {base} in `{}`", isolated.root.display()),
    )?;
    Ok(())
}

/// Which of `paths` (new paths; `dir/` for a directory) git ignores, by
/// the `.gitignore` files of the tree alone: one `git check-ignore`.
fn ignored_among(isolated: &crate::git::Repo, paths: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = isolated
        .command()
        .args(["check-ignore", "--no-index", "-z", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| crate::git::not_started("check-ignore", e))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input: Vec<u8> = paths
        .iter()
        .flat_map(|p| {
            let p = p.strip_suffix(b"/").unwrap_or(p);
            p.iter().copied().chain([0])
        })
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| crate::git::not_started("check-ignore", e))?;
    let _ = writer.join();
    // 0: some are ignored, 1: none is.
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(crate::git::failed(
            &format!("check-ignore in `{}`", isolated.root.display()),
            &out,
        ));
    }
    let wanted: std::collections::HashSet<&[u8]> = paths.iter().map(Vec::as_slice).collect();
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            let mut dir = p.to_vec();
            dir.push(b'/');
            [p.to_vec(), dir]
        })
        .filter(|p| wanted.contains(p.as_slice()))
        .collect())
}

/// `git status` of `git`'s working tree as a set of changed paths.
fn status(git: &crate::git::Repo, ignored: bool) -> Result<BTreeSet<Vec<u8>>> {
    let out = crate::git::run(
        git.command()
            .args([
                "-c",
                "core.quotePath=false",
                "status",
                "--porcelain=v2",
                "-z",
                "-uall",
            ])
            .args(ignored.then_some("--ignored")),
        &format!("status in `{}`", git.root.display()),
    )?;
    parse_records(&out.stdout, ignored)
        .map_err(|e| Error::Internal(format!("unexpected git status output: {e}")))
}

/// Parses `git status --porcelain=v2 -z` records; ignored ones (`!`) are
/// skipped.
pub fn parse_status(bytes: &[u8]) -> std::result::Result<BTreeSet<Vec<u8>>, String> {
    parse_records(bytes, false)
}

/// Parses `git status --porcelain=v2 -z` records, ignored ones (`!`)
/// included when `ignored`.
pub fn parse_records(
    bytes: &[u8],
    ignored: bool,
) -> std::result::Result<BTreeSet<Vec<u8>>, String> {
    let mut paths = BTreeSet::new();
    let mut fields = bytes.split(|&b| b == 0);
    while let Some(rec) = fields.next() {
        if rec.is_empty() {
            continue;
        }
        let after_spaces = |n: usize| -> std::result::Result<Vec<u8>, String> {
            rec.splitn(n + 1, |&b| b == b' ')
                .nth(n)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| format!("short record `{}`", String::from_utf8_lossy(rec)))
        };
        match rec[0] {
            b'1' => {
                paths.insert(after_spaces(8)?);
            }
            b'2' => {
                paths.insert(after_spaces(9)?);
                let orig = fields.next().ok_or("rename without its original path")?;
                paths.insert(orig.to_vec());
            }
            b'u' => {
                paths.insert(after_spaces(10)?);
            }
            b'?' => {
                paths.insert(after_spaces(1)?);
            }
            b'!' if ignored => {
                paths.insert(after_spaces(1)?);
            }
            b'!' | b'#' => {}
            other => return Err(format!("unknown record type `{}`", other as char)),
        }
    }
    Ok(paths)
}
