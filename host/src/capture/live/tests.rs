use super::*;

fn refused(text: &str) -> String {
    Endpoint::parse(text).unwrap_err()
}

#[test]
fn an_endpoint_is_an_https_base_or_plain_http_to_this_machine() {
    let e = Endpoint::parse("https://api.openai.com/v1/").unwrap();
    assert_eq!(e.as_str(), "https://api.openai.com/v1");
    assert_eq!(
        e.url(Provider::OpenaiChat),
        "https://api.openai.com/v1/chat/completions"
    );
    assert_eq!(
        e.url(Provider::OpenaiResponses),
        "https://api.openai.com/v1/responses"
    );
    assert!(!e.plain_loopback);
    let a = Endpoint::parse("https://api.anthropic.com/v1").unwrap();
    assert_eq!(
        a.url(Provider::Anthropic),
        "https://api.anthropic.com/v1/messages"
    );
    for local in [
        "http://127.0.0.1:8080/v1",
        "http://localhost:11434/v1",
        "http://[::1]:9/v1",
    ] {
        assert!(Endpoint::parse(local).unwrap().plain_loopback, "{local}");
    }
}

#[test]
fn an_endpoint_that_would_leak_the_key_is_refused() {
    assert!(refused("http://api.example.com/v1").contains("clear text"));
    assert!(refused("ftp://127.0.0.1/v1").contains("scheme `ftp`"));
    assert!(refused("https://host/v1?key=abc").contains("query or fragment"));
    assert!(refused("api.openai.com/v1").contains("not an absolute URL"));
    let creds = refused("https://user:s3cret@host/v1");
    assert!(creds.contains("holds credentials"), "{creds}");
    assert!(!creds.contains("s3cret"), "{creds}");
    let creds = refused("https://user:s3cret@host/v1?x=1");
    assert!(!creds.contains("s3cret"), "{creds}");
}

#[test]
fn request_bodies_follow_each_api() {
    let v = |p, stream| -> serde_json::Value {
        serde_json::from_slice(&request_body(p, "m", "fix it", 512, stream)).unwrap()
    };
    assert_eq!(
        v(Provider::OpenaiChat, true),
        serde_json::json!({
            "model": "m",
            "messages": [{ "role": "user", "content": "fix it" }],
            "max_completion_tokens": 512,
            "stream": true,
            "stream_options": { "include_usage": true },
        })
    );
    assert!(
        v(Provider::OpenaiChat, false)
            .get("stream_options")
            .is_none()
    );
    assert_eq!(
        v(Provider::OpenaiResponses, false),
        serde_json::json!({
            "model": "m", "input": "fix it", "max_output_tokens": 512, "stream": false,
        })
    );
    assert_eq!(
        v(Provider::Anthropic, true),
        serde_json::json!({
            "model": "m",
            "max_tokens": 512,
            "messages": [{ "role": "user", "content": "fix it" }],
            "stream": true,
        })
    );
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let key = ApiKey("sk-live-123".into());
    assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
}

#[test]
fn an_error_status_names_the_payload_message() {
    assert_eq!(
        status_message(429, br#"{"error":{"message":"Rate limit reached"}}"#),
        "the server answered HTTP 429 Too Many Requests: Rate limit reached"
    );
    assert_eq!(
        status_message(502, b"<html>bad gateway</html>"),
        "the server answered HTTP 502 Bad Gateway"
    );
}
