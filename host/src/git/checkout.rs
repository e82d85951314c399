//! Trial trees: a checkout of a revision in a temporary directory with its
//! own index and object directory, hard-linked copies of it, strict
//! `git apply`, resetting paths to a revision, and what changed since it.

use super::{Repo, run};
use crate::exit::{Error, Result};
use cap_std::fs::Dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A changed path and its git mode before and after (`None`: absent).
pub type ModeChange = (Vec<u8>, Option<String>, Option<String>);

/// A checked-out tree in a temp dir.
pub struct Checkout {
    pub tree: PathBuf,
    pub(super) index: PathBuf,
    pub(super) objects: PathBuf,
    pub(super) repo: Repo,
}

/// Copies the tree at `from` to a new directory `to`: directories made,
/// files hard-linked, symlinks recreated with their target text (never
/// followed). Both sides are read and written only through cap-std `Dir`s,
/// so no link or `..` in the tree can make the copy touch anything outside.
fn link_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::write(to, e))?;
    let open = |p: &Path| Dir::open_ambient_dir(p, cap_std::ambient_authority());
    let src = open(from).map_err(|e| Error::read(from, e))?;
    let dst = open(to).map_err(|e| Error::write(to, e))?;
    link_dir(&src, &dst, from, to)
}

fn link_dir(src: &Dir, dst: &Dir, from: &Path, to: &Path) -> Result<()> {
    for entry in src.entries().map_err(|e| Error::read(from, e))? {
        let entry = entry.map_err(|e| Error::read(from, e))?;
        let name = entry.file_name();
        let (src_path, dst_path) = (from.join(&name), to.join(&name));
        let ft = entry.file_type().map_err(|e| Error::read(&src_path, e))?;
        if ft.is_dir() {
            dst.create_dir(&name)
                .map_err(|e| Error::write(&dst_path, e))?;
            let sub_src = entry.open_dir().map_err(|e| Error::read(&src_path, e))?;
            let sub_dst = dst
                .open_dir(&name)
                .map_err(|e| Error::write(&dst_path, e))?;
            link_dir(&sub_src, &sub_dst, &src_path, &dst_path)?;
        } else if ft.is_symlink() {
            let target = src
                .read_link_contents(&name)
                .map_err(|e| Error::read(&src_path, e))?;
            dst.symlink_contents(&target, &name)
                .map_err(|e| Error::write(&dst_path, e))?;
        } else {
            src.hard_link(&name, dst, &name)
                .map_err(|e| Error::write(&dst_path, e))?;
        }
    }
    Ok(())
}

/// Whether `git apply` took a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    Clean,
    /// It does not apply; git's message says why.
    Refused(String),
}

/// A path the patch changed, as git reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameStatus {
    pub status: u8,
    pub path: String,
    pub old_path: Option<String>,
}

impl Checkout {
    /// The repository this tree was checked out from.
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// A copy of this checkout whose files share their contents by hard
    /// links, with its own copy of the index and its own object directory.
    /// Several times cheaper than a second checkout, and safe to patch:
    /// `git apply` replaces a file it changes (unlink, then create), it never
    /// writes into one, so the original tree keeps its bytes.
    pub fn link_copy(&self, dir: &Path) -> Result<Checkout> {
        let tree = dir.join("tree");
        let objects = dir.join("objects");
        std::fs::create_dir_all(&objects).map_err(|e| Error::write(&objects, e))?;
        link_tree(&self.tree, &tree)?;
        let index = dir.join("index");
        std::fs::copy(&self.index, &index).map_err(|e| Error::write(&index, e))?;
        Ok(Checkout {
            tree,
            index,
            objects,
            repo: self.repo.clone(),
        })
    }

    pub(super) fn git(&self) -> Command {
        self.repo.trial_git(&self.tree, &self.index, &self.objects)
    }

    /// Applies a patch strictly: no fuzz, no 3-way, no reject files, no
    /// recount, never reversed.
    pub fn apply(&self, patch_file: &Path, strip: u32) -> Result<Applied> {
        let out = self
            .git()
            .args(["apply", "--index", "--whitespace=nowarn"])
            .arg(format!("-p{strip}"))
            .arg(patch_file)
            .output()
            .map_err(|e| super::not_started("apply", e))?;
        Ok(if out.status.success() {
            Applied::Clean
        } else {
            Applied::Refused(String::from_utf8_lossy(&out.stderr).trim().to_string())
        })
    }

