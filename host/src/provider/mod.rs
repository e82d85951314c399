//! Provider response formats: take the patch text out of a model response and
//! read the provider's own completion signal.
//!
//! Only capture reads these; nothing in agent-ledger ever calls a model.

use crate::record::Reason;
use serde_json::Value;

pub mod code {
    pub const PROVIDER_TRUNCATED: &str = "provider_truncated";
    pub const PROVIDER_ERROR: &str = "provider_error";
    pub const PROVIDER_UNFINISHED: &str = "provider_unfinished";
    pub const MALFORMED_RESPONSE: &str = "malformed_response";
}

/// How a captured body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BodyFormat {
    /// A unified diff, as is.
    Raw,
    /// OpenAI chat completion JSON.
    OpenaiChat,
    /// OpenAI chat completion server-sent-event stream.
    OpenaiSse,
    /// OpenAI Responses API JSON.
    OpenaiResponses,
    /// Anthropic Messages JSON.
    Anthropic,
    /// Anthropic Messages server-sent-event stream.
    AnthropicSse,
}

impl BodyFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            BodyFormat::Raw => "raw",
            BodyFormat::OpenaiChat => "openai-chat",
            BodyFormat::OpenaiSse => "openai-sse",
            BodyFormat::OpenaiResponses => "openai-responses",
            BodyFormat::Anthropic => "anthropic",
            BodyFormat::AnthropicSse => "anthropic-sse",
        }
    }
}

/// The patch text found in a response, and every completion fault.
#[derive(Debug, Default)]
pub struct Extracted {
    pub patch: Vec<u8>,
    pub reasons: Vec<Reason>,
}

pub fn extract(format: BodyFormat, body: &[u8]) -> Extracted {
    match format {
        BodyFormat::Raw => Extracted {
            patch: body.to_vec(),
            reasons: Vec::new(),
        },
        BodyFormat::OpenaiChat => json_then(body, openai_chat),
        BodyFormat::OpenaiResponses => json_then(body, openai_responses),
        BodyFormat::Anthropic => json_then(body, anthropic),
        BodyFormat::OpenaiSse => openai_sse(body),
        BodyFormat::AnthropicSse => anthropic_sse(body),
    }
}

fn malformed(msg: impl Into<String>) -> Reason {
    Reason::new(code::MALFORMED_RESPONSE, msg)
}

fn json_then(body: &[u8], f: fn(&Value, &mut Extracted)) -> Extracted {
    let mut out = Extracted::default();
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => f(&value, &mut out),
        Err(e) => out
            .reasons
            .push(malformed(format!("the response is not valid JSON: {e}"))),
    }
    out
}

fn error_reason(error: &Value) -> Reason {
    let msg = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    Reason::new(
        code::PROVIDER_ERROR,
        format!("the provider returned an error: {msg}"),
    )
}

fn openai_chat(v: &Value, out: &mut Extracted) {
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        out.reasons.push(error_reason(err));
        return;
    }
    let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
        out.reasons.push(malformed("field `choices[0]` is missing"));
        return;
    };
    match choice.pointer("/message/content").and_then(Value::as_str) {
        Some(text) => out.patch = text.as_bytes().to_vec(),
        None => out.reasons.push(malformed(
            "field `choices[0].message.content` is not a string",
        )),
    }
    finish_reason(choice.get("finish_reason"), "choices[0].finish_reason", out);
}

fn finish_reason(reason: Option<&Value>, field: &str, out: &mut Extracted) {
    match reason.and_then(Value::as_str) {
        Some("stop") => {}
        Some("length") => out.reasons.push(Reason::new(
            code::PROVIDER_TRUNCATED,
            format!("`{field}` is `length`: the model hit its token limit"),
        )),
        Some(other) => out.reasons.push(Reason::new(
            code::PROVIDER_UNFINISHED,
            format!("`{field}` is `{other}`, not `stop`"),
        )),
        None => out.reasons.push(Reason::new(
            code::PROVIDER_UNFINISHED,
            format!("`{field}` is missing: the response never finished"),
        )),
    }
}

fn openai_responses(v: &Value, out: &mut Extracted) {
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        out.reasons.push(error_reason(err));
    }
    let mut text = String::new();
    for item in v
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if item.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        for part in item
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if part.get("type").and_then(Value::as_str) == Some("output_text") {
                text.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""));
            }
        }
    }
    out.patch = text.into_bytes();
    match v.get("status").and_then(Value::as_str) {
        Some("completed") => {}
        Some("incomplete") => {
            let why = v
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            out.reasons.push(Reason::new(
                code::PROVIDER_TRUNCATED,
                format!("`status` is `incomplete` (reason: {why})"),
            ));
        }
        Some(other) => out.reasons.push(Reason::new(
            code::PROVIDER_UNFINISHED,
            format!("`status` is `{other}`, not `completed`"),
        )),
        None => out.reasons.push(malformed("field `status` is missing")),
    }
}

fn anthropic(v: &Value, out: &mut Extracted) {
    if v.get("type").and_then(Value::as_str) == Some("error") {
        out.reasons.push(error_reason(v.get("error").unwrap_or(v)));
        return;
    }
    let Some(content) = v.get("content").and_then(Value::as_array) else {
        out.reasons
            .push(malformed("field `content` is not an array"));
        return;
    };
    let mut text = String::new();
    for block in content {
        if block.get("type").and_then(Value::as_str) == Some("text") {
            text.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""));
        }
    }
    out.patch = text.into_bytes();
    stop_reason(v.get("stop_reason"), out);
}

