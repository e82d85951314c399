//! agent-ledger: judges a captured coding-agent patch without false greens.
//!
//! See ARCHITECTURE.md for how data flows through the binary.

pub mod archive;
pub mod atomic;
pub mod batch;
pub mod capture;
pub mod chain;
pub mod check;
pub mod classify;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod completion_ids;
pub mod config;
pub mod diff;
pub mod digest;
pub mod envelope;
pub mod evaluation;
pub mod exit;
pub mod freeze;
pub mod git;
pub mod init;
pub mod input;
pub(crate) mod jail;
pub mod junit;
pub mod ledger;
pub mod lock;
pub mod logparse;
pub mod merge;
pub mod netns;
pub mod otlp;
pub mod output;
pub mod paths;
pub mod profile;
pub mod provider;
pub mod reconcile;
pub mod record;
pub mod replay;
pub mod report;
pub mod resolve;
pub mod runners;
pub mod runs;
pub mod scaffold;
pub mod schema;
pub mod scratch;
pub mod sign;
pub mod swebench;
pub mod trace;
pub mod verify;
pub mod wasm;

/// The built-in properties: components built from `plugins/` by `build.rs`
/// (each crate declares itself in `[package.metadata.agent-ledger]`) and
/// embedded in the binary.
pub mod plugins {
    /// A trial input a built-in needs: without it, the built-in is left out
    /// of the default property list.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Need {
        /// The agent's tool-call trace (`capture --trace`).
        Trace,
        /// A JUnit test report (`check --junit` or `--test-cmd`).
        Junit,
    }

    /// One built-in property.
    #[derive(Debug)]
    pub struct Builtin {
        /// Its name, as in `builtin:NAME`.
        pub name: &'static str,
        /// The component's bytes.
        pub component: &'static [u8],
        /// What the trial must have for it to run by default.
        pub needs: &'static [Need],
    }

    include!(concat!(env!("OUT_DIR"), "/plugins.rs"));

    /// The built-in named `name`.
    pub fn builtin(name: &str) -> Option<&'static Builtin> {
        BUILTINS.iter().find(|b| b.name == name)
    }
}
