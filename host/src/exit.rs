//! Exit codes and the one error type of the library.
//!
//! The exit code is the contract CI reads, so every outcome maps to exactly
//! one documented code here. Verdict codes (0, 2, 3, 4) are only ever produced
//! by a judgement; operational failures use the sysexits range (64 and up) so
//! that no broken input can pass for a verdict.

use std::io;
use std::path::{Path, PathBuf};

/// What a command tells its caller through the process exit status.
///
/// Several outcomes share a number (CI reads numbers), but each has its own
/// name here so that no command borrows another's meaning by accident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: `review`, a complete capture, a matching lock, a reconciled trace,
    /// a verified ledger, a command that did what it was asked.
    Ok,
    /// 1: `reconcile` found a ghost, phantom, hash miss or break; `trace exec` saw
    /// its command change a path it did not declare.
    Mismatch,
    /// 2: the `incomplete` verdict (the transcript is missing or not whole).
    Incomplete,
    /// 2: `reconcile`: a span is still open (the agent run did not finish).
    OpenSpans,
    /// 3: the `fixture_mismatch` verdict, or an empty or drifted lock.
    FixtureMismatch,
    /// 3: `reconcile --require-mutation`: the tree is clean and the trace
    /// has no write or delete.
    NoMutation,
    /// 4: the `reject` verdict.
    Reject,
    /// 5: `verify`: a run (or the archive) does not verify.
    VerifyFailed,
    /// 5: `reconcile`, `trace end`: the trace was begun with a key and a
    /// line of it does not verify (forged, edited, removed, reordered, or
    /// from another run).
    TraceForged,
    /// 6: `trace exec`: the traced command itself failed (a non-zero exit or
    /// a signal). Never the command's own status: a child exiting 4 must not
    /// read as `reject`.
    CommandFailed,
    /// 64 and up: an operational failure, never a judgement.
    Sysexit(Sysexit),
}

/// The sysexits codes this tool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sysexit {
    /// 64: command-line usage error (clap's own usage exit 2 is overridden).
    Usage,
    /// 65: input data was malformed: a corrupt record, a broken chain, a
    /// refusal by rule.
    Data,
    /// 66: an input file, record or revision does not exist.
    NoInput,
    /// 70: an internal error: a bug or an unexpected state.
    Software,
    /// 73: an output could not be created, or already exists.
    CantCreate,
    /// 74: an I/O error while reading or writing.
    Io,
}

impl ExitCode {
    /// The process exit status.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::Mismatch => 1,
            ExitCode::Incomplete | ExitCode::OpenSpans => 2,
            ExitCode::FixtureMismatch | ExitCode::NoMutation => 3,
            ExitCode::Reject => 4,
            ExitCode::VerifyFailed | ExitCode::TraceForged => 5,
            ExitCode::CommandFailed => 6,
            ExitCode::Sysexit(s) => s.code(),
        }
    }

    /// The outcome a process status names, read as a judgement reads it
    /// (`check`, `batch`): where two outcomes share a number, the verdict's
    /// (2 `Incomplete`, 3 `FixtureMismatch`, 5 `VerifyFailed`, 1
    /// `Mismatch`). `None` for a number this tool never exits with.
    /// `from_code(c.code())` is `Some` of an outcome with the same number
    /// for every outcome `c`.
    pub fn from_code(code: i32) -> Option<ExitCode> {
        Some(match code {
            0 => ExitCode::Ok,
            1 => ExitCode::Mismatch,
            2 => ExitCode::Incomplete,
            3 => ExitCode::FixtureMismatch,
            4 => ExitCode::Reject,
            5 => ExitCode::VerifyFailed,
            6 => ExitCode::CommandFailed,
            n => ExitCode::Sysexit(Sysexit::from_code(n)?),
        })
    }
}

impl Sysexit {
    pub fn code(self) -> i32 {
        match self {
            Sysexit::Usage => 64,
            Sysexit::Data => 65,
            Sysexit::NoInput => 66,
            Sysexit::Software => 70,
            Sysexit::CantCreate => 73,
            Sysexit::Io => 74,
        }
    }

    /// Every sysexits code this tool uses.
    pub const ALL: [Sysexit; 6] = [
        Sysexit::Usage,
        Sysexit::Data,
        Sysexit::NoInput,
        Sysexit::Software,
        Sysexit::CantCreate,
        Sysexit::Io,
    ];

    /// The code whose number is `code`, if this tool uses it.
    pub fn from_code(code: i32) -> Option<Sysexit> {
        Sysexit::ALL.into_iter().find(|s| s.code() == code)
    }
}

impl From<Sysexit> for ExitCode {
    fn from(s: Sysexit) -> Self {
        ExitCode::Sysexit(s)
    }
}

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
    pub fn exit_code(&self) -> Sysexit {
        match self {
            Error::Usage(_) => Sysexit::Usage,
            Error::Read { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                Sysexit::NoInput
            }
            Error::Read { .. } => Sysexit::Io,
            Error::Write { .. } | Error::Exists { .. } => Sysexit::CantCreate,
            Error::Data { .. } | Error::Refused(_) => Sysexit::Data,
            Error::Missing(_) => Sysexit::NoInput,
            Error::Internal(_) => Sysexit::Software,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every outcome below the sysexits range.
    const JUDGEMENTS: [ExitCode; 10] = [
        ExitCode::Ok,
        ExitCode::Mismatch,
        ExitCode::Incomplete,
        ExitCode::OpenSpans,
        ExitCode::FixtureMismatch,
        ExitCode::NoMutation,
        ExitCode::Reject,
        ExitCode::VerifyFailed,
        ExitCode::TraceForged,
        ExitCode::CommandFailed,
    ];

    #[test]
    fn every_exit_code_round_trips_through_its_number() {
        let all = JUDGEMENTS
            .into_iter()
            .chain(Sysexit::ALL.map(ExitCode::Sysexit));
        for c in all {
            let back = ExitCode::from_code(c.code()).expect("a number this tool exits with");
            assert_eq!(back.code(), c.code(), "{c:?}");
        }
        // The verdicts come back as themselves.
        for c in [
            ExitCode::Ok,
            ExitCode::Incomplete,
            ExitCode::FixtureMismatch,
            ExitCode::Reject,
        ] {
            assert_eq!(ExitCode::from_code(c.code()), Some(c));
        }
        for n in [-1, 7, 63, 67, 71, 75, 255] {
            assert_eq!(ExitCode::from_code(n), None, "{n}");
        }
    }

    #[test]
    fn no_operational_code_collides_with_a_judgement() {
        let judgements = JUDGEMENTS;
        for s in Sysexit::ALL {
            assert!(s.code() >= 64);
            assert!(judgements.iter().all(|j| j.code() < 64));
        }
    }

    #[test]
    fn a_failed_traced_command_is_not_a_verdict_code() {
        let code = ExitCode::CommandFailed.code();
        for verdict in [0, 2, 3, 4] {
            assert_ne!(code, verdict);
        }
    }

    #[test]
    fn a_missing_file_is_no_input_and_other_read_errors_are_io() {
        let missing = Error::read(Path::new("x"), io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(missing.exit_code(), Sysexit::NoInput);
        let denied = Error::read(
            Path::new("x"),
            io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert_eq!(denied.exit_code(), Sysexit::Io);
    }
}
