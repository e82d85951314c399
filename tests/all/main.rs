//! One integration-test binary; topic modules below.

mod capture;
mod classify;
mod cli;
mod flake;
mod hostile_tree;
mod lock;
mod readme;
mod reconcile;
mod replay;
mod resolve;
mod sandbox;
mod snapshots;
mod support;
mod verify;
