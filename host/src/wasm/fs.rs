//! `wasi:filesystem/types` and `wasi:filesystem/preopens` with nothing of
//! the host in what they report. wasmtime-wasi does the I/O; this layer
//! rewrites its answers so that the same trees read the same on any machine
//! and at any time, and caps the files a plugin holds open:
//!
//! - every timestamp (`stat`, `stat-at`) is the fixed wall clock;
//! - every link count is 1 and a directory's size is 0 (both depend on the
//!   host's filesystem and on how the trees were made: the patched tree is
//!   hard-linked from the base checkout);
//! - `metadata-hash` and `metadata-hash-at` (which wasi-libc turns into
//!   `st_dev` and `st_ino`) are a digest of the object's path inside the
//!   sandbox (`/patched/src/x.py`), its type and its size: the same path is
//!   the same object and a different path a different one, with no inode or
//!   device number and no I/O beyond the `stat` the call needs anyway;
//! - `is-same-object` compares those paths, never the host's inodes;
//! - directory entries come in byte order of their names, not in the order
//!   the host's filesystem keeps them;
//! - at most [`Limits::descriptors`](super::Limits) files and directories
//!   opened with `open-at` are live at once; one more is a trap.

use super::FIXED_WALL_CLOCK_SECS;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode as AsyncErrorCode;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fs;
// Every delegation names wasmtime-wasi's synchronous implementation.
use fs::HostDescriptor as Inner;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult, ReaddirIterator};

/// Per-store state: where each live descriptor points, and how many
/// `open-at` descriptors are live.
pub(super) struct FsState {
    origins: HashMap<u32, Origin>,
    open: usize,
    cap: usize,
    /// Bytes of host work done since the last host call returned (file
    /// reads), charged to fuel by the store's call hook.
    pub(super) host_work: u64,
}

struct Origin {
    /// The path inside the sandbox, normalised: `/patched/src/x.py`.
    path: String,
    /// Made by `open-at` (and so holding a host descriptor), not a preopen.
    opened: bool,
}

impl FsState {
    pub(super) fn new(cap: usize) -> FsState {
        FsState {
            origins: HashMap::new(),
            open: 0,
            cap,
            host_work: 0,
        }
    }
}

/// One more `open-at` than the plugin's descriptor cap allows.
#[derive(Debug)]
pub(super) struct DescriptorCapReached(pub usize);

impl std::fmt::Display for DescriptorCapReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "descriptor cap of {} open files reached", self.0)
    }
}

impl std::error::Error for DescriptorCapReached {}

pub(super) struct DeterministicFs<'a> {
    pub(super) inner: WasiFilesystemCtxView<'a>,
    pub(super) state: &'a mut FsState,
}

pub(super) struct DeterministicFsData;

impl HasData for DeterministicFsData {
    type Data<'a> = DeterministicFs<'a>;
}

/// A directory's entries, read at once and sorted by name. It stands in the
/// resource table where wasmtime-wasi would put its `ReaddirIterator`: only
/// this module reads or drops a `directory-entry-stream`.
struct SortedEntries(std::vec::IntoIter<FsResult<fs::DirectoryEntry>>);

fn borrow<T: 'static>(r: &Resource<T>) -> Resource<T> {
    Resource::new_borrow(r.rep())
}

fn fixed_time() -> Option<fs::Datetime> {
    Some(fs::Datetime {
        seconds: FIXED_WALL_CLOCK_SECS,
        nanoseconds: 0,
    })
}

fn scrub(mut s: fs::DescriptorStat) -> fs::DescriptorStat {
    s.link_count = 1;
    if s.type_ == fs::DescriptorType::Directory {
        s.size = 0;
    }
    s.data_access_timestamp = fixed_time();
    s.data_modification_timestamp = fixed_time();
    s.status_change_timestamp = fixed_time();
    s
}

