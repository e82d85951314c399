//! One integration-test binary; topic modules below.

mod capture;
mod classify;
mod cli;
mod flake;
mod lock;
mod readme;
mod reconcile;
mod replay;
mod sandbox;
mod support;
mod verify;
