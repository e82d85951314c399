//! What a walk of a working tree learnt, kept for the next walk of the same
//! tree against the same base: for each tracked file that held the base's
//! bytes, the stat data it had then (device, inode, mode, size, mtime and
//! ctime to the nanosecond). A file whose stat data is still exactly that is
//! not read again; anything else is read and hashed.
//!
//! Why this can be trusted:
//! - The entry is sealed (`wasm::seal`: keyed BLAKE3 under a key derived from the per-user
//!   cache key, the key the test command and `trace exec` never see) over
//!   the tree's path and the base commit, so a forged or edited file is
//!   ignored. A replayed old one only says what was true: a file still
//!   holding that stat data was never written since.
//! - Writing a file's bytes sets its ctime to the present, and nobody
//!   without the right to set the clock can set a ctime. Only a file whose
//!   ctime and mtime are at least [`SETTLED`] old is recorded, so a write
//!   after the walk began cannot leave the ctime it had; and a page of a
//!   shared writable mapping that was already dirty (written through it
//!   without a new ctime) has been written back by the kernel long before
//!   that (30 s by default), after which the next write sets the ctime.
//! - An index aligned with the base's listing (entry `i` is the listing's
//!   path `i`; a body of another length is dropped): no path is read from
//!   the file.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// How old a file's ctime and mtime must be before its stat data stands
/// for its bytes.
pub const SETTLED: Duration = Duration::from_secs(60);

const DOMAIN: &str = "agent-ledger worktree stat cache v2";
const RECORD: usize = 56;

/// Stat data that changes whenever a file's bytes, mode or identity do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
}

