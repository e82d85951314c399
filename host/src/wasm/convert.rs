//! Crossing the boundary: the trial into WIT types, the guest's outcome back
//! (checked), trap and budget errors into reasons, captured output into a
//! capped excerpt.

use super::fs::DescriptorCapReached;
use super::limiter::MemoryCapReached;
use super::linker::NetworkRefused;
use super::{ChangeKind, Limits, MAX_WASM_STACK, OUTPUT_EXCERPT, TrialInput, wit};
use crate::record::{Finding, Outcome};
use std::path::Path;
use wasmtime::Trap;

pub(super) fn root_cause(e: &wasmtime::Error) -> String {
    e.root_cause().to_string()
}

/// A reason for a failed call, naming the budget that ran out.
pub(super) fn describe_error(e: &wasmtime::Error, limits: &Limits) -> String {
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return format!("called exit({}) instead of returning a result", exit.0);
    }
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::OutOfFuel => format!("fuel budget of {} exhausted", limits.fuel),
            Trap::Interrupt => format!(
                "wall-clock backstop of {} ms reached",
                limits.wall.as_millis()
            ),
            Trap::StackOverflow => format!("stack overflow (cap {} bytes)", MAX_WASM_STACK),
            Trap::UnreachableCodeReached => {
                "trap: unreachable code reached (a panic or abort)".to_string()
            }
            other => format!("trap: {other}"),
        };
    }
    for cause in e.chain() {
        if let Some(cap) = cause.downcast_ref::<MemoryCapReached>() {
            return cap.to_string();
        }
        if let Some(cap) = cause.downcast_ref::<DescriptorCapReached>() {
            return cap.to_string();
        }
        if let Some(refused) = cause.downcast_ref::<NetworkRefused>() {
            return refused.to_string();
        }
    }
    let msg = root_cause(e);
    // wasmtime's own errors are private types: known by their messages.
    if msg.contains("resource table has no free keys")
        || msg.contains("store handle limit exceeded")
    {
        return format!("handle cap of {} live resources reached", limits.handles);
    }
    if msg.contains("fuel allocated for hostcalls has been exhausted") {
        return format!(
            "findings cap reached: more than {} bytes passed to the host in one call \
             (a result may carry at most {} findings and {} bytes of paths and messages)",
            limits.hostcall_bytes(),
            limits.findings,
            limits.findings_bytes
        );
    }
    format!("trap: {msg}")
}

/// Keeps the head of a stream for the record; says whether it hit the cap.
pub(super) fn excerpt(bytes: &[u8], cap: usize) -> (String, bool) {
    let full = bytes.len() >= cap;
    let kept = &bytes[..bytes.len().min(OUTPUT_EXCERPT)];
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if bytes.len() > OUTPUT_EXCERPT {
        text.push_str(&format!(
            "\n[... truncated: {} more bytes{}]",
            bytes.len() - OUTPUT_EXCERPT,
            if full { ", cap reached" } else { "" }
        ));
    }
    (text, full)
}

/// The last [`OUTPUT_EXCERPT`] bytes of a stream, from a line start when
/// one is in reach, marked when cut: where a traceback ends up.
pub(super) fn tail(bytes: &[u8]) -> String {
    if bytes.len() <= OUTPUT_EXCERPT {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut kept = &bytes[bytes.len() - OUTPUT_EXCERPT..];
    if let Some(nl) = kept.iter().position(|&b| b == b'\n') {
        kept = &kept[nl + 1..];
    }
    format!(
        "[... {} earlier bytes]\n{}",
        bytes.len() - kept.len(),
        String::from_utf8_lossy(kept)
    )
}

pub(super) fn to_wit(t: &TrialInput) -> wit::Trial {
    wit::Trial {
        run_id: t.run_id.clone(),
        base_revision: t.base_revision.clone(),
        patch: t.patch.clone(),
        changes: t
            .changes
            .iter()
            .map(|c| wit::ChangedPath {
                path: c.path.clone(),
                kind: match c.kind {
                    ChangeKind::Added => wit::ChangeKind::Added,
                    ChangeKind::Modified => wit::ChangeKind::Modified,
                    ChangeKind::Deleted => wit::ChangeKind::Deleted,
                    ChangeKind::Renamed => wit::ChangeKind::Renamed,
                    ChangeKind::Copied => wit::ChangeKind::Copied,
                    ChangeKind::TypeChanged => wit::ChangeKind::TypeChanged,
                },
                old_path: c.old_path.clone(),
            })
            .collect(),
        config: t.config.clone(),
    }
}

/// Checks a guest result: within the findings caps, a miss names at least
/// one finding, and every finding's path stays inside the repository.
pub(super) fn from_wit(
    o: wit::Outcome,
    limits: &Limits,
) -> Result<(Outcome, Vec<Finding>), String> {
    let (outcome, findings) = match o {
        wit::Outcome::Holds(f) => (Outcome::Holds, f),
        wit::Outcome::Miss(f) => (Outcome::Miss, f),
    };
    if findings.len() > limits.findings {
        return Err(format!(
            "findings cap reached: {} findings, at most {} allowed",
            findings.len(),
            limits.findings
        ));
    }
    let bytes: usize = findings
        .iter()
        .map(|f| f.path.len() + f.message.len())
        .sum();
    if bytes > limits.findings_bytes {
        return Err(format!(
            "findings cap reached: {bytes} bytes of paths and messages, at most {} allowed",
            limits.findings_bytes
        ));
    }
    if outcome == Outcome::Miss && findings.iter().all(|f| f.frozen) {
        return Err(
            "malformed result: a miss must name at least one finding that is not frozen".into(),
        );
    }
    let mut out = Vec::with_capacity(findings.len());
    for f in findings {
        let p = Path::new(&f.path);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(format!(
                "malformed result: finding path `{}` is not inside the repository",
                f.path
            ));
        }
        out.push(Finding {
            path: f.path,
            line: f.line,
            message: f.message,
            frozen: f.frozen,
        });
    }
    out.sort();
    Ok((outcome, out))
}
