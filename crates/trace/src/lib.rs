//! The tool-call trace of an agent run and the rules that judge it against
//! a delta: one crate, so the host's `reconcile` and the `span_bijection`
//! guest component cannot drift apart.
//!
//! - [`Line`] is one JSONL line of the trace (schema [`SCHEMA`]): a span
//!   opens with one line and closes with another, appended, never rewritten.
//! - [`parse_trace`] turns a whole trace into [`Span`]s and, for a trace
//!   begun with a key, its checked hash [`Chain`] (whose MACs the holder of
//!   the key checks), or a [`ParseError`] that names the 1-based line;
//!   nothing is guessed. [`parse`] is its spans.
//! - [`judge`] compares the spans with the delta (the set of changed paths as
//!   raw bytes): open spans, ghosts, phantoms, case/normalisation aliases,
//!   spans of more than one agent, and the owned paths whose bytes the
//!   caller hashes and hands to [`Owned::check`] for hash misses, and the
//!   continuity of the spans on each path (a [`Break`] where a path changed
//!   between two tool calls; each path's first span the caller checks
//!   against the base revision).
//! - [`entry`] is what `before` and `after` record: the content's sha256,
//!   with the type and mode.
//! - [`UniqueKeys`] refuses JSON in which an object names a key twice (a
//!   trace line here; a ledger record in the host).
//!
//! No I/O and no clock: the host and the guest read the trace, the delta and
//! the files their own way, and build for their own target (the guest for
//! wasm32-wasip2).

mod bijection;
pub mod entry;
mod line;
mod parse;
mod unique;

pub use bijection::{Break, HashMiss, Judgement, Owned, fold, judge};
pub use line::{Event, Line, MAC_DOMAIN, Op, SCHEMA, SCHEMAS_READ, Seal, SealEvent, Status};
pub use parse::{
    Chain, Malformed, ParseError, PathError, Signed, Span, Trace, check_relative, line_sha256,
    parse, parse_trace,
};
pub use unique::UniqueKeys;

#[cfg(test)]
mod tests;
