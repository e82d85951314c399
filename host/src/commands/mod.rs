//! One module per subcommand: its clap arguments and its `execute`.

pub mod batch;
pub mod capture;
pub mod check;
pub mod classify;
pub mod docs;
pub mod flake;
pub mod init;
pub mod lock;
pub mod merge;
pub mod pack;
pub mod plugin;
pub mod reconcile;
pub mod replay;
pub mod report;
pub mod sign;
pub mod swebench;
pub mod trace;
pub mod verify;
