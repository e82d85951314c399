//! JUnit XML reports as agent-ledger reads them, shared by the host (which
//! records each test's transition) and the `tests_pass` guest (which
//! decides): one reading, so the record and the verdict cannot disagree.
//!
//! - [`parse`] and [`cases`]: the test cases of a report and how each ended
//!   ([`Fate`]); a test id is `classname::name`.
//! - [`Required`]: a test id as an evaluator writes it (a JUnit id, a pytest
//!   node id, unittest/Django's `name (module.Class)`, or a bare function
//!   name) and the rule that matches it to cases.
//! - [`judge`]: each test's transition from the base revision's report to
//!   the patched one, and what `tests_pass` counts.

mod cases;
mod ids;
mod judge;

pub use cases::{Case, Fate, cases, parse};
pub use ids::{Required, module_of, split_ids, split_node};
pub use judge::{Judgement, Kind, RequiredFate, Transition, judge};