fn stop_reason(reason: Option<&Value>, out: &mut Extracted) {
    match reason.and_then(Value::as_str) {
        Some("end_turn") | Some("stop_sequence") => {}
        Some("max_tokens") => out.reasons.push(Reason::new(
            code::PROVIDER_TRUNCATED,
            "`stop_reason` is `max_tokens`: the model hit its token limit",
        )),
        Some(other) => out.reasons.push(Reason::new(
            code::PROVIDER_UNFINISHED,
            format!("`stop_reason` is `{other}`, not `end_turn`"),
        )),
        None => out.reasons.push(Reason::new(
            code::PROVIDER_UNFINISHED,
            "`stop_reason` is missing: the message never finished",
        )),
    }
}

/// One server-sent event: its `event:` name (if any) and joined `data:`.
struct Event {
    name: String,
    data: String,
}

fn sse_events(body: &[u8]) -> Result<Vec<Event>, Reason> {
    let text =
        std::str::from_utf8(body).map_err(|_| malformed("the event stream is not valid UTF-8"))?;
    let mut events = Vec::new();
    let mut name = String::new();
    let mut data: Option<String> = None;
    let mut flush = |name: &mut String, data: &mut Option<String>| {
        if let Some(d) = data.take() {
            events.push(Event {
                name: std::mem::take(name),
                data: d,
            });
        } else {
            name.clear();
        }
    };
    for line in text.lines() {
        if line.is_empty() {
            flush(&mut name, &mut data);
        } else if let Some(v) = line.strip_prefix("event:") {
            name = v.trim_start().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            let v = v.strip_prefix(' ').unwrap_or(v);
            match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(v);
                }
                None => data = Some(v.to_string()),
            }
        }
        // `id:`, `retry:` and `:` comments carry nothing we judge.
    }
    flush(&mut name, &mut data);
    Ok(events)
}

fn openai_sse(body: &[u8]) -> Extracted {
    let mut out = Extracted::default();
    let events = match sse_events(body) {
        Ok(e) => e,
        Err(r) => {
            out.reasons.push(r);
            return out;
        }
    };
    let mut text = String::new();
    let mut done = false;
    let mut finish: Option<Value> = None;
    for (n, ev) in events.iter().enumerate() {
        if ev.data == "[DONE]" {
            done = true;
            continue;
        }
        let v: Value = match serde_json::from_str(&ev.data) {
            Ok(v) => v,
            Err(e) => {
                out.reasons
                    .push(malformed(format!("event {} is not valid JSON: {e}", n + 1)));
                continue;
            }
        };
        if ev.name == "error" || v.get("error").is_some_and(|e| !e.is_null()) {
            out.reasons.push(error_reason(v.get("error").unwrap_or(&v)));
            continue;
        }
        if let Some(choice) = v.get("choices").and_then(|c| c.get(0)) {
            if let Some(t) = choice.pointer("/delta/content").and_then(Value::as_str) {
                text.push_str(t);
            }
            if let Some(f) = choice.get("finish_reason").filter(|f| !f.is_null()) {
                finish = Some(f.clone());
            }
        }
    }
    out.patch = text.into_bytes();
    if !done {
        out.reasons.push(Reason::new(
            code::PROVIDER_TRUNCATED,
            "the stream has no `data: [DONE]`: it was cut off",
        ));
    }
    if done || finish.is_some() {
        finish_reason(finish.as_ref(), "finish_reason", &mut out);
    }
    out
}

fn anthropic_sse(body: &[u8]) -> Extracted {
    let mut out = Extracted::default();
    let events = match sse_events(body) {
        Ok(e) => e,
        Err(r) => {
            out.reasons.push(r);
            return out;
        }
    };
    let mut text = String::new();
    let mut stopped = false;
    let mut reason: Option<Value> = None;
    for (n, ev) in events.iter().enumerate() {
        let v: Value = match serde_json::from_str(&ev.data) {
            Ok(v) => v,
            Err(e) => {
                out.reasons
                    .push(malformed(format!("event {} is not valid JSON: {e}", n + 1)));
                continue;
            }
        };
        let kind = if ev.name.is_empty() {
            v.get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        } else {
            ev.name.clone()
        };
        match kind.as_str() {
            "error" => out.reasons.push(error_reason(v.get("error").unwrap_or(&v))),
            "content_block_delta"
                if v.pointer("/delta/type").and_then(Value::as_str) == Some("text_delta") =>
            {
                text.push_str(
                    v.pointer("/delta/text")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                );
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").filter(|r| !r.is_null()) {
                    reason = Some(r.clone());
                }
            }
            "message_stop" => stopped = true,
            _ => {}
        }
    }
    out.patch = text.into_bytes();
    if !stopped {
        out.reasons.push(Reason::new(
            code::PROVIDER_TRUNCATED,
            "the stream has no `message_stop` event: it was cut off",
        ));
    }
    if stopped || reason.is_some() {
        stop_reason(reason.as_ref(), &mut out);
    }
    out
}

#[cfg(test)]
mod tests;
