//! One integration-test binary; topic modules below.

mod batch;
mod capture;
mod classify;
mod cli;
mod flake;
mod hermetic_git;
mod hostile_tree;
mod inert_text;
mod init;
mod live_capture;
mod lock;
mod plugin_host;
mod readme;
mod reconcile;
mod replay;
mod resolve;
mod sandbox;
mod sandbox_limits;
mod scratch;
mod shapes;
mod snapshots;
mod support;
mod test_sandbox;
mod verify;
mod zero_tokens;
