//! Archives (`archive::unpack`, what `verify ARCHIVE` runs first): a tar
//! from anyone, unpacked into a scratch directory. Each input is written to
//! a file in a fresh directory (tmpfs when there is one); nothing may be
//! written outside the unpack directory.
#![no_main]

use agent_ledger::archive;
use agent_ledger::exit::Sysexit;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

fuzz_target!(|data: &[u8]| {
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .unwrap();
    let tar = scratch.path().join("in.tar");
    std::fs::write(&tar, data).unwrap();
    let dir = scratch.path().join("ledger");
    std::fs::create_dir(&dir).unwrap();
    match archive::unpack(&tar, &dir) {
        Ok((manifest, problems)) => {
            assert_eq!(manifest.schema, 1);
            assert_eq!(manifest.record, "archive_manifest");
            for p in &problems {
                assert!(!p.is_empty());
            }
        }
        Err(e) => {
            assert_eq!(e.exit_code(), Sysexit::Data, "{e}");
            assert!(e.to_string().contains("in.tar"), "{e}");
        }
    }
    // Nothing escaped: the scratch directory holds the input and the
    // unpack directory, and what is under that.
    let outside: Vec<String> = tree(scratch.path())
        .into_iter()
        .filter(|p| p != "in.tar" && p != "ledger" && !p.starts_with("ledger/"))
        .collect();
    assert!(
        outside.is_empty(),
        "unpack wrote outside its directory: {outside:?}"
    );
});
