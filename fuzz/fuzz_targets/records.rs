//! Records as the ledger reads them (`ledger::parse_record`, under
//! `read_optional`/`read_required` and so `chain`, `classify`, `verify`),
//! for each kind: transcript receipt, fixture lock (with
//! `lock::check_consistent`, as `chain::read_lock` checks it), property
//! record and verdict; the first byte picks the kind.
//!
//! A record that parses is written back the one way records are written
//! (`ledger::to_bytes`), and that must read back to the same bytes.
#![no_main]

use agent_ledger::exit::Sysexit;
use agent_ledger::ledger::{self, RunId};
use agent_ledger::lock;
use agent_ledger::record::{FixtureLock, PropertyRecord, Record, TranscriptReceipt, VerdictRecord};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const PATH: &str = "fuzz/records/run-001.json";

fn check<T: Record>(bytes: &[u8]) -> Option<T> {
    let path = Path::new(PATH);
    let loaded = match ledger::parse_record::<T>(path, bytes) {
        Ok(loaded) => loaded,
        Err(e) => {
            assert_eq!(e.exit_code(), Sysexit::Data, "{e}");
            assert!(e.to_string().contains(PATH), "{e}");
            return None;
        }
    };
    if let Ok(run) = RunId::parse(loaded.record.run_id()) {
        assert!(ledger::check_run(&loaded, &run).is_ok());
    }
    let written = ledger::to_bytes(&loaded.record);
    let back = ledger::parse_record::<T>(path, &written).expect("a written record does not read");
    assert_eq!(
        ledger::to_bytes(&back.record),
        written,
        "a record does not round-trip"
    );
    Some(loaded.record)
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    match selector % 4 {
        0 => {
            check::<TranscriptReceipt>(bytes);
        }
        1 => {
            if let Some(l) = check::<FixtureLock>(bytes) {
                if let Err(e) = lock::check_consistent(&l, Path::new(PATH)) {
                    assert_eq!(e.exit_code(), Sysexit::Data, "{e}");
                }
            }
        }
        2 => {
            check::<PropertyRecord>(bytes);
        }
        _ => {
            check::<VerdictRecord>(bytes);
        }
    }
});
