//! The one atomic file writer: a temp file in the target's directory with
//! the mode asked for, fsync, a rename (no-clobber by hard link, or
//! replacing), then an fsync of the directory. A reader sees the old file
//! or the new one, never part of either; a crash leaves the same. Records,
//! reports, the flake-freeze file, configuration, run registrations, run
//! keys and cache entries are all written through here.

use crate::exit::{Error, Result};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Who may read the file written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// 0644: records, reports, configuration.
    Shared,
    /// 0600: keys, registrations, cache entries, and copies of inputs
    /// only their owner could read (a file's permissions are never widened
    /// by storing it).
    Private,
    /// The mode of the file being replaced (0644 when there is none): a
    /// file the user owns and may have restricted (the freeze file). A
    /// symlink there lends its target's mode, so a private file read
    /// through a link is not rewritten readable.
    Keep,
}

impl Access {
    /// `Private` when the file at `path` is not readable by its group or
    /// others.
    pub fn of(path: &Path) -> Access {
        use std::os::unix::fs::PermissionsExt;
        match fs::metadata(path) {
            Ok(m) if m.permissions().mode() & 0o044 == 0o044 => Access::Shared,
            _ => Access::Private,
        }
    }

    fn mode(self, path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        match self {
            Access::Shared => 0o644,
            Access::Private => 0o600,
            Access::Keep => fs::metadata(path)
                .ok()
                .filter(|m| m.is_file())
                .map_or(0o644, |m| m.permissions().mode() & 0o777),
        }
    }
}

/// Whether the write may replace a file already at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clobber {
    /// The path must not exist (records, keys: what is written stays);
    /// otherwise [`Error::Exists`] with this hint.
    Never(&'static str),
    /// An existing file (or symlink, which is replaced, not followed) is
    /// replaced whole.
    Replace,
}

/// Writes `bytes` to `path` atomically and durably. The directory must
/// exist.
pub fn write(path: &Path, bytes: &[u8], access: Access, clobber: Clobber) -> Result<()> {
    write_with(path, bytes, access, clobber, true).map_err(|e| match e {
        Failed::Exists(hint) => Error::Exists {
            path: path.to_path_buf(),
            hint: hint.into(),
        },
        Failed::Io(at, e) => Error::write(&at, e),
    })
}

/// [`write`] for a cache entry: 0600, replacing, without the fsyncs (a
/// lost entry is rebuilt; every entry is sealed and checked when read).
pub fn write_cache(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, bytes, Access::Private, Clobber::Replace, false).map_err(|e| match e {
        Failed::Exists(_) => io::Error::from(io::ErrorKind::AlreadyExists),
        Failed::Io(_, e) => e,
    })
}

enum Failed {
    Exists(&'static str),
    Io(PathBuf, io::Error),
}

fn write_with(
    path: &Path,
    bytes: &[u8],
    access: Access,
    clobber: Clobber,
    durable: bool,
) -> std::result::Result<(), Failed> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Clobber::Never(hint) = clobber
        && fs::symlink_metadata(path).is_ok()
    {
        return Err(Failed::Exists(hint));
    }
    let at_path = |e| Failed::Io(path.to_path_buf(), e);
    let mode = access.mode(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(|e| Failed::Io(dir.to_path_buf(), e))?;
    tmp.write_all(bytes).map_err(at_path)?;
    // A temp file starts as 0600.
    tmp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
        .map_err(at_path)?;
    if durable {
        tmp.as_file().sync_all().map_err(at_path)?;
    }
    let persisted = match clobber {
        Clobber::Never(_) => tmp.persist_noclobber(path),
        Clobber::Replace => tmp.persist(path),
    };
    match (persisted, clobber) {
        (Ok(_), _) => {}
        (Err(e), Clobber::Never(hint)) if e.error.kind() == io::ErrorKind::AlreadyExists => {
            return Err(Failed::Exists(hint));
        }
        (Err(e), _) => return Err(at_path(e.error)),
    }
    if durable {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Failed::Io(dir.to_path_buf(), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn never_refuses_an_existing_path_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write(&p, b"one", Access::Shared, Clobber::Never("hint")).unwrap();
        let e = write(&p, b"two", Access::Shared, Clobber::Never("hint")).unwrap_err();
        assert!(
            matches!(e, Error::Exists { ref hint, .. } if hint == "hint"),
            "{e}"
        );
        assert_eq!(fs::read(&p).unwrap(), b"one");
        assert_eq!(mode(&p), 0o644);
        // A dangling symlink is an existing path too.
        let l = dir.path().join("l");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &l).unwrap();
        assert!(write(&l, b"x", Access::Shared, Clobber::Never("h")).is_err());
        assert!(!dir.path().join("nowhere").exists());
        // No temp file is left behind.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn replace_swaps_a_symlink_for_a_file_and_keep_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, "theirs").unwrap();
        let p = dir.path().join("report.html");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        write(&p, b"ours", Access::Shared, Clobber::Replace).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"theirs");
        assert!(fs::symlink_metadata(&p).unwrap().is_file());

        let f = dir.path().join("flakes.toml");
        fs::write(&f, "a").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        write(&f, b"b", Access::Keep, Clobber::Replace).unwrap();
        assert_eq!(mode(&f), 0o640);
        // Through a symlink to a private file: the new file is as private.
        let private = dir.path().join("private.toml");
        fs::write(&private, "secret").unwrap();
        fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("linked.toml");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        write(&link, b"rewritten", Access::Keep, Clobber::Replace).unwrap();
        assert_eq!(mode(&link), 0o600);
        write(
            &dir.path().join("new.toml"),
            b"c",
            Access::Keep,
            Clobber::Replace,
        )
        .unwrap();
        assert_eq!(mode(&dir.path().join("new.toml")), 0o644);
        write_cache(&dir.path().join("entry"), b"d").unwrap();
        assert_eq!(mode(&dir.path().join("entry")), 0o600);
    }
}
