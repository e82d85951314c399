//! One module per subcommand: its clap arguments and its `execute`.

pub mod capture;
pub mod classify;
pub mod lock;
