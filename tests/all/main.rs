//! One integration-test binary; topic modules below.

mod capture;
mod classify;
mod cli;
mod flake;
mod hermetic_git;
mod hostile_tree;
mod inert_text;
mod live_capture;
mod lock;
mod readme;
mod reconcile;
mod replay;
mod report;
mod resolve;
mod sandbox;
mod sandbox_limits;
mod schemas;
mod scratch;
mod shapes;
mod snapshots;
mod support;
mod test_sandbox;
mod verify;
mod zero_tokens;
