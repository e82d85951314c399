//! The tool-call trace of an agent run and the rules that judge it against
//! a delta: one crate, so the host's `reconcile` and the `span_bijection`
//! guest component cannot drift apart.
//!
//! - [`Line`] is one JSONL line of the trace (schema [`SCHEMA`]): a span
//!   opens with one line and closes with another, appended, never rewritten.
//! - [`parse`] turns a whole trace into [`Span`]s, or a [`ParseError`] that
//!   names the 1-based line; nothing is guessed.
//! - [`judge`] compares the spans with the delta (the set of changed paths as
//!   raw bytes): open spans, ghosts, phantoms, and the owned paths whose bytes
//!   the caller hashes and hands to [`Owned::check`] for hash misses.
//!
//! No I/O and no clock: the host and the guest read the trace, the delta and
//! the files their own way, and build for their own target (the guest for
//! wasm32-wasip2).

mod bijection;
mod line;
mod parse;

pub use bijection::{HashMiss, Judgement, Owned, judge};
pub use line::{Event, Line, Op, SCHEMA, Status};
pub use parse::{Malformed, ParseError, PathError, Span, check_relative, parse};

#[cfg(test)]
mod tests;
