//! `span_bijection`: the agent's tool-call trace (`/inputs/trace.jsonl`)
//! and the patch agree. The trace format and the rules are
//! `agent-ledger-trace`, the same crate the host's `reconcile` judges with:
//! every path the patch changes is owned by the last closed write/delete
//! span on it (else a ghost), every such span's path is changed by the patch
//! (else a phantom), and the patched tree holds the bytes the span says
//! (else a hash miss), type and mode included (`/inputs/modes.json`). Spans
//! on a path chain: the first finds what `/base` holds, each later one what
//! the span before it left (else a break: the path changed outside the
//! trace). An open span is a miss too. A rename counts as its
//! old path deleted plus its new path added. Paths that differ only in case
//! or Unicode normalisation (one file on macOS and Windows), and spans of
//! more than one agent, are misses. A malformed trace is an error.
//!
//! A trace begun with a key (`trace begin`) has a hash chain this property
//! checks (it has no key: `capture --trace` checked every MAC with it and
//! recorded the key's sha256 as `trace_auth` in the transcript receipt,
//! `/inputs/transcript.json`). A forged, edited, removed or reordered line,
//! a begin line naming another key than the receipt's, or a begun trace the
//! receipt records no authentication for, is an error (never `holds`). A
//! trace without a begin line is judged as before, with a finding saying it
//! is unauthenticated.

use agent_ledger_guest::{Finding, Guest, Info, Outcome, Trial, finding};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

struct SpanBijection;

/// The git modes of every changed path (`/inputs/modes.json`, written by
/// the host: WASI shows no permission bits): path, then (base, patched).
type Modes = BTreeMap<Vec<u8>, (Option<String>, Option<String>)>;

fn read_modes() -> Result<Modes, String> {
    let text = std::fs::read("/inputs/modes.json")
        .map_err(|e| format!("cannot read `/inputs/modes.json`: {e}"))?;
    let value: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| format!("`/inputs/modes.json` is not JSON: {e}"))?;
    if value.get("schema").and_then(|s| s.as_u64()) != Some(1) {
        return Err("`/inputs/modes.json`: not schema 1".into());
    }
    let mode = |v: Option<&serde_json::Value>| v.and_then(|m| m.as_str()).map(str::to_string);
    let mut modes = Modes::new();
    for p in value
        .get("paths")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
    {
        // The exact bytes: two paths that are not UTF-8 can share one
        // lossy spelling, and one of them could be a span's.
        let path = match (p.get("path_hex"), p.get("path")) {
            (Some(h), _) => h.as_str().and_then(|h| hex::decode(h).ok()),
            (None, Some(s)) => s.as_str().map(|s| s.as_bytes().to_vec()),
            (None, None) => None,
        }
        .ok_or("`/inputs/modes.json`: an entry without a path")?;
        modes.insert(path, (mode(p.get("base")), mode(p.get("patched"))));
    }
    Ok(modes)
}

/// What the tree at `root` holds at `path`, as a span records it
/// (`agent_ledger_trace::entry`), `None` when absent. `mode`: its git mode
/// there, when the host named it; without one (a path the patch left as
/// the base had it) a regular file matches `expected` in either mode, since
/// WASI cannot tell the executable bit and the patch did not change it.
fn entry_at(
    root: &str,
    path: &[u8],
    mode: Option<&str>,
    expected: Option<&str>,
) -> Result<Option<String>, String> {
    use agent_ledger_trace::entry::{Kind, digest};
    // WASI names paths as strings: a path that is not UTF-8 cannot be read,
    // and is judged absent (a span that wrote one is a hash miss).
    let Ok(path) = std::str::from_utf8(path) else {
        return Ok(None);
    };
    let p = format!("{root}/{path}");
    // A submodule commit (160000) or any mode no span records: an entry no
    // span's can equal, whatever WASI shows there (an empty directory, or
    // nothing).
    if let Some(m) = mode.filter(|m| Kind::from_git_mode(m).is_none()) {
        return Ok(Some(format!("{m}:")));
    }
    let (kind, bytes) = match std::fs::symlink_metadata(&p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot inspect `{path}` in `{root}`: {e}")),
        Ok(m) if m.file_type().is_symlink() => (
            Some(Kind::Symlink),
            std::fs::read_link(&p).map(|t| t.into_os_string().into_encoded_bytes()),
        ),
        Ok(m) if m.is_dir() => return Ok(None),
        Ok(_) => (mode.and_then(Kind::from_git_mode), std::fs::read(&p)),
    };
    let bytes = bytes.map_err(|e| format!("cannot read `{path}` in `{root}`: {e}"))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    Ok(Some(match kind {
        Some(kind) => digest(kind, &sha256),
        None if expected == Some(digest(Kind::Executable, &sha256).as_str()) => {
            digest(Kind::Executable, &sha256)
        }
        None => digest(Kind::File, &sha256),
    }))
}

fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// What a path holds, for a message.
fn holding(entry: Option<&str>) -> String {
    match entry.map(|e| e.split_once(':')) {
        None => "no file".to_string(),
        Some(Some((mode, ""))) => format!("mode {mode}"),
        Some(Some((mode, h))) => format!("mode {mode} sha256 {h}"),
        Some(None) => format!("sha256 {}", entry.unwrap_or_default()),
    }
}

/// The begun trace's key and run are the ones `capture --trace` verified
/// every MAC with, as the transcript receipt records them.
fn check_receipt(chain: &agent_ledger_trace::Chain) -> Result<(), String> {
    let receipt = std::fs::read("/inputs/transcript.json")
        .map_err(|e| format!("cannot read the transcript receipt: {e}"))?;
    let receipt: serde_json::Value = serde_json::from_slice(&receipt)
        .map_err(|e| format!("the transcript receipt is not JSON: {e}"))?;
    let Some(auth) = receipt.get("trace_auth").filter(|a| !a.is_null()) else {
        return Err(
            "the trace was begun with a key, but the transcript receipt records no `trace_auth`: its MACs were never verified".into(),
        );
    };
    let field = |name: &str| auth.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let begin = &chain.begin;
    if Some(field("key_sha256")) != begin.key_sha256.as_deref() {
        return Err(format!(
            "the trace's begin line names key sha256 {}, the receipt verified the trace with key sha256 {}",
            begin.key_sha256.as_deref().unwrap_or(""),
            field("key_sha256")
        ));
    }
    if field("run") != begin.run {
        return Err(format!(
            "the trace is run `{}`, the receipt verified run `{}`",
            begin.run,
            field("run")
        ));
    }
    if field("verified") != "hmac-sha256" {
        return Err("the receipt does not record the trace's MACs as verified".into());
    }
    Ok(())
}

impl Guest for SpanBijection {
    fn describe() -> Info {
        Info {
            name: "span_bijection".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary:
                "the agent's tool-call trace and the patch agree: no ghost, phantom, hash miss or break"
                    .into(),
        }
    }

