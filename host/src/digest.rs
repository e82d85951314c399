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
pub fn sha256_reader(mut file: impl Read) -> io::Result<(String, u64)> {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 256 * 1024]);
    }
    BUF.with_borrow_mut(|buf| {
        let mut hasher = Sha256::new();
        let mut total = 0u64;
        loop {
            let n = match file.read(buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
            total += n as u64;
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
