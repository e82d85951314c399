//! Unit tests for the rules in `provider`.

use super::*;

const PATCH: &str = "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-a\n+b\n";

fn codes(out: &Extracted) -> Vec<&str> {
    out.reasons.iter().map(|r| r.code.as_str()).collect()
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
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
    assert_eq!(
        message(&out),
        "`choices[0].finish_reason` is `length`: the model hit its token limit"
    );
}

#[test]
fn openai_chat_other_finish_reason_is_provider_unfinished() {
    let out = extract(BodyFormat::OpenaiChat, &openai_chat_body("content_filter"));
    assert_eq!(codes(&out), [code::PROVIDER_UNFINISHED]);
    assert_eq!(
        message(&out),
        "`choices[0].finish_reason` is `content_filter`, not `stop`"
    );
}

#[test]
fn openai_chat_error_payload_is_provider_error() {
    let body = br#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests"}}"#;
    let out = extract(BodyFormat::OpenaiChat, body);
    assert_eq!(codes(&out), [code::PROVIDER_ERROR]);
    assert_eq!(
        message(&out),
        "the provider returned an error: Rate limit reached for gpt-4o"
    );
    assert!(out.patch.is_empty());
}

#[test]
fn openai_chat_malformed_json_is_malformed_response() {
    let out = extract(BodyFormat::OpenaiChat, br#"{"choices":[{"message":"#);
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
    assert!(message(&out).starts_with("the response is not valid JSON"));
}

#[test]
fn openai_chat_without_choices_is_malformed_response() {
    let out = extract(BodyFormat::OpenaiChat, br#"{"id":"x","choices":[]}"#);
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
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
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
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
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
    assert_eq!(
        message(&out),
        "`finish_reason` is `length`: the model hit its token limit"
    );
}

#[test]
fn openai_sse_done_without_finish_reason_is_provider_unfinished() {
    let out = extract(BodyFormat::OpenaiSse, b"data: [DONE]\n\n");
    assert_eq!(codes(&out), [code::PROVIDER_UNFINISHED]);
    assert_eq!(
        message(&out),
        "`finish_reason` is missing: the response never finished"
    );
}

#[test]
fn openai_sse_error_event_is_provider_error() {
    let body = "data: {\"error\":{\"message\":\"server overloaded\"}}\n\ndata: [DONE]\n\n";
    let out = extract(BodyFormat::OpenaiSse, body.as_bytes());
    assert_eq!(code::PROVIDER_ERROR, codes(&out)[0]);
    assert_eq!(
        message(&out),
        "the provider returned an error: server overloaded"
    );
}

#[test]
fn openai_sse_bad_event_json_is_malformed_response() {
    let body = format!("data: {{\"choices\":\n\n{}", openai_sse_body("stop", true));
    let out = extract(BodyFormat::OpenaiSse, body.as_bytes());
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
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
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
    assert_eq!(
        message(&out),
        "`status` is `incomplete` (reason: max_output_tokens)"
    );
}

#[test]
fn openai_responses_other_status_is_provider_unfinished() {
    let out = extract(BodyFormat::OpenaiResponses, &responses_body("in_progress"));
    assert_eq!(codes(&out), [code::PROVIDER_UNFINISHED]);
    assert_eq!(message(&out), "`status` is `in_progress`, not `completed`");
}

#[test]
fn openai_responses_error_payload_is_provider_error() {
    let body = br#"{"status":"failed","error":{"code":"server_error","message":"The model failed"},"output":[]}"#;
    let out = extract(BodyFormat::OpenaiResponses, body);
    assert_eq!(
        codes(&out),
        [code::PROVIDER_ERROR, code::PROVIDER_UNFINISHED]
    );
    assert_eq!(
        message(&out),
        "the provider returned an error: The model failed"
    );
}

#[test]
fn openai_responses_malformed_json_is_malformed_response() {
    let out = extract(BodyFormat::OpenaiResponses, b"<html>502 Bad Gateway</html>");
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
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
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
    assert_eq!(
        message(&out),
        "`stop_reason` is `max_tokens`: the model hit its token limit"
    );
}

#[test]
fn anthropic_other_stop_reason_is_provider_unfinished() {
    let out = extract(BodyFormat::Anthropic, &anthropic_body("tool_use"));
    assert_eq!(codes(&out), [code::PROVIDER_UNFINISHED]);
    assert_eq!(message(&out), "`stop_reason` is `tool_use`, not `end_turn`");
}

#[test]
fn anthropic_error_payload_is_provider_error() {
    let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let out = extract(BodyFormat::Anthropic, body);
    assert_eq!(codes(&out), [code::PROVIDER_ERROR]);
    assert_eq!(message(&out), "the provider returned an error: Overloaded");
}

#[test]
fn anthropic_malformed_json_is_malformed_response() {
    let out = extract(BodyFormat::Anthropic, br#"{"type":"message","content":["#);
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
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
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
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
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
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
    assert_eq!(codes(&out), [code::PROVIDER_UNFINISHED]);
    assert_eq!(message(&out), "`stop_reason` is `refusal`, not `end_turn`");
}

#[test]
fn anthropic_sse_error_event_is_provider_error() {
    let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let out = extract(BodyFormat::AnthropicSse, body.as_bytes());
    assert_eq!(
        codes(&out),
        [code::PROVIDER_ERROR, code::PROVIDER_TRUNCATED]
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
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
    assert!(message(&out).starts_with("event 1 is not valid JSON"));
}

#[test]
fn sse_that_is_not_utf8_is_malformed_response() {
    let out = extract(BodyFormat::AnthropicSse, b"data: \xff\xfe\n\n");
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
    assert_eq!(message(&out), "the event stream is not valid UTF-8");
}

/// A Responses API stream carrying PATCH in two deltas and ending with the
/// event `last` (none when `None`), whose response has `status`.
fn responses_sse_body(last: Option<(&str, serde_json::Value)>) -> String {
    let (head, tail) = PATCH.split_at(20);
    let mut s = String::new();
    let mut ev = |name: &str, data: serde_json::Value| {
        s.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    ev(
        "response.created",
        serde_json::json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": "resp_1", "model": "gpt-x-2026", "status": "in_progress", "output": []}}),
    );
    ev(
        "response.reasoning_summary_text.delta",
        serde_json::json!({"type": "response.reasoning_summary_text.delta", "delta": "thinking"}),
    );
    for part in [head, tail] {
        ev(
            "response.output_text.delta",
            serde_json::json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": part}),
        );
    }
    ev(
        "response.output_text.done",
        serde_json::json!({"type": "response.output_text.done", "text": PATCH}),
    );
    if let Some((name, response)) = last {
        ev(
            name,
            serde_json::json!({"type": name, "response": response}),
        );
    }
    s
}

fn final_response(status: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut r = serde_json::json!({
        "id": "resp_1",
        "model": "gpt-x-2026",
        "status": status,
        "usage": {"input_tokens": 11, "output_tokens": 22, "total_tokens": 33},
    });
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    r
}

#[test]
fn openai_responses_sse_completed_is_complete_and_joins_the_text_deltas() {
    let body = responses_sse_body(Some((
        "response.completed",
        final_response("completed", serde_json::json!({})),
    )));
    let out = extract(BodyFormat::OpenaiResponsesSse, body.as_bytes());
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
    assert_eq!(out.model.as_deref(), Some("gpt-x-2026"));
    assert_eq!(out.completion_id.as_deref(), Some("resp_1"));
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input_tokens: 11,
            output_tokens: 22,
            total_tokens: 33
        })
    );
}

#[test]
fn openai_responses_sse_incomplete_max_output_tokens_is_provider_truncated() {
    let body = responses_sse_body(Some((
        "response.incomplete",
        final_response(
            "incomplete",
            serde_json::json!({"incomplete_details": {"reason": "max_output_tokens"}}),
        ),
    )));
    let out = extract(BodyFormat::OpenaiResponsesSse, body.as_bytes());
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
    assert_eq!(
        message(&out),
        "`status` is `incomplete` (reason: max_output_tokens)"
    );
    // The usage of a truncated response is still what it spent.
    assert_eq!(out.usage.unwrap().output_tokens, 22);
}

#[test]
fn openai_responses_sse_failed_is_provider_error() {
    let body = responses_sse_body(Some((
        "response.failed",
        final_response(
            "failed",
            serde_json::json!({"error": {"code": "server_error", "message": "The model failed"}}),
        ),
    )));
    let out = extract(BodyFormat::OpenaiResponsesSse, body.as_bytes());
    assert_eq!(
        codes(&out),
        [code::PROVIDER_ERROR, code::PROVIDER_UNFINISHED]
    );
    assert_eq!(
        message(&out),
        "the provider returned an error: The model failed"
    );
}

#[test]
fn openai_responses_sse_without_a_final_event_is_provider_truncated() {
    // A stream cut after every delta but before `response.completed` is cut.
    let out = extract(
        BodyFormat::OpenaiResponsesSse,
        responses_sse_body(None).as_bytes(),
    );
    assert_eq!(codes(&out), [code::PROVIDER_TRUNCATED]);
    assert_eq!(
        message(&out),
        "the stream has no `response.completed`, `response.incomplete` or `response.failed` event: it was cut off"
    );
    assert_eq!(String::from_utf8(out.patch).unwrap(), PATCH);
    assert_eq!(out.completion_id.as_deref(), Some("resp_1"));
    assert_eq!(out.usage, None);
}

#[test]
fn openai_responses_sse_error_event_is_provider_error() {
    let body = "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded\",\"param\":null}\n\n";
    let out = extract(BodyFormat::OpenaiResponsesSse, body.as_bytes());
    assert_eq!(
        codes(&out),
        [code::PROVIDER_ERROR, code::PROVIDER_TRUNCATED]
    );
    assert_eq!(message(&out), "the provider returned an error: overloaded");
}

#[test]
fn openai_responses_sse_bad_event_json_is_malformed_response() {
    let body = format!(
        "event: response.created\ndata: {{\"type\":\n\n{}",
        responses_sse_body(Some((
            "response.completed",
            final_response("completed", serde_json::json!({}))
        )))
    );
    let out = extract(BodyFormat::OpenaiResponsesSse, body.as_bytes());
    assert_eq!(codes(&out), [code::MALFORMED_RESPONSE]);
    assert!(message(&out).starts_with("event 1 is not valid JSON"));
}

#[test]
fn openai_chat_reports_model_id_and_usage() {
    let mut v: serde_json::Value = serde_json::from_slice(&openai_chat_body("stop")).unwrap();
    v["model"] = "gpt-x-2026".into();
    v["usage"] =
        serde_json::json!({"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12});
    let out = extract(BodyFormat::OpenaiChat, &serde_json::to_vec(&v).unwrap());
    assert_eq!(out.model.as_deref(), Some("gpt-x-2026"));
    assert_eq!(out.completion_id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input_tokens: 5,
            output_tokens: 7,
            total_tokens: 12
        })
    );
    // No usage object, or one missing a count, is no usage.
    let out = extract(BodyFormat::OpenaiChat, &openai_chat_body("stop"));
    assert_eq!(out.usage, None);
    assert_eq!(out.model, None);
}

#[test]
fn openai_sse_reports_the_usage_chunk_of_include_usage() {
    let usage = serde_json::json!({"id": "chatcmpl-1", "model": "gpt-x", "choices": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}});
    let body = openai_sse_body("stop", true)
        .replace("data: [DONE]", &format!("data: {usage}\n\ndata: [DONE]"));
    let out = extract(BodyFormat::OpenaiSse, body.as_bytes());
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
    assert_eq!(out.completion_id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(out.model.as_deref(), Some("gpt-x"));
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input_tokens: 3,
            output_tokens: 4,
            total_tokens: 7
        })
    );
}

