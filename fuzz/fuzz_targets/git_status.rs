//! `git status --porcelain=v2 -z` records (`reconcile::parse_status`): the
//! delta `reconcile` judges a trace against. Git writes them, but the paths
//! in them are the agent's.
#![no_main]

use agent_ledger::reconcile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let first = reconcile::parse_status(data);
    assert_eq!(first, reconcile::parse_status(data));
    if let Ok(paths) = first {
        for p in &paths {
            // Every path is a field of a record: NUL never appears in one.
            assert!(!p.contains(&0), "{p:?}");
            let _ = reconcile::display_path(p);
        }
    }
});
