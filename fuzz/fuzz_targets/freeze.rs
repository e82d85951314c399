//! The flake-freeze file (`freeze::FreezeFile::parse`, what `check` reads
//! from the base revision and `flake` reads and rewrites).
#![no_main]

use agent_ledger::exit::Sysexit;
use agent_ledger::freeze::{self, FreezeFile};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz/flakes.toml");
    let file = match FreezeFile::parse(data, path) {
        Ok(file) => file,
        Err(e) => {
            assert_eq!(e.exit_code(), Sysexit::Data, "{e}");
            assert!(e.to_string().contains("fuzz/flakes.toml"), "{e}");
            return;
        }
    };
    // Every expiry parsed, so activity is decidable at any instant.
    let now = freeze::parse_time("2026-01-01T00:00:00Z").unwrap();
    let active = file.active_tests(now);
    assert!(active.windows(2).all(|w| w[0] < w[1]));
    // `flake` rewrites the file as it read it (`FreezeFile::save` encodes
    // it this way, then renames it into place): what it writes reads back
    // as the same rows.
    let text = toml::to_string_pretty(&file).expect("a parsed freeze file does not encode");
    let back =
        FreezeFile::parse(text.as_bytes(), path).expect("a saved freeze file does not parse");
    assert_eq!(back.schema, file.schema);
    assert_eq!(back.rows, file.rows);
});
