//! The Responses API's event stream, and the model id and usage each
//! format reports.

use super::*;
use crate::record::ReasonCode;

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
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
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
        [ReasonCode::ProviderError, ReasonCode::ProviderUnfinished]
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
    assert_eq!(codes(&out), [ReasonCode::ProviderTruncated]);
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
        [ReasonCode::ProviderError, ReasonCode::ProviderTruncated]
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
    assert_eq!(codes(&out), [ReasonCode::MalformedResponse]);
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
