//! agent-ledger: judges a captured coding-agent patch without false greens.
//!
//! See ARCHITECTURE.md for how data flows through the binary.

pub mod archive;
pub mod capture;
pub mod chain;
pub mod check;
pub mod classify;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod diff;
pub mod digest;
pub mod exit;
pub mod freeze;
pub mod git;
pub mod input;
pub mod junit;
pub mod ledger;
pub mod lock;
pub mod output;
pub mod paths;
pub mod provider;
pub mod reconcile;
pub mod record;
pub mod replay;
pub mod resolve;
pub mod sandbox;
pub mod sign;
pub mod trace;
pub mod verify;

/// The property components built from `plugins/` by `build.rs`.
pub mod plugins {
    include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
}
