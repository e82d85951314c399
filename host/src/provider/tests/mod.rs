//! Unit tests for the rules in `provider`.

use super::*;
use crate::record::ReasonCode;

const PATCH: &str = "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-a\n+b\n";

fn codes(out: &Extracted) -> Vec<ReasonCode> {
    out.reasons.iter().map(|r| r.code).collect()
}

fn message(out: &Extracted) -> &str {
    &out.reasons[0].message
}

fn openai_chat_body(finish: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": PATCH },
            "finish_reason": finish,
        }],
    }))
    .unwrap()
}

/// An OpenAI chat stream carrying PATCH in two chunks.
fn openai_sse_body(finish: &str, done: bool) -> String {
    let (head, tail) = PATCH.split_at(20);
    let chunk = |content: &str, finish: Option<&str>| {
        serde_json::json!({
            "id": "chatcmpl-1",
            "choices": [{ "index": 0, "delta": { "content": content }, "finish_reason": finish }],
        })
    };
    let mut s = String::new();
    s.push_str(&format!("data: {}\n\n", chunk(head, None)));
    s.push_str(&format!("data: {}\n\n", chunk(tail, None)));
    s.push_str(&format!("data: {}\n\n", chunk("", Some(finish))));
    if done {
        s.push_str("data: [DONE]\n\n");
    }
    s
}

fn responses_body(status: &str) -> Vec<u8> {
    let (head, tail) = PATCH.split_at(20);
    serde_json::to_vec(&serde_json::json!({
        "id": "resp_1",
        "object": "response",
        "status": status,
        "incomplete_details": if status == "incomplete" {
            serde_json::json!({ "reason": "max_output_tokens" })
        } else {
            serde_json::Value::Null
        },
        "error": null,
        "output": [
            { "type": "reasoning", "summary": [{ "type": "summary_text", "text": "thinking" }] },
            { "type": "message", "role": "assistant", "content": [
                { "type": "output_text", "text": head },
                { "type": "output_text", "text": tail },
            ]},
        ],
    }))
    .unwrap()
}

fn anthropic_body(stop: &str) -> Vec<u8> {
    let (head, tail) = PATCH.split_at(20);
    serde_json::to_vec(&serde_json::json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            { "type": "text", "text": head },
            { "type": "tool_use", "id": "t1", "name": "x", "input": {} },
            { "type": "text", "text": tail },
        ],
        "stop_reason": stop,
    }))
    .unwrap()
}

/// An Anthropic Messages stream carrying PATCH in two deltas.
fn anthropic_sse_body(stop: &str, message_stop: bool) -> String {
    let (head, tail) = PATCH.split_at(20);
    let mut s = String::new();
    let mut ev = |name: &str, data: serde_json::Value| {
        s.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    ev(
        "message_start",
        serde_json::json!({"type": "message_start", "message": {"id": "msg_1"}}),
    );
    ev(
        "content_block_start",
        serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for part in [head, tail] {
        ev(
            "content_block_delta",
            serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}),
        );
    }
    ev(
        "content_block_stop",
        serde_json::json!({"type": "content_block_stop", "index": 0}),
    );
    ev(
        "message_delta",
        serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop}}),
    );
    if message_stop {
        ev("message_stop", serde_json::json!({"type": "message_stop"}));
    }
    s
}

#[test]
fn raw_body_is_the_patch_as_is() {
    let out = extract(BodyFormat::Raw, PATCH.as_bytes());
    assert_eq!(out.patch, PATCH.as_bytes());
    assert!(out.reasons.is_empty());
}

#[test]
fn openai_chat_stop_is_complete_and_extracts_the_content() {
    let out = extract(BodyFormat::OpenaiChat, &openai_chat_body("stop"));
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
}

#[test]
fn openai_chat_finish_reason_length_is_provider_truncated() {
    let out = extract(BodyFormat::OpenaiChat, &openai_chat_body("length"));
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
    assert_eq!(
        message(&out),
        "`choices[0].finish_reason` is `length`: the model hit its token limit"
    );
}

