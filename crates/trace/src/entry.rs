//! What a span records for a path in `before` and `after`: a digest of the
//! path's content that also names its type and mode, so a `chmod +x` or a
//! file turned into a symlink whose target text equals the file's bytes is
//! a different entry.
//!
//! - a regular file, not executable (git mode 100644): the sha256 (hex) of
//!   its bytes, as in schema 1 traces;
//! - an executable file (100755): `100755:` and the sha256 of its bytes;
//! - a symlink (120000): `120000:` and the sha256 of its target text;
//! - absent (or a directory): `null`.

/// The type and mode of a path, as git records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (100644).
    File,
    /// A regular file with an executable bit (100755).
    Executable,
    /// A symlink (120000); its content is its target text.
    Symlink,
}

impl Kind {
    /// The kind git's `mode` names (`100644`, `100755`, `120000`; git
    /// records every other file mode as one of the first two).
    pub fn from_git_mode(mode: &str) -> Option<Kind> {
        match mode {
            "100644" | "100664" => Some(Kind::File),
            "100755" => Some(Kind::Executable),
            "120000" => Some(Kind::Symlink),
            _ => None,
        }
    }

    /// The kind of a file whose permission bits are `mode`: executable when
    /// its owner may execute it, as git decides.
    pub fn of_file_mode(mode: u32) -> Kind {
        if mode & 0o100 != 0 {
            Kind::Executable
        } else {
            Kind::File
        }
    }
}

/// The entry a span records for content whose sha256 (hex) is `sha256`.
pub fn digest(kind: Kind, sha256: &str) -> String {
    match kind {
        Kind::File => sha256.to_string(),
        Kind::Executable => format!("100755:{sha256}"),
        Kind::Symlink => format!("120000:{sha256}"),
    }
}

/// The content sha256 of an entry, without its kind.
pub fn content_of(entry: &str) -> &str {
    entry
        .strip_prefix("100755:")
        .or_else(|| entry.strip_prefix("120000:"))
        .unwrap_or(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_distinct_entries() {
        let h = "ab".repeat(32);
        let all = [Kind::File, Kind::Executable, Kind::Symlink].map(|k| digest(k, &h));
        assert_eq!(all[0], h, "a plain file keeps the schema 1 form");
        assert_ne!(all[0], all[1]);
        assert_ne!(all[1], all[2]);
        assert_ne!(all[0], all[2]);
        for e in &all {
            assert_eq!(content_of(e), h);
        }
        assert_eq!(Kind::from_git_mode("100755"), Some(Kind::Executable));
        assert_eq!(Kind::from_git_mode("160000"), None);
        assert_eq!(Kind::of_file_mode(0o744), Kind::Executable);
        assert_eq!(Kind::of_file_mode(0o655), Kind::File);
    }
}
