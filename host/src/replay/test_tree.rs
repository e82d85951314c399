//! The tree a test command runs in, made without copying the base.
//!
//! The trial's tree is a hard-linked copy of the shared base checkout
//! ([`Checkout::link_copy`]) with the patch, the evaluator's files and a
//! `.git` put in place the way they always are (git replaces a file it
//! changes, it never writes into one, so the base keeps its bytes). The
//! command never sees that copy writable: inside its sandbox the tree is an
//! overlay whose lower layer is the copy and whose upper layer is an empty
//! directory of this run's own, so whatever it writes, renames or deletes
//! lands in that upper layer (the kernel copies a file up before it is
//! opened for writing) and neither the base, the trial's own patched tree
//! nor another trial's files ever change. That costs a directory per
//! directory and a link per file instead of a copy of every byte.
//!
//! Where the kernel refuses an overlay in the sandbox's user namespace
//! (Linux before 5.11, some container runtimes), the first run that finds
//! out says so once and every later run in the process makes a full private
//! copy instead, as before; so does a run without a sandbox
//! (`--allow-unsandboxed`), which has no mount namespace to make an overlay
//! in.

use crate::exit::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once an overlay could not be made here: every later run copies.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// The directories of one run's overlay, in its scratch directory.
#[derive(Debug)]
pub(crate) struct Overlay {
    /// The read-only lower layer: the hard-linked tree, or (as root) an
    /// idmapped mount of it (`idmap`).
    pub lower: PathBuf,
    /// What the command writes (its copy-ups, new files, whiteouts).
    pub upper: PathBuf,
    /// The overlay's own work directory (same filesystem as `upper`).
    pub work: PathBuf,
    /// The sandbox's root directory: the bind mounts that must show the
    /// overlay's view of a path inside the tree (fixture roots and their
    /// parents) take it from here, where the overlay is mounted.
    pub root: PathBuf,
}

impl Overlay {
    /// Makes the directories under `scratch`; `None` when a run here
    /// already found that the kernel refuses overlays, or when a path
    /// could not be written into the overlay's options (they are
    /// separated by `,` and `:`, and `\` escapes).
    pub fn new(scratch: &Path, lower: &Path) -> Result<Option<Overlay>> {
        if REFUSED.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let overlay = Overlay {
            lower: lower.to_path_buf(),
            upper: scratch.join("upper"),
            work: scratch.join("work"),
            root: scratch.join("root"),
        };
        let plain = |p: &Path| {
            p.to_str()
                .is_some_and(|s| !s.contains([',', ':', '\\']) && p.is_absolute())
        };
        if ![lower, &overlay.upper, &overlay.work, &overlay.root]
            .iter()
            .all(|p| plain(p))
        {
            return Ok(None);
        }
        for dir in [&overlay.upper, &overlay.work, &overlay.root] {
            std::fs::create_dir(dir).map_err(|e| Error::write(dir, e))?;
        }
        Ok(Some(overlay))
    }

    /// The mount options of an overlay with `lower` read-only beneath
    /// this run's upper layer (`lower` lies in the scratch directory, whose
    /// paths [`Overlay::new`] checked). `userxattr`: the overlay's own
    /// bookkeeping in `user.overlay.*` attributes, as a mount in a user
    /// namespace requires.
    pub fn options(&self) -> String {
        format!(
            "lowerdir={},upperdir={},workdir={},userxattr",
            self.lower.display(),
            self.upper.display(),
            self.work.display()
        )
    }

    /// Where `path` (absolute, on the host) is seen from inside the sandbox
    /// while it is being made: below its root directory, where the overlay
    /// is mounted over the tree.
    pub fn inside(&self, path: &Path) -> PathBuf {
        self.root.join(path.strip_prefix("/").unwrap_or(path))
    }
}

/// Records that an overlay could not be made here: every later run copies.
/// `why`: the kernel's reason, when it is the overlay it refuses (said
/// once); `None` when no sandbox can be made at all.
pub(crate) fn refused(why: Option<&str>) {
    if !REFUSED.swap(true, Ordering::Relaxed)
        && let Some(why) = why
    {
        eprintln!(
            "note: the test command's tree cannot be an overlay here ({}), so every run copies the whole tree",
            crate::output::inert(why)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_cannot_be_written_into_the_options_give_no_overlay() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["a,b", "a:b", "a\\b"] {
            let scratch = dir.path().join(bad);
            std::fs::create_dir(&scratch).unwrap();
            let lower = dir.path().join("lower");
            assert!(Overlay::new(&scratch, &lower).unwrap().is_none(), "{bad}");
            assert!(!scratch.join("upper").exists(), "{bad}: nothing made");
        }
        let lower = dir.path().join("a,b");
        assert!(Overlay::new(dir.path(), &lower).unwrap().is_none());
    }

    #[test]
    fn options_name_the_layers_and_inside_is_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let lower = dir.path().join("lower");
        let o = Overlay::new(dir.path(), &lower).unwrap().unwrap();
        let opts = o.options();
        assert_eq!(
            opts,
            format!(
                "lowerdir={},upperdir={},workdir={},userxattr",
                lower.display(),
                dir.path().join("upper").display(),
                dir.path().join("work").display()
            )
        );
        assert_eq!(
            o.inside(Path::new("/x/y")),
            dir.path().join("root").join("x/y")
        );
        for d in ["upper", "work", "root"] {
            assert!(dir.path().join(d).is_dir(), "{d}");
        }
    }
}
