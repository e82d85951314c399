//! `span_bijection`: the agent's tool-call trace (`/inputs/trace.jsonl`)
//! and the patch agree. Every path the patch changes is owned by the last
//! closed write/delete span on it (else a ghost), every such span's path is
//! changed by the patch (else a phantom), and the patched tree holds the
//! bytes the span says (else a hash miss). An open span is a miss too.
//! A rename counts as its old path deleted plus its new path added.

use agent_ledger_guest::{ChangeKind, Guest, Info, Outcome, Trial, finding};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

struct SpanBijection;

struct Span {
    op: String,
    path: String,
    after: Option<String>,
    closed: Option<String>,
}

fn path_of(v: &Value, n: usize) -> Result<String, String> {
    if let Some(p) = v.get("path").and_then(Value::as_str) {
        return Ok(p.to_string());
    }
    let hex_path = v
        .get("path_hex")
        .and_then(Value::as_str)
        .ok_or(format!("trace line {n}: no `path`"))?;
    let bytes = hex::decode(hex_path).map_err(|_| format!("trace line {n}: bad `path_hex`"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn parse(text: &str) -> Result<(Vec<String>, BTreeMap<String, Span>), String> {
    let mut order = Vec::new();
    let mut spans: BTreeMap<String, Span> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("trace line {n} is not JSON: {e}"))?;
        if v.get("schema").and_then(Value::as_u64) != Some(1) {
            return Err(format!("trace line {n}: unsupported `schema`"));
        }
        let id = v
            .get("span")
            .and_then(Value::as_str)
            .ok_or(format!("trace line {n}: no `span`"))?
            .to_string();
        let event = v.get("event").and_then(Value::as_str).unwrap_or("");
        let op = v
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let path = path_of(&v, n)?;
        match event {
            "open" => {
                if spans
                    .insert(
                        id.clone(),
                        Span {
                            op,
                            path,
                            after: None,
                            closed: None,
                        },
                    )
                    .is_some()
                {
                    return Err(format!("trace line {n}: span `{id}` opened twice"));
                }
                order.push(id);
            }
            "close" => {
                let span = spans.get_mut(&id).ok_or(format!(
                    "trace line {n}: span `{id}` closes but never opened"
                ))?;
                span.after = v.get("after").and_then(Value::as_str).map(str::to_string);
                span.closed = Some(
                    v.get("status")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                );
            }
            other => return Err(format!("trace line {n}: unknown event `{other}`")),
        }
    }
    Ok((order, spans))
}

fn sha256_of(path: &str) -> Option<String> {
    let p = format!("/patched/{path}");
    let meta = std::fs::symlink_metadata(&p).ok()?;
    let bytes = if meta.file_type().is_symlink() {
        std::fs::read_link(&p)
            .ok()?
            .to_string_lossy()
            .into_owned()
            .into_bytes()
    } else {
        std::fs::read(&p).ok()?
    };
    Some(hex::encode(Sha256::digest(&bytes)))
}

impl Guest for SpanBijection {
    fn describe() -> Info {
        Info {
            name: "span_bijection".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary:
                "the agent's tool-call trace and the patch agree: no ghost, phantom or hash miss"
                    .into(),
        }
    }

    fn check(trial: Trial) -> Result<Outcome, String> {
        let text = std::fs::read_to_string("/inputs/trace.jsonl")
            .map_err(|e| format!("no trace for this trial (`capture --trace`): {e}"))?;
        let (order, spans) = parse(&text)?;
        let mut findings = Vec::new();
        let mut changed = BTreeSet::new();
        for c in &trial.changes {
            changed.insert(c.path.clone());
            if matches!(c.kind, ChangeKind::Renamed)
                && let Some(old) = &c.old_path
            {
                changed.insert(old.clone());
            }
        }
        let mut last: BTreeMap<&str, &Span> = BTreeMap::new();
        for id in &order {
            let span = &spans[id];
            match span.closed.as_deref() {
                None => findings.push(finding(
                    &span.path,
                    None,
                    format!("span `{id}` is still open"),
                )),
                Some("closed") if span.op == "write" || span.op == "delete" => {
                    last.insert(&span.path, span);
                }
                _ => {}
            }
        }
        for path in &changed {
            if !last.contains_key(path.as_str()) {
                findings.push(finding(
                    path,
                    None,
                    "ghost: changed by the patch, but no span wrote it",
                ));
            }
        }
        for (path, span) in &last {
            if !changed.contains(*path) {
                findings.push(finding(
                    path,
                    None,
                    "phantom: a span wrote it, but the patch does not change it",
                ));
                continue;
            }
            let expected = if span.op == "delete" {
                None
            } else {
                span.after.clone()
            };
            if sha256_of(path) != expected {
                findings.push(finding(
                    path,
                    None,
                    "hash miss: the patched tree does not hold the bytes the span recorded",
                ));
            }
        }
        Ok(if findings.is_empty() {
            Outcome::Holds(Vec::new())
        } else {
            Outcome::Miss(findings)
        })
    }
}

agent_ledger_guest::export!(SpanBijection with_types_in agent_ledger_guest);