#[test]
fn openai_responses_json_reports_model_id_and_usage() {
    let mut v: serde_json::Value = serde_json::from_slice(&responses_body("completed")).unwrap();
    v["model"] = "gpt-x".into();
    v["usage"] = serde_json::json!({"input_tokens": 1, "output_tokens": 2});
    let out = extract(
        BodyFormat::OpenaiResponses,
        &serde_json::to_vec(&v).unwrap(),
    );
    assert_eq!(out.completion_id.as_deref(), Some("resp_1"));
    // No total given: input + output.
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input_tokens: 1,
            output_tokens: 2,
            total_tokens: 3
        })
    );
}

#[test]
fn anthropic_usage_counts_cached_input_as_input() {
    let mut v: serde_json::Value = serde_json::from_slice(&anthropic_body("end_turn")).unwrap();
    v["model"] = "claude-x".into();
    v["usage"] = serde_json::json!({"input_tokens": 10, "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000, "output_tokens": 20});
    let out = extract(BodyFormat::Anthropic, &serde_json::to_vec(&v).unwrap());
    assert_eq!(out.model.as_deref(), Some("claude-x"));
    assert_eq!(out.completion_id.as_deref(), Some("msg_1"));
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input_tokens: 1110,
            output_tokens: 20,
            total_tokens: 1130
        })
    );
}