    /// Writes one pack holding `commit` and exactly the objects of its tree
    /// (no history, nothing of any other commit) into `dir`.
    pub fn pack_snapshot(&self, commit: &str, dir: &Path) -> Result<()> {
        let mut list = self
            .repo
            .command()
            .args([
                "rev-list",
                "--objects",
                "--no-walk",
                "--end-of-options",
                commit,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| super::not_started("rev-list", e))?;
        let names = list.stdout.take().expect("piped");
        // Written by us, then indexed in place: `pack-objects DIR/pack`
        // would make its temp file in the repository's object directory and
        // rename it across filesystems (a tmpfs `/tmp`), which fails.
        let pack = dir.join("pack-snapshot.pack");
        let file = std::fs::File::create(&pack).map_err(|e| Error::write(&pack, e))?;
        let packed = run(
            self.repo
                .command()
                // Stored, not compressed, and no delta search: the pack
                // lives for one check in scratch space, and on sympy's
                // 2,000-file base this takes its making from 2.0 s to
                // 0.8 s (a 30 MB pack for 8.5 MB), most of the test
                // command's fixed cost.
                .args([
                    "-c",
                    "pack.compression=0",
                    "pack-objects",
                    "-q",
                    "--stdout",
                    "--window=0",
                ])
                .stdin(Stdio::from(names))
                .stdout(Stdio::from(file)),
            "pack-objects",
        );
        let listed = list
            .wait_with_output()
            .map_err(|e| super::not_started("rev-list", e))?;
        if !listed.status.success() {
            return Err(super::failed("rev-list", &listed));
        }
        packed?;
        run(
            self.repo.command().arg("index-pack").arg(&pack),
            "index-pack",
        )
        .map(drop)
    }

    /// Makes `tree/.git` a repository of its own, so that a test command
    /// may run git on its tree (SWE-bench's eval scripts run `git checkout
    /// BASE -- FILES` and `git apply`): HEAD detached at `commit`, which is
    /// shallow (no history), the index as the trial left it (the patches
    /// staged), and a copy of `pack` ([`Checkout::pack_snapshot`] of
    /// `commit`: its commit and exactly the objects of its tree). Nothing
    /// else of the repository is in it: no other commit (the upstream fix a
    /// later commit holds included), ref, configuration, hook or attribute.
    /// It is made after every comparison with the lock, so it is not part
    /// of what the lock or any property judges. The pack is copied when
    /// the suite writes this tree itself; `link` hard-links it instead,
    /// for a tree the suite sees only as the lower layer of an overlay
    /// (its writes go to a layer of their own, never into these files).
    pub fn add_git_dir(&self, commit: &str, pack: &Path, link: bool) -> Result<()> {
        let git = self.tree.join(".git");
        // `create_dir`, not `_all`: nothing in a patched tree may be there
        // already (git refuses patch paths through `.git`), and if anything
        // is, this fails rather than write through it.
        std::fs::create_dir(&git).map_err(|e| Error::write(&git, e))?;
        let packs = git.join("objects").join("pack");
        for d in [
            packs.clone(),
            git.join("objects").join("info"),
            git.join("refs").join("heads"),
            git.join("refs").join("tags"),
        ] {
            std::fs::create_dir_all(&d).map_err(|e| Error::write(&d, e))?;
        }
        let format = if self.repo.empty_tree == super::EMPTY_TREE_SHA256 {
            "\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n[core]\n"
        } else {
            "\trepositoryformatversion = 0\n"
        };
        // Inside the sandbox the files belong to another user and their
        // ctimes changed when they were handed over: only content-relevant
        // stat fields may count.
        let config = format!(
            "[core]\n{format}\tbare = false\n\tcheckStat = minimal\n\ttrustctime = false\n"
        );
        for (name, text) in [
            ("config", config),
            ("HEAD", format!("{commit}\n")),
            ("shallow", format!("{commit}\n")),
        ] {
            let path = git.join(name);
            std::fs::write(&path, text).map_err(|e| Error::write(&path, e))?;
        }
        let index = git.join("index");
        std::fs::copy(&self.index, &index).map_err(|e| Error::write(&index, e))?;
        for entry in std::fs::read_dir(pack).map_err(|e| Error::read(pack, e))? {
            let from = entry.map_err(|e| Error::read(pack, e))?.path();
            let to = packs.join(from.file_name().unwrap_or_default());
            if link {
                std::fs::hard_link(&from, &to).map_err(|e| Error::write(&to, e))?;
            } else {
                std::fs::copy(&from, &to).map_err(|e| Error::write(&to, e))?;
            }
        }
        Ok(())
    }

    /// Resets `paths` (repository-relative, read literally) to `commit`, in
    /// the tree and the index: each is removed (a directory whole), then
    /// those `commit` has are checked out from it. Nothing is followed out
    /// of the tree: removal goes through a cap-std `Dir`, and git refuses
    /// to write beyond a symlink.
    pub fn reset_paths(&self, commit: &str, paths: &[String]) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let literal = |cmd: &mut Command| {
            cmd.env("GIT_LITERAL_PATHSPECS", "1");
        };
        let mut rm = self.git();
        literal(&mut rm);
        rm.args(["rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--"])
            .args(paths);
        run(&mut rm, "rm --cached")?;
        let dir = Dir::open_ambient_dir(&self.tree, cap_std::ambient_authority())
            .map_err(|e| Error::read(&self.tree, e))?;
        for p in paths {
            let full = self.tree.join(p);
            match dir.symlink_metadata(p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::read(&full, e)),
                Ok(m) if m.is_dir() => dir.remove_dir_all(p).map_err(|e| Error::write(&full, e))?,
                Ok(_) => dir.remove_file(p).map_err(|e| Error::write(&full, e))?,
            }
        }
        let mut ls = self.git();
        literal(&mut ls);
        ls.args(["ls-tree", "-r", "-z", "--name-only", commit, "--"])
            .args(paths);
        let out = run(&mut ls, "ls-tree")?;
        let present: Vec<String> = out
            .stdout
            .split(|&b| b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        if !present.is_empty() {
            let mut co = self.git();
            literal(&mut co);
            co.args(["checkout", commit, "--"]).args(&present);
            run(&mut co, "checkout")?;
        }
        Ok(())
    }

