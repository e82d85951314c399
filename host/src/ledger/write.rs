//! Writing records: new files only, through the one atomic writer
//! (`crate::atomic`), and a file written as its bytes arrive (`Growing`).

use super::RETRY_HINT;
use crate::atomic::{Access, Clobber};
use crate::exit::{Error, Result};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` (its directory made as needed) atomically and
/// only if `path` does not exist ([`crate::atomic`], `Clobber::Never`).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    write_new_as(path, bytes, Access::Shared)
}

/// [`write_new`] with the file's [`Access`].
pub fn write_new_as(path: &Path, bytes: &[u8], access: Access) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    crate::atomic::write(path, bytes, access, Clobber::Never(RETRY_HINT))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

/// A file written as its bytes arrive (a streamed response): under
/// `NAME.partial` until [`Growing::finish`] links it to `NAME`. A crash
/// mid-stream leaves the partial bytes under a name that says so, and
/// never a file under its final name that looks whole.
pub struct Growing {
    partial: PathBuf,
    target: PathBuf,
    file: fs::File,
}

impl Growing {
    /// Creates `partial` (which must not exist) for bytes that will be
    /// stored as `target`.
    pub fn create(partial: &Path, target: &Path) -> Result<Growing> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = partial.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
        // Only its owner may read it while it grows: the whole body is
        // masked (its decoded copies of the key too) only once it is whole,
        // and a killed capture leaves the partial file as it was.
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(partial)
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => Error::Exists {
                    path: partial.to_path_buf(),
                    hint: RETRY_HINT.into(),
                },
                _ => Error::write(partial, e),
            })?;
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(|e| Error::write(partial, e))?;
        Ok(Growing {
            partial: partial.to_path_buf(),
            target: target.to_path_buf(),
            file,
        })
    }

    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| Error::write(&self.partial, e))
    }

    /// Replaces every byte written so far with `bytes` (the body masked
    /// once it was whole).
    pub fn rewrite(&mut self, bytes: &[u8]) -> Result<()> {
        use std::io::Seek;
        self.file
            .set_len(0)
            .and_then(|()| self.file.seek(io::SeekFrom::Start(0)).map(drop))
            .and_then(|()| self.file.write_all(bytes))
            .map_err(|e| Error::write(&self.partial, e))
    }

    /// fsyncs the bytes, links them to the target name (never over an
    /// existing file), removes the partial name and fsyncs the directory.
    pub fn finish(self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::write(&self.partial, e))?;
        // Stored files are ordinary readable files, whatever the umask.
        self.file
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .map_err(|e| Error::write(&self.partial, e))?;
        match fs::hard_link(&self.partial, &self.target) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(Error::Exists {
                    path: self.target,
                    hint: RETRY_HINT.into(),
                });
            }
            Err(e) => return Err(Error::write(&self.target, e)),
        }
        fs::remove_file(&self.partial).map_err(|e| Error::write(&self.partial, e))?;
        let dir = self.target.parent().unwrap_or(Path::new("."));
        sync_dir(dir).map_err(|e| Error::write(dir, e))
    }
}
