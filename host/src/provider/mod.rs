//! Provider response formats: take the patch text out of a model response,
//! read the provider's own completion signal, and the model, completion id
//! and token usage it reports.
//!
//! Only capture reads these. The one place that calls a model is
//! `capture::live`; this module only reads bytes already received.

use crate::record::ReasonCode;
use crate::record::{Reason, TokenUsage};
use serde_json::{Map, Value};

/// How a captured body is encoded (a receipt's `format`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum BodyFormat {
    /// A unified diff, as is.
    Raw,
    /// OpenAI chat completion JSON.
    OpenaiChat,
    /// OpenAI chat completion server-sent-event stream.
    OpenaiSse,
    /// OpenAI Responses API JSON.
    OpenaiResponses,
    /// OpenAI Responses API server-sent-event stream.
    OpenaiResponsesSse,
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
            BodyFormat::OpenaiResponsesSse => "openai-responses-sse",
            BodyFormat::Anthropic => "anthropic",
            BodyFormat::AnthropicSse => "anthropic-sse",
        }
    }
}

/// A model API that live capture can call.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// OpenAI Chat Completions (`POST {endpoint}/chat/completions`).
    OpenaiChat,
    /// OpenAI Responses (`POST {endpoint}/responses`).
    OpenaiResponses,
    /// Anthropic Messages (`POST {endpoint}/messages`).
    Anthropic,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenaiChat => "openai-chat",
            Provider::OpenaiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The format of this provider's response body, streamed or not: live
    /// capture judges what it received exactly as a body file in this
    /// format would be judged.
    pub fn body_format(self, stream: bool) -> BodyFormat {
        match (self, stream) {
            (Provider::OpenaiChat, false) => BodyFormat::OpenaiChat,
            (Provider::OpenaiChat, true) => BodyFormat::OpenaiSse,
            (Provider::OpenaiResponses, false) => BodyFormat::OpenaiResponses,
            (Provider::OpenaiResponses, true) => BodyFormat::OpenaiResponsesSse,
            (Provider::Anthropic, false) => BodyFormat::Anthropic,
            (Provider::Anthropic, true) => BodyFormat::AnthropicSse,
        }
    }

    /// The environment variable the API key is read from by default.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Provider::OpenaiChat | Provider::OpenaiResponses => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// The patch text found in a response, every completion fault, and what
/// the response says about itself.
#[derive(Debug, Default)]
pub struct Extracted {
    pub patch: Vec<u8>,
    pub reasons: Vec<Reason>,
    /// The model the response names (the first one, in a stream).
    pub model: Option<String>,
    /// The response's id: `chatcmpl-…`, `resp_…`, `msg_…`.
    pub completion_id: Option<String>,
    /// The token usage the response reports, if it reports both counts.
    pub usage: Option<TokenUsage>,
}

pub fn extract(format: BodyFormat, body: &[u8]) -> Extracted {
    match format {
        BodyFormat::Raw => Extracted {
            patch: body.to_vec(),
            ..Extracted::default()
        },
        BodyFormat::OpenaiChat => json_then(body, openai_chat),
        BodyFormat::OpenaiResponses => json_then(body, openai_responses),
        BodyFormat::Anthropic => json_then(body, anthropic),
        BodyFormat::OpenaiSse => openai_sse(body),
        BodyFormat::OpenaiResponsesSse => openai_responses_sse(body),
        BodyFormat::AnthropicSse => anthropic_sse(body),
    }
}

