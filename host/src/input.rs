//! Reading input files: the one place that opens a file a user, an agent or
//! an archive handed us. Only regular files are read (never a FIFO, a device
//! or a directory: `/dev/zero` cannot exhaust memory), and each kind of input
//! has a documented size cap past which it is refused with an error naming
//! the file (exit 65).

use crate::exit::{Error, Result};
use std::io::Read;
use std::path::Path;

/// `agent-ledger.toml` and the flake-freeze file.
pub const CONFIG_CAP: u64 = 1 << 20;
/// A model response body or a patch (`--body`).
pub const BODY_CAP: u64 = 256 << 20;
/// A JUnit XML report (`--junit`, `--report`).
pub const REPORT_CAP: u64 = 64 << 20;
/// A tool-call trace.
pub const TRACE_CAP: u64 = 256 << 20;
/// A record (transcript receipt, lock, property record, verdict, signature)
/// and an archive's manifest.
pub const RECORD_CAP: u64 = 64 << 20;
/// A plugin component, a known-bad patch, or any object in the ledger's
/// store, and each entry of an archive.
pub const OBJECT_CAP: u64 = 256 << 20;
/// A key file.
pub const KEY_CAP: u64 = 64 << 10;

/// Reads a regular file of at most `cap` bytes.
pub fn read_file(path: &Path, cap: u64) -> Result<Vec<u8>> {
    // Non-blocking, so that opening a FIFO nobody writes returns at once
    // (to be refused below) instead of waiting; it changes nothing for the
    // regular file that is read.
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::read(path, e))?;
    read_opened(file, path, cap)
}

/// [`read_file`] of a file already open (`path` names it in errors).
pub fn read_opened(file: std::fs::File, path: &Path, cap: u64) -> Result<Vec<u8>> {
    let meta = file.metadata().map_err(|e| Error::read(path, e))?;
    if !meta.is_file() {
        return Err(Error::data(
            path,
            "not a regular file (a directory, FIFO or device is never read)",
        ));
    }
    if meta.len() > cap {
        return Err(too_large(path, cap));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::read(path, e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(path, cap));
    }
    Ok(bytes)
}

/// [`read_file`], or `None` when the file does not exist.
pub fn read_optional(path: &Path, cap: u64) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => read_file(path, cap).map(Some),
    }
}

/// Reads `path`, or standard input when it is `-`, up to `cap` bytes.
pub fn read_file_or_stdin(path: &Path, cap: u64) -> Result<Vec<u8>> {
    if path.as_os_str() != "-" {
        return read_file(path, cap);
    }
    let stdin = Path::new("<stdin>");
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::read(stdin, e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(stdin, cap));
    }
    Ok(bytes)
}

fn too_large(path: &Path, cap: u64) -> Error {
    Error::data(
        path,
        format!("larger than the {cap}-byte cap for this input"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_and_oversized_files() {
        let err = read_file(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, [0u8; 11]).unwrap();
        let err = read_file(&big, 10).unwrap_err();
        assert!(err.to_string().contains("10-byte cap"), "{err}");
        assert_eq!(read_file(&big, 11).unwrap().len(), 11);
        assert!(
            read_optional(&dir.path().join("none"), 10)
                .unwrap()
                .is_none()
        );
    }
}