/// `rel` resolved lexically against `base` (a sandbox path): `.` and empty
/// segments dropped, `..` never above the preopen (wasmtime-wasi refuses
/// such paths anyway).
fn join(base: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.len() > 1 {
                    parts.pop();
                }
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

fn hash(path: &str, stat: &fs::DescriptorStat) -> fs::MetadataHashValue {
    let digest = Sha256::new()
        .chain_update(format!("{:?}\0{}\0", stat.type_, stat.size))
        .chain_update(path.as_bytes())
        .finalize();
    let word = |i: usize| u64::from_le_bytes(digest[i..i + 8].try_into().expect("8 bytes"));
    fs::MetadataHashValue {
        lower: word(0),
        upper: word(8),
    }
}

impl DeterministicFs<'_> {
    fn path_of(&self, fd: &Resource<fs::Descriptor>) -> FsResult<&str> {
        self.state
            .origins
            .get(&fd.rep())
            .map(|o| o.path.as_str())
            .ok_or_else(|| FsError::from(AsyncErrorCode::BadDescriptor))
    }
}

impl preopens::Host for DeterministicFs<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<fs::Descriptor>, String)>> {
        let dirs = preopens::Host::get_directories(&mut self.inner)?;
        for (fd, name) in &dirs {
            self.state.origins.insert(
                fd.rep(),
                Origin {
                    path: join("/", name),
                    opened: false,
                },
            );
        }
        Ok(dirs)
    }
}

impl fs::Host for DeterministicFs<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<fs::ErrorCode> {
        fs::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<streams::Error>,
    ) -> wasmtime::Result<Option<fs::ErrorCode>> {
        fs::Host::filesystem_error_code(&mut self.inner, err)
    }
}