#[test]
fn openai_chat_other_finish_reason_is_provider_unfinished() {
    let out = extract(BodyFormat::OpenaiChat, &openai_chat_body("content_filter"));
    assert_eq!(codes(&out), [ReasonCode::ProviderUnfinished]);
    assert_eq!(
        message(&out),
        "`choices[0].finish_reason` is `content_filter`, not `stop`"
    );
}

#[test]
fn openai_chat_error_payload_is_provider_error() {
    let body = br#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests"}}"#;
    let out = extract(BodyFormat::OpenaiChat, body);
    assert_eq!(codes(&out), [ReasonCode::ProviderError]);
    assert_eq!(
        message(&out),
        "the provider returned an error: Rate limit reached for gpt-4o"
    );
    assert!(out.patch.is_empty());
}

#[test]
fn openai_chat_malformed_json_is_malformed_response() {
    let out = extract(BodyFormat::OpenaiChat, br#"{"choices":[{"message":"#);
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
    assert!(message(&out).starts_with("the response is not valid JSON"));
}

#[test]
fn openai_chat_without_choices_is_malformed_response() {
    let out = extract(BodyFormat::OpenaiChat, br#"{"id":"x","choices":[]}"#);
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
    assert_eq!(message(&out), "field `choices[0]` is missing");
}

#[test]
fn openai_sse_with_done_is_complete_and_joins_the_deltas() {
    let out = extract(
        BodyFormat::OpenaiSse,
        openai_sse_body("stop", true).as_bytes(),
    );
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
}

#[test]
fn openai_sse_without_done_is_provider_truncated() {
    // A stream cut after the last chunk but before `[DONE]` is still cut.
    let out = extract(
        BodyFormat::OpenaiSse,
        openai_sse_body("stop", false).as_bytes(),
    );
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
    assert_eq!(
        message(&out),
        "the stream has no `data: [DONE]`: it was cut off"
    );
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
}

#[test]
fn openai_sse_finish_reason_length_is_provider_truncated() {
    let out = extract(
        BodyFormat::OpenaiSse,
        openai_sse_body("length", true).as_bytes(),
    );
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
    assert_eq!(
        message(&out),
        "`finish_reason` is `length`: the model hit its token limit"
    );
}

#[test]
fn openai_sse_done_without_finish_reason_is_provider_unfinished() {
    let out = extract(BodyFormat::OpenaiSse, b"data: [DONE]\n\n");
    assert_eq!(codes(&out), [ReasonCode::ProviderUnfinished]);
    assert_eq!(
        message(&out),
        "`finish_reason` is missing: the response never finished"
    );
}

#[test]
fn openai_sse_error_event_is_provider_error() {
    let body = "data: {\"error\":{\"message\":\"server overloaded\"}}\n\ndata: [DONE]\n\n";
    let out = extract(BodyFormat::OpenaiSse, body.as_bytes());
    assert_eq!(ReasonCode::ProviderError, codes(&out)[0]);
    assert_eq!(
        message(&out),
        "the provider returned an error: server overloaded"
    );
}

#[test]
fn openai_sse_bad_event_json_is_malformed_response() {
    let body = format!("data: {{\"choices\":\n\n{}", openai_sse_body("stop", true));
    let out = extract(BodyFormat::OpenaiSse, body.as_bytes());
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
    assert!(message(&out).starts_with("event 1 is not valid JSON"));
}

#[test]
fn openai_responses_completed_is_complete_and_joins_output_text() {
    let out = extract(BodyFormat::OpenaiResponses, &responses_body("completed"));
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
}

#[test]
fn openai_responses_status_incomplete_is_provider_truncated() {
    let out = extract(BodyFormat::OpenaiResponses, &responses_body("incomplete"));
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
    assert_eq!(
        message(&out),
        "`status` is `incomplete` (reason: max_output_tokens)"
    );
}

#[test]
fn openai_responses_other_status_is_provider_unfinished() {
    let out = extract(BodyFormat::OpenaiResponses, &responses_body("in_progress"));
    assert_eq!(codes(&out), [ReasonCode::ProviderUnfinished]);
    assert_eq!(message(&out), "`status` is `in_progress`, not `completed`");
}

#[test]
fn openai_responses_error_payload_is_provider_error() {
    let body = br#"{"status":"failed","error":{"code":"server_error","message":"The model failed"},"output":[]}"#;
    let out = extract(BodyFormat::OpenaiResponses, body);
    assert_eq!(
        codes(&out),
        [ReasonCode::ProviderError, ReasonCode::ProviderUnfinished]
    );
    assert_eq!(
        message(&out),
        "the provider returned an error: The model failed"
    );
}

#[test]
fn openai_responses_malformed_json_is_malformed_response() {
    let out = extract(BodyFormat::OpenaiResponses, b"<html>502 Bad Gateway</html>");
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
}

#[test]
fn anthropic_end_turn_is_complete_and_joins_text_blocks() {
    let out = extract(BodyFormat::Anthropic, &anthropic_body("end_turn"));
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
}

#[test]
fn anthropic_stop_reason_max_tokens_is_provider_truncated() {
    let out = extract(BodyFormat::Anthropic, &anthropic_body("max_tokens"));
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
    assert_eq!(
        message(&out),
        "`stop_reason` is `max_tokens`: the model hit its token limit"
    );
}

#[test]
fn anthropic_other_stop_reason_is_provider_unfinished() {
    let out = extract(BodyFormat::Anthropic, &anthropic_body("tool_use"));
    assert_eq!(codes(&out), [ReasonCode::ProviderUnfinished]);
    assert_eq!(message(&out), "`stop_reason` is `tool_use`, not `end_turn`");
}

#[test]
fn anthropic_error_payload_is_provider_error() {
    let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let out = extract(BodyFormat::Anthropic, body);
    assert_eq!(codes(&out), [ReasonCode::ProviderError]);
    assert_eq!(message(&out), "the provider returned an error: Overloaded");
}

#[test]
fn anthropic_malformed_json_is_malformed_response() {
    let out = extract(BodyFormat::Anthropic, br#"{"type":"message","content":["#);
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
    assert!(message(&out).starts_with("the response is not valid JSON"));
}

#[test]
fn anthropic_sse_with_message_stop_is_complete_and_joins_the_deltas() {
    let out = extract(
        BodyFormat::AnthropicSse,
        anthropic_sse_body("end_turn", true).as_bytes(),
    );
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
}

#[test]
fn anthropic_sse_without_message_stop_is_provider_truncated() {
    let out = extract(
        BodyFormat::AnthropicSse,
        anthropic_sse_body("end_turn", false).as_bytes(),
    );
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
    assert_eq!(
        message(&out),
        "the stream has no `message_stop` event: it was cut off"
    );
}

#[test]
fn anthropic_sse_max_tokens_is_provider_truncated() {
    let out = extract(
        BodyFormat::AnthropicSse,
        anthropic_sse_body("max_tokens", true).as_bytes(),
    );
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
    assert_eq!(
        message(&out),
        "`stop_reason` is `max_tokens`: the model hit its token limit"
    );
}

#[test]
fn anthropic_sse_other_stop_reason_is_provider_unfinished() {
    let out = extract(
        BodyFormat::AnthropicSse,
        anthropic_sse_body("refusal", true).as_bytes(),
    );
    assert_eq!(codes(&out), [ReasonCode::ProviderUnfinished]);
    assert_eq!(message(&out), "`stop_reason` is `refusal`, not `end_turn`");
}

#[test]
fn anthropic_sse_error_event_is_provider_error() {
    let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let out = extract(BodyFormat::AnthropicSse, body.as_bytes());
    assert_eq!(
        codes(&out),
        [ReasonCode::ProviderError, ReasonCode::ProviderTruncated]
    );
    assert_eq!(message(&out), "the provider returned an error: Overloaded");
}

#[test]
fn anthropic_sse_bad_event_json_is_malformed_response() {
    let body = format!(
        "event: ping\ndata: {{not json\n\n{}",
        anthropic_sse_body("end_turn", true)
    );
    let out = extract(BodyFormat::AnthropicSse, body.as_bytes());
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
    assert!(message(&out).starts_with("event 1 is not valid JSON"));
}

#[test]
fn sse_that_is_not_utf8_is_malformed_response() {
    let out = extract(BodyFormat::AnthropicSse, b"data: \xff\xfe\n\n");
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
    assert_eq!(message(&out), "the event stream is not valid UTF-8");
}

mod responses_stream_and_usage;
