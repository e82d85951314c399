//! Exit codes and the one error type of the library.
//!
//! The exit code is the contract CI reads, so every failure maps to exactly one
//! documented code here. Verdict codes (0, 2, 3, 4) are only ever produced by a
//! judgement; operational failures use the sysexits range (64 and up) so that
//! no broken input can pass for a verdict.

use std::io;
use std::path::{Path, PathBuf};

/// `review` verdict, a complete capture, a matching lock, a clean reconcile.
pub const OK: i32 = 0;
/// `reconcile` found ghosts, phantoms or hash misses.
pub const RECONCILE_MISMATCH: i32 = 1;
/// `incomplete` verdict (transcript), or open spans for `reconcile`.
pub const INCOMPLETE: i32 = 2;
/// `fixture_mismatch` verdict, or an empty/drifted fixture root for `lock`.
pub const FIXTURE_MISMATCH: i32 = 3;
/// `reject` verdict.
pub const REJECT: i32 = 4;
/// `verify` found a run that does not verify.
pub const VERIFY_FAILED: i32 = 5;
/// Command-line usage error (sysexits EX_USAGE).
pub const USAGE: i32 = 64;
/// Input data was malformed: a corrupt record, a broken chain (EX_DATAERR).
pub const DATA: i32 = 65;
/// An input file or record does not exist (EX_NOINPUT).
pub const NO_INPUT: i32 = 66;
/// An internal error: a bug or an unexpected state (EX_SOFTWARE).
pub const SOFTWARE: i32 = 70;
/// An output could not be created, or already exists (EX_CANTCREAT).
pub const CANT_CREATE: i32 = 73;
/// An I/O error while reading or writing (EX_IOERR).
pub const IO: i32 = 74;

/// Every failure the library reports. Messages are lowercase fragments that
/// read after "error:" and name the path, field or id they are about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("cannot read `{}`", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write `{}`", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("`{}` already exists and records are never overwritten; {hint}", path.display())]
    Exists { path: PathBuf, hint: String },
    #[error("`{}`: {reason}", path.display())]
    Data { path: PathBuf, reason: String },
    #[error("{0}")]
    Missing(String),
    /// A request refused by a rule (a flake freeze without evidence, ...).
    #[error("refused: {0}")]
    Refused(String),
    #[error("{0}")]
    Internal(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => USAGE,
            Error::Read { source, .. } if source.kind() == io::ErrorKind::NotFound => NO_INPUT,
            Error::Read { .. } => IO,
            Error::Write { .. } | Error::Exists { .. } => CANT_CREATE,
            Error::Data { .. } | Error::Refused(_) => DATA,
            Error::Missing(_) => NO_INPUT,
            Error::Internal(_) => SOFTWARE,
        }
    }

    pub fn read(path: &Path, source: io::Error) -> Self {
        Error::Read {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn write(path: &Path, source: io::Error) -> Self {
        Error::Write {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn data(path: &Path, reason: impl Into<String>) -> Self {
        Error::Data {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