    fn check(_trial: Trial) -> Result<Outcome, String> {
        let text = std::fs::read("/inputs/trace.jsonl")
            .map_err(|e| format!("no trace for this trial (`capture --trace`): {e}"))?;
        let trace = agent_ledger_trace::parse_trace(&text).map_err(|e| {
            if e.is_forgery() {
                format!("the trace `/inputs/trace.jsonl` does not verify: {e}")
            } else {
                format!("malformed trace `/inputs/trace.jsonl`: {e}")
            }
        })?;
        if let Some(chain) = &trace.chain {
            check_receipt(chain)?;
        }
        let mut findings: Vec<Finding> = Vec::new();
        let spans = trace.spans;
        // The delta from the host's list, as exact bytes (the trial's
        // `changes` are lossy strings).
        let modes = read_modes()?;
        let delta: BTreeSet<Vec<u8>> = modes.keys().cloned().collect();
        let judged = agent_ledger_trace::judge(&spans, &delta);
        for s in &judged.open {
            findings.push(finding(
                &shown(&s.path),
                None,
                format!(
                    "open span: {} span `{}` (trace line {}) never closed, so the run did not finish",
                    s.op.as_str(),
                    s.id,
                    s.open_line
                ),
            ));
        }
        for p in &judged.ghosts {
            findings.push(finding(
                &shown(p),
                None,
                "ghost: changed by the patch, but no closed write or delete span owns it",
            ));
        }
        for s in &judged.phantoms {
            findings.push(finding(
                &shown(&s.path),
                None,
                format!(
                    "phantom: {} span `{}` (trace line {}) owns it, but the patch does not change it",
                    s.op.as_str(),
                    s.id,
                    s.open_line
                ),
            ));
        }
        let mode_of = |path: &[u8], patched: bool| {
            modes
                .get(path)
                .and_then(|(b, p)| if patched { p.as_deref() } else { b.as_deref() })
        };
        for first in &judged.firsts {
            let at_base = entry_at(
                "/base",
                first.path,
                mode_of(first.path, false),
                first.expected,
            )?;
            if let Some(m) = first.check(at_base) {
                findings.push(finding(
                    &shown(m.path),
                    None,
                    format!(
                        "break: {} span `{}` (trace line {}) found {} there, but the base revision holds {}: it changed outside the trace before the first tool call on it",
                        m.span.op.as_str(),
                        m.span.id,
                        m.span.open_line,
                        holding(m.expected),
                        holding(m.actual.as_deref())
                    ),
                ));
            }
        }
        for b in &judged.breaks {
            findings.push(finding(
                &shown(b.path),
                None,
                format!(
                    "break: {} span `{}` (trace line {}) found {} there, but span `{}` left {}: it changed outside the trace between two tool calls",
                    b.span.op.as_str(),
                    b.span.id,
                    b.span.open_line,
                    holding(b.found),
                    b.previous.map_or("", |p| p.id.as_str()),
                    holding(b.expected)
                ),
            ));
        }
        for owned in &judged.owned {
            let now = entry_at(
                "/patched",
                owned.path,
                mode_of(owned.path, true),
                owned.expected,
            )?;
            if let Some(m) = owned.check(now) {
                findings.push(finding(
                    &shown(m.path),
                    None,
                    format!(
                        "hash miss: {} span `{}` (trace line {}) left {} there, the patched tree holds {}",
                        m.span.op.as_str(),
                        m.span.id,
                        m.span.open_line,
                        holding(m.expected),
                        holding(m.actual.as_deref())
                    ),
                ));
            }
        }
        for group in &judged.aliases {
            let names: Vec<String> = group.iter().map(|p| shown(p)).collect();
            findings.push(finding(
                &names[0],
                None,
                format!(
                    "alias: {} differ only in case or Unicode normalisation, one file on macOS and Windows",
                    names.join(" and ")
                ),
            ));
        }
        for (agent, paths) in &judged.agents {
            let names: Vec<String> = paths.iter().map(|p| shown(p)).collect();
            findings.push(finding(
                &names[0],
                None,
                format!(
                    "two agents: agent {} wrote {}, and another agent wrote in the same workspace",
                    agent.map_or_else(|| "(none)".to_string(), |a| format!("`{a}`")),
                    names.join(", ")
                ),
            ));
        }
        let holds = findings.is_empty();
        if trace.chain.is_none() {
            findings.push(finding(
                "trace.jsonl",
                None,
                "unauthenticated trace: it has no begin line (`trace begin`), so nothing binds its lines and anyone who could write the file could have written them",
            ));
        }
        Ok(if holds {
            Outcome::Holds(findings)
        } else {
            Outcome::Miss(findings)
        })
    }
}

agent_ledger_guest::export!(SpanBijection with_types_in agent_ledger_guest);