    /// Every path that differs between `commit` and the index (a rename as
    /// its two paths), with its git mode at `commit` and in the index
    /// (`None`: absent), sorted by path.
    pub fn modes_since(&self, commit: &str) -> Result<Vec<ModeChange>> {
        let out = run(
            self.git().args([
                "diff-index",
                "--cached",
                "-z",
                "--raw",
                "--no-renames",
                "--no-ext-diff",
                "--end-of-options",
                commit,
            ]),
            "diff-index",
        )?;
        let mut fields = out.stdout.split(|&b| b == 0).filter(|f| !f.is_empty());
        let mut modes = Vec::new();
        let mode = |m: &str| (m != "000000").then(|| m.to_string());
        while let Some(meta) = fields.next() {
            let meta = String::from_utf8_lossy(meta);
            let mut parts = meta.trim_start_matches(':').split(' ');
            let (old, new) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let path = fields.next().ok_or_else(|| {
                Error::Internal("git diff-index --raw: a record without its path".into())
            })?;
            modes.push((path.to_vec(), mode(old), mode(new)));
        }
        modes.sort();
        Ok(modes)
    }

    /// Every path that differs between `commit` and the index, renames
    /// detected, sorted by path.
    pub fn changes_since(&self, commit: &str) -> Result<Vec<NameStatus>> {
        let out = run(
            self.git().args([
                "diff-index",
                "--cached",
                "-z",
                "--name-status",
                "-M",
                "--no-ext-diff",
                commit,
            ]),
            "diff-index",
        )?;
        let mut fields = out.stdout.split(|&b| b == 0).filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        while let Some(status) = fields.next() {
            let code = status.first().copied().unwrap_or(b'?');
            let first = fields.next().map(text).unwrap_or_default();
            if matches!(code, b'R' | b'C') {
                let second = fields.next().map(text).unwrap_or_default();
                changes.push(NameStatus {
                    status: code,
                    path: second,
                    old_path: Some(first),
                });
            } else {
                changes.push(NameStatus {
                    status: code,
                    path: first,
                    old_path: None,
                });
            }
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }
}
