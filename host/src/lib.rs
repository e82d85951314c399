//! agent-ledger: judges a captured coding-agent patch without false greens.
//!
//! See ARCHITECTURE.md for how data flows through the binary.

pub mod capture;
pub mod classify;
pub mod cli;
pub mod commands;
pub mod diff;
pub mod digest;
pub mod exit;
pub mod ledger;
pub mod lock;
pub mod output;
pub mod provider;
pub mod record;
