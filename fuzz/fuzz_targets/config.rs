//! `agent-ledger.toml` (`config::Config::parse`, through
//! `config::LoadedConfig::from_bytes` as `config::load` calls it): read from the
//! base revision, the working tree or `--config FILE`.
#![no_main]

use agent_ledger::config::{Config, LoadedConfig};
use agent_ledger::exit::Sysexit;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let source = "fuzz/agent-ledger.toml";
    match LoadedConfig::from_bytes(data.to_vec(), source.to_string()) {
        Ok(loaded) => {
            assert_eq!(loaded.bytes, data);
            let again = Config::parse(data, Path::new(source)).expect("parse is not deterministic");
            assert_eq!(format!("{:?}", loaded.config), format!("{again:?}"));
        }
        Err(e) => {
            assert_eq!(e.exit_code(), Sysexit::Data, "{e}");
            assert!(e.to_string().contains(source), "{e}");
        }
    }
});