/// Records the first `model` and `id` an object names.
fn identity(v: &Value, out: &mut Extracted) {
    let text = |key| {
        v.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if out.model.is_none() {
        out.model = text("model");
    }
    if out.completion_id.is_none() {
        out.completion_id = text("id");
    }
}

/// Reads a usage object whose counts are named `input` and `output`, plus
/// any `extra_input` counts (Anthropic's cache counts).
fn usage(u: &Value, input: &str, output: &str, extra_input: &[&str]) -> Option<TokenUsage> {
    let count = |key: &str| u.get(key).and_then(Value::as_u64);
    let mut input_tokens = count(input)?;
    for key in extra_input {
        input_tokens = input_tokens.saturating_add(count(key).unwrap_or(0));
    }
    let output_tokens = count(output)?;
    Some(TokenUsage {
        input_tokens,
        output_tokens,
        total_tokens: count("total_tokens")
            .unwrap_or_else(|| input_tokens.saturating_add(output_tokens)),
    })
}

fn openai_chat_usage(u: &Value) -> Option<TokenUsage> {
    usage(u, "prompt_tokens", "completion_tokens", &[])
}

fn responses_usage(u: &Value) -> Option<TokenUsage> {
    usage(u, "input_tokens", "output_tokens", &[])
}

fn anthropic_usage(u: &Value) -> Option<TokenUsage> {
    usage(
        u,
        "input_tokens",
        "output_tokens",
        &["cache_creation_input_tokens", "cache_read_input_tokens"],
    )
}

fn malformed(msg: impl Into<String>) -> Reason {
    Reason::new(ReasonCode::MalformedResponse, msg)
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

/// The message of an error payload: OpenAI's `{"error":{"message":…}}`,
/// Anthropic's `{"type":"error","error":{"message":…}}`, or a bare
/// `{"message":…}` or `{"error":"…"}`. For a response whose HTTP status
/// already says it failed.
pub fn error_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let error = v.get("error").unwrap_or(&v);
    error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map(str::to_string)
}

fn error_reason(error: &Value) -> Reason {
    let msg = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    Reason::new(
        ReasonCode::ProviderError,
        format!("the provider returned an error: {msg}"),
    )
}

fn openai_chat(v: &Value, out: &mut Extracted) {
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        out.reasons.push(error_reason(err));
        return;
    }
    identity(v, out);
    out.usage = v.get("usage").and_then(openai_chat_usage);
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
            ReasonCode::ProviderTruncated,
            format!("`{field}` is `length`: the model hit its token limit"),
        )),
        Some(other) => out.reasons.push(Reason::new(
            ReasonCode::ProviderUnfinished,
            format!("`{field}` is `{other}`, not `stop`"),
        )),
        None => out.reasons.push(Reason::new(
            ReasonCode::ProviderUnfinished,
            format!("`{field}` is missing: the response never finished"),
        )),
    }
}

fn openai_responses(v: &Value, out: &mut Extracted) {
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
    responses_outcome(v, out);
}