impl fs::HostDescriptor for DeterministicFs<'_> {
    fn stat(&mut self, fd: Resource<fs::Descriptor>) -> FsResult<fs::DescriptorStat> {
        Ok(scrub(Inner::stat(&mut self.inner, fd)?))
    }

    fn stat_at(
        &mut self,
        fd: Resource<fs::Descriptor>,
        flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::DescriptorStat> {
        Ok(scrub(Inner::stat_at(&mut self.inner, fd, flags, path)?))
    }

    fn metadata_hash(&mut self, fd: Resource<fs::Descriptor>) -> FsResult<fs::MetadataHashValue> {
        let stat = self.stat(borrow(&fd))?;
        Ok(hash(self.path_of(&fd)?, &stat))
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<fs::Descriptor>,
        flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::MetadataHashValue> {
        let stat = self.stat_at(borrow(&fd), flags, path.clone())?;
        Ok(hash(&join(self.path_of(&fd)?, &path), &stat))
    }

    fn is_same_object(
        &mut self,
        a: Resource<fs::Descriptor>,
        b: Resource<fs::Descriptor>,
    ) -> wasmtime::Result<bool> {
        Ok(match (self.path_of(&a), self.path_of(&b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        })
    }

    fn open_at(
        &mut self,
        fd: Resource<fs::Descriptor>,
        flags: fs::PathFlags,
        path: String,
        oflags: fs::OpenFlags,
        dflags: fs::DescriptorFlags,
    ) -> FsResult<Resource<fs::Descriptor>> {
        if self.state.open >= self.state.cap {
            return Err(FsError::trap(DescriptorCapReached(self.state.cap)));
        }
        let origin = join(self.path_of(&fd)?, &path);
        let opened = Inner::open_at(&mut self.inner, fd, flags, path, oflags, dflags)?;
        self.state.open += 1;
        self.state.origins.insert(
            opened.rep(),
            Origin {
                path: origin,
                opened: true,
            },
        );
        Ok(opened)
    }

    fn drop(&mut self, fd: Resource<fs::Descriptor>) -> wasmtime::Result<()> {
        if let Some(o) = self.state.origins.remove(&fd.rep())
            && o.opened
        {
            self.state.open -= 1;
        }
        fs::HostDescriptor::drop(&mut self.inner, fd)
    }

    fn read_directory(
        &mut self,
        fd: Resource<fs::Descriptor>,
    ) -> FsResult<Resource<fs::DirectoryEntryStream>> {
        let stream = Inner::read_directory(&mut self.inner, fd)?;
        let read: ReaddirIterator = self.inner.table.delete(stream)?;
        let (mut entries, errors): (Vec<_>, Vec<_>) = read
            .into_iter()
            .map(|e| e.map(fs::DirectoryEntry::from))
            .partition(Result::is_ok);
        entries.sort_by(|a, b| match (a, b) {
            (Ok(a), Ok(b)) => a.name.cmp(&b.name),
            _ => std::cmp::Ordering::Equal,
        });
        // An unreadable name (not UTF-8) is reported after every good one.
        entries.extend(errors);
        // The whole directory is read and sorted in this one call: paid for
        // per entry, as a read of that many names.
        self.state.host_work = self
            .state
            .host_work
            .saturating_add((entries.len() as u64).saturating_mul(super::FUEL_PER_DIR_ENTRY));
        let sorted = self.inner.table.push(SortedEntries(entries.into_iter()))?;
        Ok(Resource::new_own(sorted.rep()))
    }

    fn advise(
        &mut self,
        fd: Resource<fs::Descriptor>,
        offset: fs::Filesize,
        len: fs::Filesize,
        advice: fs::Advice,
    ) -> FsResult<()> {
        // Advice is a hint the host may ignore; following it (readahead of
        // a whole file) would be host work no fuel pays for.
        let _ = (offset, len, advice);
        Inner::get_flags(&mut self.inner, fd).map(drop)
    }

    fn sync_data(&mut self, fd: Resource<fs::Descriptor>) -> FsResult<()> {
        // Every preopen is read-only: there is nothing of the plugin's to
        // sync, and an fsync of the host's files is disk work on a shared
        // machine that no fuel pays for (a loaded disk would decide where
        // the plugin stops).
        Inner::get_flags(&mut self.inner, fd).map(drop)
    }

    fn get_flags(&mut self, fd: Resource<fs::Descriptor>) -> FsResult<fs::DescriptorFlags> {
        Inner::get_flags(&mut self.inner, fd)
    }

    fn get_type(&mut self, fd: Resource<fs::Descriptor>) -> FsResult<fs::DescriptorType> {
        Inner::get_type(&mut self.inner, fd)
    }

    fn set_size(&mut self, fd: Resource<fs::Descriptor>, size: fs::Filesize) -> FsResult<()> {
        Inner::set_size(&mut self.inner, fd, size)
    }

    fn set_times(
        &mut self,
        fd: Resource<fs::Descriptor>,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        Inner::set_times(&mut self.inner, fd, atim, mtim)
    }

    fn read(
        &mut self,
        fd: Resource<fs::Descriptor>,
        len: fs::Filesize,
        offset: fs::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        // A short read is allowed (`end-of-stream` false): one call does
        // at most 64 KiB of host work, paid for in fuel.
        let len = len.min(super::HOST_CALL_BYTES);
        let (bytes, end) = Inner::read(&mut self.inner, fd, len, offset)?;
        self.state.host_work = self.state.host_work.saturating_add(bytes.len() as u64);
        Ok((bytes, end))
    }

    fn write(
        &mut self,
        fd: Resource<fs::Descriptor>,
        buf: Vec<u8>,
        offset: fs::Filesize,
    ) -> FsResult<fs::Filesize> {
        Inner::write(&mut self.inner, fd, buf, offset)
    }

    fn sync(&mut self, fd: Resource<fs::Descriptor>) -> FsResult<()> {
        // As `sync_data`.
        Inner::get_flags(&mut self.inner, fd).map(drop)
    }

    fn create_directory_at(&mut self, fd: Resource<fs::Descriptor>, path: String) -> FsResult<()> {
        Inner::create_directory_at(&mut self.inner, fd, path)
    }

    fn set_times_at(
        &mut self,
        fd: Resource<fs::Descriptor>,
        flags: fs::PathFlags,
        path: String,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        Inner::set_times_at(&mut self.inner, fd, flags, path, atim, mtim)
    }

    fn link_at(
        &mut self,
        fd: Resource<fs::Descriptor>,
        old_flags: fs::PathFlags,
        old_path: String,
        new_fd: Resource<fs::Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        Inner::link_at(&mut self.inner, fd, old_flags, old_path, new_fd, new_path)
    }

    fn readlink_at(&mut self, fd: Resource<fs::Descriptor>, path: String) -> FsResult<String> {
        Inner::readlink_at(&mut self.inner, fd, path)
    }

    fn remove_directory_at(&mut self, fd: Resource<fs::Descriptor>, path: String) -> FsResult<()> {
        Inner::remove_directory_at(&mut self.inner, fd, path)
    }

    fn rename_at(
        &mut self,
        fd: Resource<fs::Descriptor>,
        old_path: String,
        new_fd: Resource<fs::Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        Inner::rename_at(&mut self.inner, fd, old_path, new_fd, new_path)
    }

    fn symlink_at(
        &mut self,
        fd: Resource<fs::Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        Inner::symlink_at(&mut self.inner, fd, src_path, dest_path)
    }

    fn unlink_file_at(&mut self, fd: Resource<fs::Descriptor>, path: String) -> FsResult<()> {
        Inner::unlink_file_at(&mut self.inner, fd, path)
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<fs::Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::InputStream>> {
        Inner::read_via_stream(&mut self.inner, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<fs::Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::OutputStream>> {
        Inner::write_via_stream(&mut self.inner, fd, offset)
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<fs::Descriptor>,
    ) -> FsResult<Resource<streams::OutputStream>> {
        Inner::append_via_stream(&mut self.inner, fd)
    }
}

impl fs::HostDirectoryEntryStream for DeterministicFs<'_> {
    fn read_directory_entry(
        &mut self,
        stream: Resource<fs::DirectoryEntryStream>,
    ) -> FsResult<Option<fs::DirectoryEntry>> {
        let sorted = Resource::<SortedEntries>::new_borrow(stream.rep());
        self.inner.table.get_mut(&sorted)?.0.next().transpose()
    }

    fn drop(&mut self, stream: Resource<fs::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.inner
            .table
            .delete(Resource::<SortedEntries>::new_own(stream.rep()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wasm::{Limits, Mounts, Sandbox};
    use fs::HostDescriptor;

    #[test]
    fn metadata_is_a_function_of_the_tree_not_of_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("x"), "hi").unwrap();
        // A hard link: the host says two links and one inode for both.
        std::fs::hard_link(root.join("x"), root.join("y")).unwrap();
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        let mounts = Mounts {
            patched: root,
            base: root,
            inputs: root,
        };
        let sandbox = Sandbox::new(None).unwrap();
        let mut store = sandbox
            .store(&Limits::default(), Some(&mounts), [0; 32], None)
            .unwrap();
        let mut fs = super::super::linker::deterministic_fs(store.data_mut());
        let dirs = preopens::Host::get_directories(&mut fs).unwrap();
        let fd = |name: &str| borrow(&dirs.iter().find(|(_, n)| n == name).unwrap().0);
        let none = fs::PathFlags::empty();

        let x = fs.stat_at(fd("/patched"), none, "x".into()).unwrap();
        assert_eq!(x.link_count, 1);
        assert_eq!(x.size, 2);
        for t in [
            x.data_access_timestamp,
            x.data_modification_timestamp,
            x.status_change_timestamp,
        ] {
            assert_eq!(t.map(|t| t.seconds), Some(FIXED_WALL_CLOCK_SECS));
        }
        let d = fs.stat_at(fd("/patched"), none, "d".into()).unwrap();
        assert_eq!((d.size, d.link_count), (0, 1));

        let mut hash_at = |root: &str, path: &str| {
            let h = fs.metadata_hash_at(fd(root), none, path.into()).unwrap();
            (h.lower, h.upper)
        };
        let x_hash = hash_at("/patched", "x");
        assert_eq!(x_hash, hash_at("/patched", "./d/../x"));
        assert_ne!(x_hash, hash_at("/patched", "y"), "a path is an object");
        assert_ne!(x_hash, hash_at("/base", "x"), "the trees are distinct");
        let expected = hash("/patched/x", &x);
        assert_eq!(x_hash, (expected.lower, expected.upper));

        // Same path, same object; the host's shared inode is not consulted.
        let open = |fs: &mut DeterministicFs<'_>, root: &str, path: &str| {
            fs.open_at(
                fd(root),
                none,
                path.into(),
                fs::OpenFlags::empty(),
                fs::DescriptorFlags::READ,
            )
            .unwrap()
        };
        let (a, b, c) = (
            open(&mut fs, "/patched", "x"),
            open(&mut fs, "/patched", "d/../x"),
            open(&mut fs, "/patched", "y"),
        );
        assert!(fs.is_same_object(borrow(&a), borrow(&b)).unwrap());
        assert!(!fs.is_same_object(borrow(&a), borrow(&c)).unwrap());
        let h = fs.metadata_hash(borrow(&a)).unwrap();
        assert_eq!((h.lower, h.upper), x_hash);
    }
}
