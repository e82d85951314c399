//! Git's blob ids computed in process, for the in-process status
//! (`delta`): `blob LEN\0` and the bytes, through SHA-1 or SHA-256.

/// A blob id being computed: `blob LEN\0` and the bytes, through SHA-1 or
/// SHA-256 as the repository's object format says.
pub(super) enum BlobHasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl BlobHasher {
    pub(super) fn new(sha256: bool) -> BlobHasher {
        use sha2::Digest;
        if sha256 {
            BlobHasher::Sha256(sha2::Sha256::new())
        } else {
            BlobHasher::Sha1(sha1::Sha1::new())
        }
    }

    pub(super) fn header(&mut self, len: u64) {
        use std::io::Write;
        let mut buf = [0u8; 32];
        let mut at = &mut buf[..];
        write!(at, "blob {len}\0").expect("a u64 fits");
        let n = 32 - at.len();
        self.update(&buf[..n]);
    }

    pub(super) fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest;
        match self {
            BlobHasher::Sha1(h) => h.update(bytes),
            BlobHasher::Sha256(h) => h.update(bytes),
        }
    }

    /// Hashes everything `file` (of `size` bytes when it was looked at)
    /// holds, into `also` too when given; returns how many bytes that was.
    pub(super) fn read_from(
        &mut self,
        file: std::fs::File,
        size: u64,
        mut also: Option<&mut sha2::Sha256>,
    ) -> std::io::Result<u64> {
        read_all(file, size, |chunk| {
            self.update(chunk);
            if let Some(a) = also.as_deref_mut() {
                sha2::Digest::update(a, chunk);
            }
        })
    }

    pub(super) fn finish(self) -> String {
        use sha2::Digest;
        match self {
            BlobHasher::Sha1(h) => hex::encode(h.finalize()),
            BlobHasher::Sha256(h) => hex::encode(h.finalize()),
        }
    }
}

/// Hands everything `file` (of `size` bytes when it was looked at) holds
/// to `each`, a chunk at a time; returns how many bytes that was. A file
/// smaller than the buffer is read with one call: a read of a regular file
/// that returns less than it was asked for has met the end.
pub(super) fn read_all(
    mut file: std::fs::File,
    size: u64,
    mut each: impl FnMut(&[u8]),
) -> std::io::Result<u64> {
    use std::io::Read;
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 128 * 1024]);
    }
    BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        let mut total = 0u64;
        loop {
            let want = match usize::try_from(size + 1) {
                Ok(w) if total == 0 && w < buf.len() => w,
                _ => buf.len(),
            };
            match file.read(&mut buf[..want]) {
                Ok(0) => return Ok(total),
                Ok(n) => {
                    each(&buf[..n]);
                    total += n as u64;
                    if n < want && want < buf.len() {
                        return Ok(total);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_are_gits() {
        // `git hash-object` of an empty file and of "hello\n".
        let mut h = BlobHasher::new(false);
        h.header(0);
        assert_eq!(h.finish(), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        let mut h = BlobHasher::new(false);
        h.header(6);
        h.update(b"hello\n");
        assert_eq!(h.finish(), "ce013625030ba8dba906f756967f9e9ca394464a");
    }
}
