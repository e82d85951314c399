//! JUnit XML reports (`junit::parse`, what `check --junit`, `--test-cmd` and
//! `flake observe` read).
#![no_main]

use agent_ledger::exit::Sysexit;
use agent_ledger::junit;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz/report.xml");
    let first = junit::parse(path, data);
    let again = junit::parse(path, data);
    match (first, again) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "junit::parse is not deterministic");
            for case in &a {
                assert!(case.id.contains("::"), "a test id without `::`: {case:?}");
            }
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string());
            assert_eq!(a.exit_code(), Sysexit::Data, "{a}");
            assert!(a.to_string().contains("fuzz/report.xml"), "{a}");
        }
        (a, b) => panic!("junit::parse is not deterministic: {a:?} then {b:?}"),
    }
});
