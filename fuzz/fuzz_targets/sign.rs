//! Signatures: DSSE envelopes (`sign::open`, what `verify` runs on
//! `signatures/RUN.dsse.json`) under a fixed trusted key, and key files
//! (`sign::load_verifying`, `sign::load_signing`, what `verify --key` and
//! `sign --key` read). The first byte picks which.
#![no_main]

use agent_ledger::exit::Sysexit;
use agent_ledger::sign;
use ed25519_dalek::VerifyingKey;
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One scratch file for key files, reused by every input (libFuzzer exits
/// without dropping it: the directory is left for the OS's tmp cleaning).
fn key_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::tempdir_in(shm)
        } else {
            tempfile::tempdir()
        }
        .unwrap();
        dir.keep().join("key.json")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    match selector % 3 {
        0 => {
            // RFC 8032 section 7.1, TEST 1's public key.
            let key = VerifyingKey::from_bytes(&[
                0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64,
                0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68,
                0xf7, 0x07, 0x51, 0x1a,
            ])
            .unwrap();
            let first = sign::open(bytes, &[key]);
            assert_eq!(first, sign::open(bytes, &[key]));
        }
        n => {
            let path = key_path();
            std::fs::write(path, bytes).unwrap();
            let result = if n == 1 {
                sign::load_verifying(path).map(|k| sign::keyid(&k))
            } else {
                sign::load_signing(path).map(|k| sign::keyid(&k.verifying_key()))
            };
            if let Err(e) = result {
                assert_eq!(e.exit_code(), Sysexit::Data, "{e}");
            }
        }
    }
});
