//! `trace export --otlp`: a trace as OpenTelemetry spans in the OTLP/JSON
//! encoding (the protobuf JSON mapping, with OTLP's hex trace and span ids),
//! so a run shows in any OTLP-compatible viewer.
//!
//! One trace per run: a root span `invoke_agent AGENT` over the whole run,
//! and one child span `execute_tool OP` per tool call, named and attributed
//! after the OpenTelemetry GenAI semantic conventions where one fits
//! (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
//! `gen_ai.agent.id`, `gen_ai.conversation.id`), `file.path` for the path,
//! and `agent_ledger.*` for the rest (op, hashes, status, line numbers).
//! A closed span is status OK, an errored one ERROR with its message, an
//! open one UNSET and ends when it started.

use crate::exit::{Error, ExitCode, Result};
use crate::reconcile::display_path;
use crate::trace::{Span, Status};
use serde_json::{Value, json};
use std::path::Path;

fn string_attr(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

fn bool_attr(key: &str, value: bool) -> Value {
    json!({"key": key, "value": {"boolValue": value}})
}

fn int_attr(key: &str, value: u64) -> Value {
    // int64 is a string in the protobuf JSON mapping.
    json!({"key": key, "value": {"intValue": value.to_string()}})
}

/// `n` hex digits of sha256 of `seed`: a stable id, never all zero.
fn id(seed: &str, n: usize) -> String {
    let h = crate::digest::sha256_hex(seed.as_bytes());
    let id = h[..n].to_string();
    if id.bytes().all(|b| b == b'0') {
        format!("{}1", &id[..n - 1])
    } else {
        id
    }
}

/// Unix nanoseconds of an RFC 3339 time, as the string OTLP/JSON uses.
fn nanos(trace: &Path, line: usize, ts: &str) -> Result<String> {
    let t = crate::clock::parse_time(ts)
        .map_err(|e| Error::data(trace, format!("line {line}: field `ts`: {e}")))?;
    Ok(t.unix_timestamp_nanos().to_string())
}

/// The OTLP/JSON document of a trace file.
pub fn document(trace: &Path, bytes: &[u8]) -> Result<Value> {
    let verified = match crate::trace::verify(trace, bytes, None, None)? {
        Ok(v) => v,
        Err(forged) => {
            return Err(Error::data(
                trace,
                format!("does not verify, so it is not exported: {forged}"),
            ));
        }
    };
    let auth = verified.auth.as_ref();
    // A run is its run id; an unauthenticated trace is its bytes.
    let run = auth.map_or_else(
        || {
            format!(
                "unauthenticated-{}",
                &crate::digest::sha256_hex(bytes)[..16]
            )
        },
        |a| a.run.clone(),
    );
    let trace_id = id(&format!("agent-ledger trace {run}"), 32);
    let root_id = id(&format!("agent-ledger run {run}"), 16);
    let agent = auth.map(|a| a.agent.clone());
    let mut spans = Vec::new();
    let mut first: Option<String> = None;
    let mut last: Option<String> = None;
    for s in &verified.spans {
        let span = tool_span(trace, s, &trace_id, &root_id, &run)?;
        let start = span["startTimeUnixNano"]
            .as_str()
            .unwrap_or("0")
            .to_string();
        let end = span["endTimeUnixNano"].as_str().unwrap_or("0").to_string();
        let earlier = |a: &str, b: &str| a.parse::<i128>().ok() < b.parse::<i128>().ok();
        if first.as_deref().is_none_or(|f| earlier(&start, f)) {
            first = Some(start);
        }
        if last.as_deref().is_none_or(|l| earlier(l, &end)) {
            last = Some(end);
        }
        spans.push(span);
    }
    let agent_name = agent
        .clone()
        .or_else(|| verified.spans.iter().find_map(|s| s.agent.clone()))
        .unwrap_or_else(|| "agent".into());
    let mut root_attrs = vec![
        string_attr("gen_ai.operation.name", "invoke_agent"),
        string_attr("gen_ai.agent.id", &agent_name),
        string_attr("gen_ai.conversation.id", &run),
        string_attr("agent_ledger.run.id", &run),
        bool_attr("agent_ledger.trace.authenticated", auth.is_some()),
        int_attr("agent_ledger.spans", verified.spans.len() as u64),
    ];
    if let Some(a) = auth {
        root_attrs.push(string_attr("agent_ledger.key.sha256", &a.key_sha256));
        root_attrs.push(string_attr("agent_ledger.base", &a.base));
        root_attrs.push(bool_attr("agent_ledger.trace.sealed", a.sealed));
    }
    let zero = "0".to_string();
    spans.insert(
        0,
        json!({
            "traceId": trace_id,
            "spanId": root_id,
            "name": format!("invoke_agent {agent_name}"),
            "kind": 1,
            "startTimeUnixNano": first.clone().unwrap_or_else(|| zero.clone()),
            "endTimeUnixNano": last.or(first).unwrap_or(zero),
            "attributes": root_attrs,
            "status": {"code": 0},
        }),
    );
    Ok(json!({
        "resourceSpans": [{
            "resource": {"attributes": [
                string_attr("service.name", "agent-ledger"),
                string_attr("service.version", env!("CARGO_PKG_VERSION")),
            ]},
            "scopeSpans": [{
                "scope": {"name": "agent-ledger.trace", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    }))
}

fn tool_span(trace: &Path, s: &Span, trace_id: &str, root_id: &str, run: &str) -> Result<Value> {
    let op = s.op.as_str();
    let start = nanos(trace, s.open_line, &s.opened_at)?;
    let mut attrs = vec![
        string_attr("gen_ai.operation.name", "execute_tool"),
        string_attr("gen_ai.tool.name", op),
        string_attr("gen_ai.tool.call.id", &s.id),
        string_attr("file.path", &display_path(&s.path)),
        string_attr("agent_ledger.op", op),
        int_attr("agent_ledger.trace.open_line", s.open_line as u64),
    ];
    if let Some(a) = &s.agent {
        attrs.push(string_attr("gen_ai.agent.id", a));
    }
    if let Some(b) = &s.before {
        attrs.push(string_attr("agent_ledger.before_sha256", b));
    }
    let (end, status) = match &s.close {
        None => {
            attrs.push(string_attr("agent_ledger.status", "open"));
            (start.clone(), json!({"code": 0}))
        }
        Some(close) => {
            if let Some(a) = &close.after {
                attrs.push(string_attr("agent_ledger.after_sha256", a));
            }
            let end = nanos(trace, s.open_line, &close.ts)?;
            match close.status {
                Status::Error => {
                    attrs.push(string_attr("agent_ledger.status", "error"));
                    attrs.push(string_attr("error.type", "tool_error"));
                    (
                        end,
                        json!({"code": 2, "message": close.error.clone().unwrap_or_default()}),
                    )
                }
                _ => {
                    attrs.push(string_attr("agent_ledger.status", "closed"));
                    (end, json!({"code": 1}))
                }
            }
        }
    };
    Ok(json!({
        "traceId": trace_id,
        "spanId": id(&format!("agent-ledger span {run} {}", s.id), 16),
        "parentSpanId": root_id,
        "name": format!("execute_tool {op}"),
        "kind": 1,
        "startTimeUnixNano": start,
        "endTimeUnixNano": end,
        "attributes": attrs,
        "status": status,
    }))
}

/// Writes the OTLP/JSON document of `trace` to `out` (a new file, or `-`
/// for stdout).
pub fn export(trace: &Path, out: &Path) -> Result<ExitCode> {
    let bytes = crate::input::read_file(trace, crate::input::TRACE_CAP)?;
    let doc = document(trace, &bytes)?;
    let mut text = serde_json::to_vec_pretty(&doc)
        .map_err(|e| Error::Internal(format!("cannot encode OTLP/JSON: {e}")))?;
    text.push(b'\n');
    use std::io::Write;
    if out == Path::new("-") {
        std::io::stdout()
            .lock()
            .write_all(&text)
            .map_err(|e| Error::write(out, e))?;
        return Ok(ExitCode::Ok);
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::Exists {
                path: out.to_path_buf(),
                hint: "choose a new file for the export".into(),
            },
            _ => Error::write(out, e),
        })?;
    file.write_all(&text).map_err(|e| Error::write(out, e))?;
    Ok(ExitCode::Ok)
}