impl Stat {
    pub fn of_metadata(m: &std::fs::Metadata) -> Stat {
        Stat {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec() as u32),
            ctime: (m.ctime(), m.ctime_nsec() as u32),
        }
    }

    pub fn of_stat(s: &nix::sys::stat::FileStat) -> Stat {
        Stat {
            dev: s.st_dev,
            ino: s.st_ino,
            mode: s.st_mode,
            size: s.st_size as u64,
            mtime: (s.st_mtime, s.st_mtime_nsec as u32),
            ctime: (s.st_ctime, s.st_ctime_nsec as u32),
        }
    }

    /// Whether both times are before `limit` (seconds since the epoch).
    fn settled_before(&self, limit: i64) -> bool {
        self.mtime.0 < limit && self.ctime.0 < limit
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[1, 0, 0, 0]);
        out.extend_from_slice(&self.mode.to_le_bytes());
        for v in [self.dev, self.ino, self.size] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.mtime.0.to_le_bytes());
        out.extend_from_slice(&self.ctime.0.to_le_bytes());
        out.extend_from_slice(&self.mtime.1.to_le_bytes());
        out.extend_from_slice(&self.ctime.1.to_le_bytes());
    }

    fn read(rec: &[u8]) -> Option<Stat> {
        if rec.len() != RECORD || rec[0] != 1 {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(rec[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(rec[i..i + 8].try_into().expect("8 bytes"));
        Some(Stat {
            mode: u32_at(4),
            dev: u64_at(8),
            ino: u64_at(16),
            size: u64_at(24),
            mtime: (u64_at(32) as i64, u32_at(48)),
            ctime: (u64_at(40) as i64, u32_at(52)),
        })
    }
}

/// [`SETTLED`]; in a debug build (the one the test suite runs, never a
/// release) `AGENT_LEDGER_TEST_SETTLED_SECS` may shorten it, so that the
/// suite's attacks meet a cache that is in use rather than files too young
/// to be recorded.
fn settled_window() -> Duration {
    #[cfg(debug_assertions)]
    if let Some(secs) = std::env::var("AGENT_LEDGER_TEST_SETTLED_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Duration::from_secs(secs);
    }
    SETTLED
}

/// The cache of one tree against one base, as loaded, and what this walk
/// confirms. Records are read where they lie in the loaded body, when the
/// walk asks for one: a large tree's cache is never copied out whole.
pub struct StatCache {
    path: PathBuf,
    id: String,
    /// The sealed body: one record per listed entry (empty when there was
    /// no cache, or it did not verify or fit the listing).
    known: Vec<u8>,
    /// Entries whose known stat data this walk found again.
    confirmed: Vec<AtomicBool>,
    /// Stat data this walk confirmed that the cache did not hold.
    fresh: Mutex<Vec<(usize, Stat)>>,
    /// Seconds since the epoch before which a file's times must lie.
    settled: i64,
}

impl StatCache {
    /// The cache in `dir` for the tree at `root` against `base` (a full
    /// commit id); empty when there is none or it does not verify. `None`
    /// without a cache key (nothing could be trusted, so nothing is kept).
    /// [`StatCache::fit`] sizes it to the base's listing before a walk.
    pub fn load(dir: &Path, root: &Path, base: &str) -> Option<StatCache> {
        crate::wasm::cache_key_source()?;
        let id = format!("{}\0{base}", root.display());
        let path = dir
            .join("worktree-stat")
            .join(&crate::digest::sha256_hex(id.as_bytes())[..32]);
        // The tag, then one record per listed entry: no more than a tree of
        // some ten million entries.
        let known = crate::wasm::read_cache_entry(&path, 32 + (RECORD as u64) * 10_000_000)
            .and_then(|bytes| crate::wasm::open_sealed(DOMAIN, &id, bytes))
            .unwrap_or_default();
        let start = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Some(StatCache {
            path,
            id,
            known,
            confirmed: Vec::new(),
            fresh: Mutex::new(Vec::new()),
            settled: start.saturating_sub(settled_window()).as_secs() as i64,
        })
    }

    /// Sizes the cache to a listing of `len` entries; a body of another
    /// size (not this listing's) is dropped.
    pub fn fit(&mut self, len: usize) {
        if self.known.len() != len * RECORD {
            self.known.clear();
        }
        self.confirmed = (0..len).map(|_| AtomicBool::new(false)).collect();
    }

    /// The stat data entry `i` had when it last held the base's bytes.
    pub fn known(&self, i: usize) -> Option<Stat> {
        Stat::read(self.known.get(i * RECORD..(i + 1) * RECORD)?)
    }

    /// Entry `i` holds the base's bytes with stat data `stat` (kept when
    /// settled).
    pub fn confirm(&self, i: usize, stat: Stat) {
        if !stat.settled_before(self.settled) || i >= self.confirmed.len() {
            return;
        }
        if self.known(i) == Some(stat) {
            self.confirmed[i].store(true, Ordering::Relaxed);
        } else {
            self.fresh
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((i, stat));
        }
    }

    /// Writes what this walk confirmed, when it differs from what was
    /// loaded. A cache that cannot be written is only a slower next walk.
    pub fn store(self) {
        let fresh = self.fresh.into_inner().unwrap_or_else(|e| e.into_inner());
        let confirmed: Vec<bool> = self
            .confirmed
            .into_iter()
            .map(AtomicBool::into_inner)
            .collect();
        let known = |i: usize| self.known.get(i * RECORD).is_some_and(|&tag| tag != 0);
        let dropped = (0..confirmed.len()).any(|i| known(i) && !confirmed[i]);
        if fresh.is_empty() && !dropped {
            return;
        }
        let mut body = vec![0; confirmed.len() * RECORD];
        for (i, _) in confirmed.iter().enumerate().filter(|(_, c)| **c) {
            body[i * RECORD..(i + 1) * RECORD]
                .copy_from_slice(&self.known[i * RECORD..(i + 1) * RECORD]);
        }
        for (i, stat) in &fresh {
            let mut rec = Vec::with_capacity(RECORD);
            stat.write(&mut rec);
            body[i * RECORD..(i + 1) * RECORD].copy_from_slice(&rec);
        }
        if fresh.is_empty() && !confirmed.contains(&true) {
            return;
        }
        if let Some(sealed) = crate::wasm::seal(DOMAIN, &self.id, &body) {
            let _ = crate::wasm::write_cache_entry(&self.path, &sealed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written() {
        let s = Stat {
            dev: 66306,
            ino: 1 << 40,
            mode: 0o100755,
            size: 12,
            mtime: (1_700_000_000, 999_999_999),
            ctime: (-5, 1),
        };
        let mut out = Vec::new();
        s.write(&mut out);
        assert_eq!(out.len(), RECORD);
        assert_eq!(Stat::read(&out), Some(s));
        assert_eq!(Stat::read(&[0; RECORD]), None);
        assert!(s.settled_before(1_700_000_001) && !s.settled_before(1_700_000_000));
    }
}