#[test]
fn anthropic_sse_usage_is_the_start_counts_updated_by_the_last_delta() {
    let body = anthropic_sse_body("end_turn", true)
        .replace(
            r#""message":{"id":"msg_1"}"#,
            r#""message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":25,"output_tokens":1}}"#,
        )
        .replace(
            r#""delta":{"stop_reason":"end_turn"}"#,
            r#""delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}"#,
        );
    let out = extract(BodyFormat::AnthropicSse, body.as_bytes());
    assert!(out.reasons.is_empty(), "{:?}", out.reasons);
    assert_eq!(out.model.as_deref(), Some("claude-x"));
    assert_eq!(out.completion_id.as_deref(), Some("msg_1"));
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input_tokens: 25,
            output_tokens: 15,
            total_tokens: 40
        })
    );
}

#[test]
fn a_raw_body_reports_nothing_about_itself() {
    let out = extract(BodyFormat::Raw, PATCH.as_bytes());
    assert_eq!(
        (out.model, out.completion_id, out.usage),
        (None, None, None)
    );
}

#[test]
fn provider_formats_map_to_their_body_formats() {
    for (p, stream, f) in [
        (Provider::OpenaiChat, false, "openai-chat"),
        (Provider::OpenaiChat, true, "openai-sse"),
        (Provider::OpenaiResponses, false, "openai-responses"),
        (Provider::OpenaiResponses, true, "openai-responses-sse"),
        (Provider::Anthropic, false, "anthropic"),
        (Provider::Anthropic, true, "anthropic-sse"),
    ] {
        assert_eq!(p.body_format(stream).as_str(), f);
        assert_eq!(
            <BodyFormat as clap::ValueEnum>::from_str(f, false).unwrap(),
            p.body_format(stream)
        );
    }
}

#[test]
fn error_message_reads_each_providers_error_payload() {
    for body in [
        &br#"{"error":{"message":"quota","type":"insufficient_quota"}}"#[..],
        br#"{"type":"error","error":{"type":"rate_limit_error","message":"quota"}}"#,
        br#"{"message":"quota"}"#,
        br#"{"error":"quota"}"#,
    ] {
        assert_eq!(error_message(body).as_deref(), Some("quota"));
    }
    assert_eq!(error_message(b"<html>"), None);
}