/// The judgement of a Responses object, the whole body or the `response`
/// of a stream's last event: its error, its status, who it is and what it
/// used.
fn responses_outcome(v: &Value, out: &mut Extracted) {
    identity(v, out);
    out.usage = v.get("usage").and_then(responses_usage);
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        out.reasons.push(error_reason(err));
    }
    match v.get("status").and_then(Value::as_str) {
        Some("completed") => {}
        Some("incomplete") => {
            let why = v
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            out.reasons.push(Reason::new(
                ReasonCode::ProviderTruncated,
                format!("`status` is `incomplete` (reason: {why})"),
            ));
        }
        Some(other) => out.reasons.push(Reason::new(
            ReasonCode::ProviderUnfinished,
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
    identity(v, out);
    out.usage = v.get("usage").and_then(anthropic_usage);
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
            ReasonCode::ProviderTruncated,
            "`stop_reason` is `max_tokens`: the model hit its token limit",
        )),
        Some(other) => out.reasons.push(Reason::new(
            ReasonCode::ProviderUnfinished,
            format!("`stop_reason` is `{other}`, not `end_turn`"),
        )),
        None => out.reasons.push(Reason::new(
            ReasonCode::ProviderUnfinished,
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
        let Some(v) = event_json(n, ev, &mut out) else {
            continue;
        };
        if ev.name == "error" || v.get("error").is_some_and(|e| !e.is_null()) {
            out.reasons.push(error_reason(v.get("error").unwrap_or(&v)));
            continue;
        }
        identity(&v, &mut out);
        // With `stream_options.include_usage`, the last chunk before
        // `[DONE]` carries the usage and no choice.
        if let Some(u) = v.get("usage").and_then(openai_chat_usage) {
            out.usage = Some(u);
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
            ReasonCode::ProviderTruncated,
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
    // `message_start` carries the input counts; each `message_delta` the
    // cumulative output count (and, from some servers, input counts too).
    let mut counts: Option<Map<String, Value>> = None;
    for (n, ev) in events.iter().enumerate() {
        let Some(v) = event_json(n, ev, &mut out) else {
            continue;
        };
        match event_kind(ev, &v) {
            "error" => out.reasons.push(error_reason(v.get("error").unwrap_or(&v))),
            "message_start" => {
                if let Some(message) = v.get("message") {
                    identity(message, &mut out);
                    if let Some(u) = message.get("usage").and_then(Value::as_object) {
                        counts = Some(u.clone());
                    }
                }
            }
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
                if let Some(u) = v.get("usage").and_then(Value::as_object) {
                    let counts = counts.get_or_insert_with(Map::new);
                    for (key, value) in u.iter().filter(|(_, value)| value.is_u64()) {
                        counts.insert(key.clone(), value.clone());
                    }
                }
            }
            "message_stop" => stopped = true,
            _ => {}
        }
    }
    out.patch = text.into_bytes();
    out.usage = counts.and_then(|c| anthropic_usage(&Value::Object(c)));
    if !stopped {
        out.reasons.push(Reason::new(
            ReasonCode::ProviderTruncated,
            "the stream has no `message_stop` event: it was cut off",
        ));
    }
    if stopped || reason.is_some() {
        stop_reason(reason.as_ref(), &mut out);
    }
    out
}

/// An event's data as JSON, or a `malformed_response` reason for it.
fn event_json(n: usize, ev: &Event, out: &mut Extracted) -> Option<Value> {
    match serde_json::from_str(&ev.data) {
        Ok(v) => Some(v),
        Err(e) => {
            out.reasons
                .push(malformed(format!("event {} is not valid JSON: {e}", n + 1)));
            None
        }
    }
}

/// An event's kind: its `event:` name, else the `type` field of its data.
fn event_kind<'a>(ev: &'a Event, v: &'a Value) -> &'a str {
    if ev.name.is_empty() {
        v.get("type").and_then(Value::as_str).unwrap_or("")
    } else {
        &ev.name
    }
}

/// The Responses API stream: text from `response.output_text.delta`, the
/// outcome from the last event, which is one of `response.completed`,
/// `response.incomplete` or `response.failed` and carries the whole
/// response object; that object is judged by the same rules as a
/// Responses JSON body.
fn openai_responses_sse(body: &[u8]) -> Extracted {
    let mut out = Extracted::default();
    let events = match sse_events(body) {
        Ok(e) => e,
        Err(r) => {
            out.reasons.push(r);
            return out;
        }
    };
    let mut text = String::new();
    let mut last: Option<Value> = None;
    for (n, ev) in events.iter().enumerate() {
        let Some(v) = event_json(n, ev, &mut out) else {
            continue;
        };
        match event_kind(ev, &v) {
            "error" => out.reasons.push(error_reason(v.get("error").unwrap_or(&v))),
            "response.created" | "response.in_progress" => {
                if let Some(response) = v.get("response") {
                    identity(response, &mut out);
                }
            }
            "response.output_text.delta" => {
                text.push_str(v.get("delta").and_then(Value::as_str).unwrap_or(""));
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                match v.get("response") {
                    Some(response) => last = Some(response.clone()),
                    None => out.reasons.push(malformed(format!(
                        "event {} has no field `response`",
                        n + 1
                    ))),
                }
            }
            _ => {}
        }
    }
    out.patch = text.into_bytes();
    match last {
        Some(response) => responses_outcome(&response, &mut out),
        None => out.reasons.push(Reason::new(
            ReasonCode::ProviderTruncated,
            "the stream has no `response.completed`, `response.incomplete` or `response.failed` event: it was cut off",
        )),
    }
    out
}

#[cfg(test)]
mod tests;
