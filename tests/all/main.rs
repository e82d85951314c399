//! One integration-test binary; topic modules below.

mod capture;
mod classify;
mod cli;
mod flake;
mod fuzz_regressions;
mod hermetic_git;
mod hostile_tree;
mod inert_text;
mod lock;
mod readme;
mod reconcile;
mod replay;
mod resolve;
mod sandbox;
mod sandbox_limits;
mod scratch;
mod snapshots;
mod support;
mod test_sandbox;
mod verify;
