//! One module per subcommand: its clap arguments and its `execute`.

pub mod capture;
pub mod check;
pub mod classify;
pub mod lock;
pub mod replay;
