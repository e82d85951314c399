//! SHA-256 helpers. Digests are lowercase hex everywhere on disk.

use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Hashes a file by streaming it, so large fixtures never sit in memory whole.
/// Returns the digest and the number of bytes read.
pub fn sha256_file(path: &Path) -> io::Result<(String, u64)> {
    sha256_reader(File::open(path)?)
}

/// [`sha256_file`] of what `file` reads, through one read buffer per
/// thread: trees are mostly small files, and a fresh large buffer for each
/// is most of their cost.
pub fn sha256_reader(file: impl Read) -> io::Result<(String, u64)> {
    sha256_sized(file, None)
}

/// [`sha256_reader`] of a regular file whose size was `size` when it was
/// looked at: a file smaller than the buffer is read with one call (a read
/// of a regular file that returns less than it asked for has met the end),
/// not two; the bytes hashed are still whatever the reads return.
pub fn sha256_open_file(file: &std::fs::File, size: u64) -> io::Result<(String, u64)> {
    sha256_sized(file, Some(size))
}

fn sha256_sized(mut file: impl Read, size: Option<u64>) -> io::Result<(String, u64)> {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 256 * 1024]);
    }
    BUF.with_borrow_mut(|buf| {
        let mut hasher = Sha256::new();
        let mut total = 0u64;
        loop {
            // One byte more than the size: a short read then is the end.
            let want = match size.map(|s| usize::try_from(s + 1)) {
                Some(Ok(w)) if total == 0 && w < buf.len() => w,
                _ => buf.len(),
            };
            let n = match file.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
            total += n as u64;
            if n < want && want < buf.len() {
                break;
            }
        }
        Ok((hex::encode(hasher.finalize()), total))
    })
}

/// True when `s` looks like a lowercase hex sha256.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
