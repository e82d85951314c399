//! The test tree's `.git` pack of a base commit (`Checkout::pack_snapshot`),
//! kept across processes in the compile cache's directory: making it is
//! most of the test command's fixed cost (`pack-objects` and `index-pack`
//! over every object of the base tree), and it depends on nothing but the
//! commit, whose id names its content.
//!
//! An entry is the pack, its index and a seal (`wasm::seal` under the
//! cache key) over the commit id and both files' sha256 and length. A hit
//! is copied into the scratch directory while it is hashed, no further than
//! its sealed length and only from a regular file (never through a link, a
//! FIFO or a device), and used only if the copy's digests are the sealed
//! ones, so nothing written to the cache between the check and the use can
//! reach a test tree. Anything in doubt is a miss: the pack is made again
//! and the entry rewritten.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const DOMAIN: &str = "agent-ledger test-tree pack v2";
/// A seal is two lines of a digest and a length.
const SEAL_CAP: u64 = 4096;
const FILES: [&str; 2] = ["pack", "idx"];

fn entry_dir(cache: &Path) -> PathBuf {
    cache.join("test-packs")
}

fn entry_path(cache: &Path, commit: &str, ext: &str) -> PathBuf {
    entry_dir(cache).join(format!("{commit}.{ext}"))
}

/// The scratch file for `ext` (`pack-snapshot.pack`, `pack-snapshot.idx`).
fn scratch_path(dir: &Path, ext: &str) -> PathBuf {
    dir.join(format!("pack-snapshot.{ext}"))
}

/// Copies at most `cap` bytes of the regular file `from` (never followed)
/// to `to` (made new): the sha256 and length of what was copied, or an
/// error when `from` is not a regular file or holds more than `cap`.
fn copy_hashing(from: &Path, to: &Path, cap: u64) -> std::io::Result<(String, u64)> {
    use sha2::Digest;
    let (src, _) = crate::wasm::open_cache_entry(from, cap)?;
    let mut src = src.take(cap + 1);
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if total > cap {
            return Err(std::io::Error::other("longer than sealed"));
        }
        hasher.update(&buf[..n]);
        dst.write_all(&buf[..n])?;
    }
    Ok((hex::encode(hasher.finalize()), total))
}

/// A seal's body: each file's digest and length, a line each.
fn seal_body(files: &[(String, u64)]) -> Vec<u8> {
    files
        .iter()
        .map(|(digest, len)| format!("{digest} {len}"))
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes()
}

/// Puts the cached pack of `commit` into `dir` when there is an authentic
/// entry; `false` (and `dir` as it was) otherwise.
pub fn load(cache: &Path, commit: &str, dir: &Path) -> bool {
    let Some(body) = crate::wasm::read_cache_entry(&entry_path(cache, commit, "seal"), SEAL_CAP)
        .and_then(|sealed| crate::wasm::open_sealed(DOMAIN, commit, sealed))
    else {
        return false;
    };
    let sealed: Vec<(String, u64)> = String::from_utf8_lossy(&body)
        .lines()
        .filter_map(|l| {
            let (digest, len) = l.split_once(' ')?;
            Some((digest.to_string(), len.parse().ok()?))
        })
        .collect();
    if sealed.len() != FILES.len() {
        return false;
    }
    let mut copied = Vec::new();
    for (ext, (_, len)) in FILES.iter().zip(&sealed) {
        match copy_hashing(
            &entry_path(cache, commit, ext),
            &scratch_path(dir, ext),
            *len,
        ) {
            Ok(got) => copied.push(got),
            Err(_) => break,
        }
    }
    if copied == sealed {
        return true;
    }
    for ext in FILES {
        let _ = std::fs::remove_file(scratch_path(dir, ext));
    }
    false
}

/// Keeps the pack just made in `dir` for later processes. The cache is an
/// optimisation: failing to write it is not an error.
pub fn store(cache: &Path, commit: &str, dir: &Path) {
    let _ = try_store(cache, commit, dir);
}

fn try_store(cache: &Path, commit: &str, dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let entries = entry_dir(cache);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&entries)?;
    let mut digests = Vec::new();
    for ext in FILES {
        // Copied under a temporary name, then renamed into place.
        let tmp = tempfile::Builder::new()
            .prefix(".pack-")
            .tempfile_in(&entries)?
            .into_temp_path();
        std::fs::remove_file(&tmp)?;
        digests.push(copy_hashing(&scratch_path(dir, ext), &tmp, u64::MAX / 2)?);
        tmp.persist(entry_path(cache, commit, ext))
            .map_err(|e| e.error)?;
    }
    let sealed = crate::wasm::seal(DOMAIN, commit, &seal_body(&digests))
        .ok_or_else(|| std::io::Error::other("no cache key"))?;
    crate::wasm::write_cache_entry(&entry_path(cache, commit, "seal"), &sealed)
}
