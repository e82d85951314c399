//! Path helpers: where a file lies relative to a repository, judged
//! through the filesystem (symlinks and `..` resolved), so a path cannot
//! pass for outside the repository by spelling; and how a file in a tree
//! is opened without following its last component.

use std::path::{Path, PathBuf};

/// `path` relative to `root`, or `None` when it lies outside `root` (or
/// either cannot be resolved). A relative `path` is taken from the current
/// directory. A path that does not exist yet is resolved through its nearest
/// existing ancestor, so a ledger or trace about to be created is placed
/// correctly. `root` itself gives `Some("")`.
pub fn relative_to(root: &Path, path: &Path) -> Option<PathBuf> {
    let root = root.canonicalize().ok()?;
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
    let mut full = existing.canonicalize().ok()?;
    for part in rest.into_iter().rev() {
        full.push(part);
    }
    full.strip_prefix(&root).ok().map(Path::to_path_buf)
}

/// Whether `a` and `b` name the same file: compared resolved when both
/// exist, else as absolute paths.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    }
}

/// True when `path` lies inside `root` (or is `root`).
pub fn is_inside(root: &Path, path: &Path) -> bool {
    relative_to(root, path).is_some()
}

/// Options for opening through a capability so that the last component is
/// never followed (`ELOOP` if it is a symlink) and opening never blocks (a
/// FIFO opens at once, to be refused; check the type after opening).
/// `O_NOFOLLOW` alone is not enough: where `openat2` is unavailable (old
/// kernels, seccomp, gVisor) cap-std resolves the path itself and follows a
/// final symlink unless told `FollowSymlinks::No`.
pub fn leaf_only(options: &mut cap_std::fs::OpenOptions) {
    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
    use cap_std::fs::OpenOptionsExt;
    options
        .follow(FollowSymlinks::No)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_links_and_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, repo.join("link")).unwrap();
        assert_eq!(
            relative_to(&repo, &repo.join("sub/new/file")),
            Some(PathBuf::from("sub/new/file"))
        );
        assert_eq!(relative_to(&repo, &repo), Some(PathBuf::new()));
        // A link inside the repository that points out of it is outside.
        assert_eq!(relative_to(&repo, &repo.join("link/x")), None);
        assert_eq!(relative_to(&repo, &repo.join("sub/../../outside")), None);
        assert!(is_inside(&repo, &repo.join("sub/../sub")));
        assert!(!is_inside(&repo, &outside));
    }
}
