//! `capture --prompt-file`: live capture against a provider server the
//! tests start on 127.0.0.1, serving the recorded bodies in
//! `fixtures/live/`, for every provider and streaming mode. Whole answers
//! come from tiny_http; answers that break the protocol (a socket closed
//! mid-body, a `Content-Length` past the body, a stall) from a raw socket.

use crate::support::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The API key every test sends; it must appear in no file and no output.
pub(crate) const KEY: &str = "sk-test-NEVER-STORED-7f3a9c1e";

/// One provider API in one streaming mode, and what its recorded bodies say.
pub(crate) struct Api {
    pub(crate) provider: &'static str,
    stream: bool,
    /// The body format the receipt must name.
    format: &'static str,
    /// Recorded bodies: complete, and stopped by the token limit.
    complete: &'static str,
    token_limit: &'static str,
    /// The request path under the endpoint.
    path: &'static str,
    /// The default key variable, and the request-id header the server sends.
    pub(crate) key_env: &'static str,
    request_id_header: &'static str,
    model: &'static str,
    completion_id: &'static str,
    /// The name of the output limit in the request body.
    limit_field: &'static str,
    /// An error status and its recorded payload's message.
    error_status: u16,
    error_body: &'static str,
    error_message: &'static str,
}

const OPENAI_ERROR: &str = "the server answered HTTP 429 Too Many Requests: Rate limit reached for gpt-x in organization org-1 on tokens per min";

pub(crate) const APIS: [Api; 6] = [
    Api {
        provider: "openai-chat",
        stream: false,
        format: "openai-chat",
        complete: "openai-chat.json",
        token_limit: "openai-chat-length.json",
        path: "/v1/chat/completions",
        key_env: "OPENAI_API_KEY",
        request_id_header: "x-request-id",
        model: "gpt-x-2026-01-01",
        completion_id: "chatcmpl-live1",
        limit_field: "max_completion_tokens",
        error_status: 429,
        error_body: "openai-error.json",
        error_message: OPENAI_ERROR,
    },
    Api {
        provider: "openai-chat",
        stream: true,
        format: "openai-sse",
        complete: "openai-sse.txt",
        token_limit: "openai-sse-length.txt",
        path: "/v1/chat/completions",
        key_env: "OPENAI_API_KEY",
        request_id_header: "x-request-id",
        model: "gpt-x-2026-01-01",
        completion_id: "chatcmpl-live1",
        limit_field: "max_completion_tokens",
        error_status: 429,
        error_body: "openai-error.json",
        error_message: OPENAI_ERROR,
    },
    Api {
        provider: "openai-responses",
        stream: false,
        format: "openai-responses",
        complete: "openai-responses.json",
        token_limit: "openai-responses-incomplete.json",
        path: "/v1/responses",
        key_env: "OPENAI_API_KEY",
        request_id_header: "x-request-id",
        model: "gpt-x-2026-01-01",
        completion_id: "resp_live1",
        limit_field: "max_output_tokens",
        error_status: 429,
        error_body: "openai-error.json",
        error_message: OPENAI_ERROR,
    },
    Api {
        provider: "openai-responses",
        stream: true,
        format: "openai-responses-sse",
        complete: "openai-responses-sse.txt",
        token_limit: "openai-responses-sse-incomplete.txt",
        path: "/v1/responses",
        key_env: "OPENAI_API_KEY",
        request_id_header: "x-request-id",
        model: "gpt-x-2026-01-01",
        completion_id: "resp_live1",
        limit_field: "max_output_tokens",
        error_status: 429,
        error_body: "openai-error.json",
        error_message: OPENAI_ERROR,
    },
    Api {
        provider: "anthropic",
        stream: false,
        format: "anthropic",
        complete: "anthropic.json",
        token_limit: "anthropic-max-tokens.json",
        path: "/v1/messages",
        key_env: "ANTHROPIC_API_KEY",
        request_id_header: "request-id",
        model: "claude-x-2026-01-01",
        completion_id: "msg_live1",
        limit_field: "max_tokens",
        error_status: 529,
        error_body: "anthropic-error.json",
        error_message: "the server answered HTTP 529: Overloaded",
    },
    Api {
        provider: "anthropic",
        stream: true,
        format: "anthropic-sse",
        complete: "anthropic-sse.txt",
        token_limit: "anthropic-sse-max-tokens.txt",
        path: "/v1/messages",
        key_env: "ANTHROPIC_API_KEY",
        request_id_header: "request-id",
        model: "claude-x-2026-01-01",
        completion_id: "msg_live1",
        limit_field: "max_tokens",
        error_status: 529,
        error_body: "anthropic-error.json",
        error_message: "the server answered HTTP 529: Overloaded",
    },
];

fn recorded(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("live/{name}"))).unwrap()
}

/// The patch every recorded body carries.
fn patch() -> Vec<u8> {
    std::fs::read(fixture("capture/complete-multifile.diff")).unwrap()
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    path: String,
    /// Header names lowercased.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// What the server answers.
enum Reply {
    /// A whole response, through tiny_http: `Content-Length` for JSON,
    /// chunked for a stream (as providers stream).
    Whole {
        status: u16,
        body: Vec<u8>,
        stream: bool,
    },
    /// From a raw socket: a 200 head declaring `declared` bytes (chunked
    /// when `None`), then `sent`, then `pause`, then the socket closes
    /// whatever the head promised.
    Broken {
        declared: Option<usize>,
        sent: Vec<u8>,
        pause: Duration,
    },
    /// From a raw socket: a 200 head declaring the body's length, then the
    /// body one byte every `every`: never idle, never done.
    Trickle { body: Vec<u8>, every: Duration },
    /// A whole JSON response whose body is sent as `Content-Encoding:
    /// encoding`, unasked.
    Encoded {
        body: Vec<u8>,
        encoding: &'static str,
    },
}

/// A provider server on 127.0.0.1 for one test.
pub(crate) struct Server {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
    tiny: Option<(Arc<tiny_http::Server>, std::thread::JoinHandle<()>)>,
}

impl Server {
    fn start(reply: Reply, request_id_header: &'static str) -> Server {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (reply, encoding) = match reply {
            Reply::Encoded { body, encoding } => (
                Reply::Whole {
                    status: 200,
                    body,
                    stream: false,
                },
                Some(encoding),
            ),
            reply => (reply, None),
        };
        match reply {
            Reply::Encoded { .. } => unreachable!("served as a whole response"),
            Reply::Whole {
                status,
                body,
                stream,
            } => {
                let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
                let port = server.server_addr().to_ip().unwrap().port();
                let (s, log) = (server.clone(), seen.clone());
                let thread = std::thread::spawn(move || {
                    for mut rq in s.incoming_requests() {
                        let mut bytes = Vec::new();
                        rq.as_reader().read_to_end(&mut bytes).unwrap();
                        log.lock().unwrap().push(Seen {
                            path: rq.url().to_string(),
                            headers: rq
                                .headers()
                                .iter()
                                .map(|h| {
                                    (
                                        h.field.as_str().as_str().to_ascii_lowercase(),
                                        h.value.as_str().to_string(),
                                    )
                                })
                                .collect(),
                            body: bytes,
                        });
                        let header = |n: &str, v: &str| {
                            tiny_http::Header::from_bytes(n.as_bytes(), v.as_bytes()).unwrap()
                        };
                        let content_type = if stream && status == 200 {
                            "text/event-stream"
                        } else {
                            "application/json"
                        };
                        let length = (!stream || status != 200).then_some(body.len());
                        let mut headers = vec![
                            header("content-type", content_type),
                            header(request_id_header, "req_live1"),
                        ];
                        headers.extend(encoding.map(|e| header("content-encoding", e)));
                        let response = tiny_http::Response::new(
                            status.into(),
                            headers,
                            std::io::Cursor::new(body.clone()),
                            length,
                            None,
                        );
                        let _ = rq.respond(response);
                    }
                });
                Server {
                    url: format!("http://127.0.0.1:{port}/v1"),
                    seen,
                    tiny: Some((server, thread)),
                }
            }
            Reply::Trickle { body, every } => {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let port = listener.local_addr().unwrap().port();
                std::thread::spawn(move || {
                    let (stream, _) = listener.accept().unwrap();
                    let mut reader = BufReader::new(stream);
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        reader.read_line(&mut line).unwrap();
                        let line = line.trim_end().to_ascii_lowercase();
                        if line.is_empty() {
                            break;
                        }
                        if let Some(v) = line.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut request = vec![0; length];
                    reader.read_exact(&mut request).unwrap();
                    let mut stream = reader.into_inner();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{request_id_header}: req_live1\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    if stream.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    for b in body {
                        std::thread::sleep(every);
                        if stream
                            .write_all(&[b])
                            .and_then(|()| stream.flush())
                            .is_err()
                        {
                            return;
                        }
                    }
                });
                Server {
                    url: format!("http://127.0.0.1:{port}/v1"),
                    seen,
                    tiny: None,
                }
            }
            Reply::Broken {
                declared,
                sent,
                pause,
            } => {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let port = listener.local_addr().unwrap().port();
                let log = seen.clone();
                // Serves one connection; detached, as nothing may ever connect.
                std::thread::spawn(move || {
                    let (stream, _) = listener.accept().unwrap();
                    let mut reader = BufReader::new(stream);
                    let mut request_line = String::new();
                    reader.read_line(&mut request_line).unwrap();
                    let mut headers = Vec::new();
                    loop {
                        let mut line = String::new();
                        reader.read_line(&mut line).unwrap();
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        let (n, v) = line.split_once(':').unwrap();
                        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
                    }
                    let length: usize = headers
                        .iter()
                        .find(|(n, _)| n == "content-length")
                        .map_or(0, |(_, v)| v.parse().unwrap());
                    let mut body = vec![0; length];
                    // The whole request is read first: closing a socket
                    // with unread bytes resets it, and the client could
                    // lose what was sent.
                    reader.read_exact(&mut body).unwrap();
                    log.lock().unwrap().push(Seen {
                        path: request_line.split(' ').nth(1).unwrap().to_string(),
                        headers,
                        body,
                    });
                    let mut stream = reader.into_inner();
                    let framing = match declared {
                        Some(n) => format!("Content-Length: {n}"),
                        None => "Transfer-Encoding: chunked".into(),
                    };
                    let mut out = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{request_id_header}: req_live1\r\n{framing}\r\n\r\n"
                    )
                    .into_bytes();
                    match declared {
                        Some(_) => out.extend_from_slice(&sent),
                        None => {
                            out.extend_from_slice(format!("{:x}\r\n", sent.len()).as_bytes());
                            out.extend_from_slice(&sent);
                            out.extend_from_slice(b"\r\n");
                        }
                    }
                    stream.write_all(&out).unwrap();
                    stream.flush().unwrap();
                    std::thread::sleep(pause);
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                });
                Server {
                    url: format!("http://127.0.0.1:{port}/v1"),
                    seen,
                    tiny: None,
                }
            }
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((server, thread)) = self.tiny.take() {
            server.unblock();
            let _ = thread.join();
        }
    }
}

/// Runs `agent-ledger` in `dir` with a clean model environment (no keys,
/// no budget) plus `env`.
fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd: Command = command(dir);
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MODEL_TOKEN_BUDGET"] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = cmd.output().expect("run agent-ledger");
    let out = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !out.stdout.contains(KEY) && !out.stderr.contains(KEY),
        "the API key was printed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    out
}

/// `capture --prompt-file` of run `run` against `server` as `api`, with
/// the key in the provider's default variable and a token budget.
fn live(dir: &Path, run: &str, server: &Server, api: &Api, extra: &[&str]) -> Output {
    write(
        &dir.join("prompt.txt"),
        "Fix the off-by-one in backoff_ms.\n",
    );
    let mut args = vec![
        "capture",
        "--run",
        run,
        "--prompt-file",
        "prompt.txt",
        "--endpoint",
        &server.url,
        "--provider",
        api.provider,
        "--model",
        "m-requested",
        "--format",
        "json",
    ];
    if api.stream {
        args.push("--stream");
    }
    args.extend_from_slice(extra);
    run_env(
        dir,
        &args,
        &[(api.key_env, KEY), ("MODEL_TOKEN_BUDGET", "2048")],
    )
}

fn transcripts(dir: &Path) -> std::path::PathBuf {
    dir.join(".agent-ledger/transcripts")
}

fn stored(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(transcripts(dir).join(name)).unwrap()
}

fn codes(receipt: &serde_json::Value) -> Vec<String> {
    receipt["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect()
}

/// Every file under `dir` (the ledger, the prompt, the configuration),
/// searched for the key's bytes.
fn assert_no_key_anywhere(dir: &Path) {
    fn walk(dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
                    "the API key is in `{}`",
                    path.display()
                );
            }
        }
    }
    walk(dir);
}

/// The printed receipt is the stored one, which later steps accept: the
/// stored request and response are intact and the reasons follow.
fn check_receipt(dir: &Path, run: &str, out: &Output) -> serde_json::Value {
    let receipt = out.json();
    let on_disk: serde_json::Value =
        serde_json::from_slice(&stored(dir, &format!("{run}.json"))).unwrap();
    assert_eq!(receipt, on_disk);
    assert!(
        !transcripts(dir)
            .join(format!("{run}.response.partial"))
            .exists(),
        "a partial response was left behind"
    );
    let classify = run_env(dir, &["classify", "--run", run, "--format", "json"], &[]);
    let expected = if receipt["complete"] == true { 3 } else { 2 };
    classify.assert_code(expected);
    assert_no_key_anywhere(dir);
    receipt
}

#[test]
fn a_complete_response_is_captured_with_its_exchange() {
    for api in &APIS {
        let dir = tempdir();
        let body = recorded(api.complete);
        let server = Server::start(
            Reply::Whole {
                status: 200,
                body: body.clone(),
                stream: api.stream,
            },
            api.request_id_header,
        );
        let out = live(dir.path(), "run-1", &server, api, &[]);
        out.assert_code(0);
        let r = check_receipt(dir.path(), "run-1", &out);
        let what = api.format;
        assert_eq!(r["verdict"], "captured", "{what}");
        assert_eq!(r["format"], api.format, "{what}");
        assert_eq!(r["request_id"], "req_live1", "{what}");
        // A stream comes chunked, with no length to declare.
        let declared = (!api.stream).then_some(body.len() as u64);
        assert_eq!(r["declared_bytes"], serde_json::json!(declared), "{what}");
        assert_eq!(r["model"], api.model, "{what}");
        assert_eq!(r["completion_id"], api.completion_id, "{what}");
        assert_eq!(
            r["usage"],
            serde_json::json!({"input_tokens": 120, "output_tokens": 340, "total_tokens": 460}),
            "{what}"
        );
        let http = &r["http"];
        assert_eq!(http["provider"], api.provider, "{what}");
        assert_eq!(http["endpoint"], server.url.as_str(), "{what}");
        assert_eq!(http["model_requested"], "m-requested", "{what}");
        assert_eq!(http["stream"], api.stream, "{what}");
        assert_eq!(http["status"], 200, "{what}");
        assert_eq!(http["max_tokens"], 2048, "{what}");
        assert_eq!(http["request"]["file"], "run-1.request", "{what}");
        // The response as received, the patch taken out of it.
        assert_eq!(stored(dir.path(), "run-1.response"), body, "{what}");
        assert_eq!(stored(dir.path(), "run-1.patch"), patch(), "{what}");
        // The stored request is the request the server got.
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{what}");
        let rq = &seen[0];
        assert_eq!(stored(dir.path(), "run-1.request"), rq.body, "{what}");
        assert_eq!(rq.path, api.path, "{what}");
        let sent = rq.json();
        assert_eq!(sent["model"], "m-requested", "{what}");
        assert_eq!(sent[api.limit_field], 2048, "{what}");
        assert_eq!(sent["stream"], api.stream, "{what}");
        if api.provider == "openai-chat" {
            assert_eq!(
                sent["messages"][0]["content"],
                "Fix the off-by-one in backoff_ms.\n"
            );
            let usage = api
                .stream
                .then(|| serde_json::json!({"include_usage": true}));
            assert_eq!(sent.get("stream_options").cloned(), usage, "{what}");
        }
        if api.provider == "anthropic" {
            assert_eq!(rq.header("x-api-key"), Some(KEY), "{what}");
            assert_eq!(rq.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(rq.header("authorization"), None, "{what}");
        } else {
            let bearer = format!("Bearer {KEY}");
            assert_eq!(rq.header("authorization"), Some(bearer.as_str()), "{what}");
            assert_eq!(rq.header("x-api-key"), None, "{what}");
        }
    }
}

#[test]
fn a_response_cut_mid_body_is_incomplete_with_the_partial_body_kept() {
    for api in &APIS {
        let dir = tempdir();
        let body = recorded(api.complete);
        let half = body[..body.len() / 2].to_vec();
        let server = Server::start(
            Reply::Broken {
                declared: (!api.stream).then_some(body.len()),
                sent: half.clone(),
                pause: Duration::ZERO,
            },
            api.request_id_header,
        );
        let out = live(dir.path(), "run-1", &server, api, &[]);
        out.assert_code(2);
        let r = check_receipt(dir.path(), "run-1", &out);
        let what = api.format;
        assert_eq!(r["complete"], false, "{what}");
        assert_eq!(r["http"]["status"], 200, "{what}");
        assert_eq!(r["request_id"], "req_live1", "{what}");
        assert_eq!(r["reasons"][0]["code"], "transport_error", "{what}");
        let message = r["reasons"][0]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("the response stopped after {} bytes", half.len())),
            "{what}: {message}"
        );
        assert_eq!(stored(dir.path(), "run-1.response"), half, "{what}");
        // The reasons after the transport's are the body's own.
        assert!(codes(&r).len() > 1, "{what}: {:?}", codes(&r));
        // Capture said what to run instead of retrying.
        assert!(
            out.stderr
                .contains("--run run-1-retry1 --prompt-file prompt.txt"),
            "{what}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_content_length_past_the_body_is_incomplete() {
    for api in &APIS {
        let dir = tempdir();
        let body = recorded(api.complete);
        let server = Server::start(
            Reply::Broken {
                declared: Some(body.len() + 100),
                sent: body.clone(),
                pause: Duration::ZERO,
            },
            api.request_id_header,
        );
        let out = live(dir.path(), "run-1", &server, api, &[]);
        out.assert_code(2);
        let r = check_receipt(dir.path(), "run-1", &out);
        let what = api.format;
        assert_eq!(r["declared_bytes"], body.len() as u64 + 100, "{what}");
        assert_eq!(codes(&r), ["transport_error", "length_mismatch"], "{what}");
        assert_eq!(stored(dir.path(), "run-1.response"), body, "{what}");
        // The body is whole; only the exchange failed.
        assert_eq!(stored(dir.path(), "run-1.patch"), patch(), "{what}");
    }
}

#[test]
fn a_token_limit_stop_is_provider_truncated() {
    for api in &APIS {
        let dir = tempdir();
        let server = Server::start(
            Reply::Whole {
                status: 200,
                body: recorded(api.token_limit),
                stream: api.stream,
            },
            api.request_id_header,
        );
        let out = live(dir.path(), "run-1", &server, api, &[]);
        out.assert_code(2);
        let r = check_receipt(dir.path(), "run-1", &out);
        assert_eq!(codes(&r), ["provider_truncated"], "{}", api.format);
        // What a truncated response spent is still recorded.
        assert_eq!(r["usage"]["output_tokens"], 340, "{}", api.format);
    }
}

#[test]
fn an_error_status_is_incomplete_with_the_payload_message() {
    for api in &APIS {
        let dir = tempdir();
        let body = recorded(api.error_body);
        let server = Server::start(
            Reply::Whole {
                status: api.error_status,
                body: body.clone(),
                stream: api.stream,
            },
            api.request_id_header,
        );
        let out = live(dir.path(), "run-1", &server, api, &[]);
        out.assert_code(2);
        let r = check_receipt(dir.path(), "run-1", &out);
        let what = api.format;
        assert_eq!(r["http"]["status"], api.error_status, "{what}");
        assert_eq!(r["reasons"][0]["code"], "http_status", "{what}");
        assert_eq!(r["reasons"][0]["message"], api.error_message, "{what}");
        assert_eq!(r["request_id"], "req_live1", "{what}");
        assert_eq!(stored(dir.path(), "run-1.response"), body, "{what}");
        assert!(out.stderr.contains("--run run-1-retry1"), "{}", out.stderr);
    }
}

#[test]
fn a_stream_that_stalls_past_the_idle_timeout_is_cut() {
    // The six stalls run side by side: each waits out its timeout.
    std::thread::scope(|scope| {
        for api in &APIS {
            scope.spawn(move || {
                let dir = tempdir();
                let body = recorded(api.complete);
                let half = body[..body.len() / 2].to_vec();
                let server = Server::start(
                    Reply::Broken {
                        declared: (!api.stream).then_some(body.len()),
                        sent: half.clone(),
                        pause: Duration::from_secs(4),
                    },
                    api.request_id_header,
                );
                let started = Instant::now();
                let out = live(dir.path(), "run-1", &server, api, &["--idle-timeout", "1"]);
                let took = started.elapsed();
                out.assert_code(2);
                let what = api.format;
                assert!(took < Duration::from_secs(4), "{what}: took {took:?}");
                let r = check_receipt(dir.path(), "run-1", &out);
                assert_eq!(r["reasons"][0]["code"], "transport_error", "{what}");
                assert_eq!(
                    r["reasons"][0]["message"],
                    format!(
                        "the response stopped after {} bytes: nothing arrived for 1 s (`--idle-timeout`)",
                        half.len()
                    ),
                    "{what}"
                );
                assert_eq!(stored(dir.path(), "run-1.response"), half, "{what}");
            });
        }
    });
}

pub(crate) fn whole_server(api: &Api) -> Server {
    Server::start(
        Reply::Whole {
            status: 200,
            body: recorded(api.complete),
            stream: api.stream,
        },
        api.request_id_header,
    )
}

#[test]
fn without_a_token_budget_nothing_is_sent() {
    let dir = tempdir();
    let api = &APIS[0];
    let server = whole_server(api);
    write(&dir.path().join("prompt.txt"), "p\n");
    let out = run_env(
        dir.path(),
        &[
            "capture",
            "--run",
            "run-1",
            "--prompt-file",
            "prompt.txt",
            "--endpoint",
            &server.url,
            "--provider",
            "openai-chat",
            "--model",
            "m",
        ],
        &[("OPENAI_API_KEY", KEY)],
    );
    out.assert_code(64);
    assert!(out.stderr.contains("MODEL_TOKEN_BUDGET"), "{}", out.stderr);
    assert!(out.stderr.contains("--max-tokens"), "{}", out.stderr);
    assert!(server.seen().is_empty(), "the endpoint was contacted");
    assert!(!dir.path().join(".agent-ledger").exists());
    // An empty budget is no budget; a budget that is not a number is refused.
    for (budget, message) in [("", "no token budget"), ("lots", "`lots`")] {
        let out = run_env(
            dir.path(),
            &[
                "capture",
                "--run",
                "run-1",
                "--prompt-file",
                "prompt.txt",
                "--endpoint",
                &server.url,
                "--provider",
                "openai-chat",
                "--model",
                "m",
            ],
            &[("OPENAI_API_KEY", KEY), ("MODEL_TOKEN_BUDGET", budget)],
        );
        out.assert_code(64);
        assert!(out.stderr.contains(message), "{}", out.stderr);
    }
    assert!(server.seen().is_empty(), "the endpoint was contacted");
}

#[test]
fn without_a_key_nothing_is_sent() {
    let dir = tempdir();
    let api = &APIS[4];
    let server = whole_server(api);
    write(&dir.path().join("prompt.txt"), "p\n");
    let args = [
        "capture",
        "--run",
        "run-1",
        "--prompt-file",
        "prompt.txt",
        "--endpoint",
        &server.url,
        "--provider",
        "anthropic",
        "--model",
        "m",
        "--max-tokens",
        "100",
    ];
    // The OpenAI key is no Anthropic key.
    let out = run_env(dir.path(), &args, &[("OPENAI_API_KEY", KEY)]);
    out.assert_code(64);
    assert!(
        out.stderr
            .contains("the API key variable `ANTHROPIC_API_KEY` is not set"),
        "{}",
        out.stderr
    );
    let mut named = args.to_vec();
    named.extend(["--api-key-env", "MY_KEY"]);
    let out = run_env(dir.path(), &named, &[("MY_KEY", "")]);
    out.assert_code(64);
    assert!(out.stderr.contains("`MY_KEY` is empty"), "{}", out.stderr);
    assert!(server.seen().is_empty(), "the endpoint was contacted");
    assert!(!dir.path().join(".agent-ledger").exists());
    // With the key in the named variable, the call goes out.
    run_env(dir.path(), &named, &[("MY_KEY", KEY)]).assert_code(0);
    assert_eq!(server.seen()[0].header("x-api-key"), Some(KEY));
    assert_no_key_anywhere(dir.path());
}

#[test]
fn an_endpoint_that_would_expose_the_key_is_refused_before_sending() {
    let dir = tempdir();
    write(&dir.path().join("prompt.txt"), "p\n");
    for (endpoint, message) in [
        ("http://example.invalid/v1", "clear text"),
        ("https://user:pw@example.invalid/v1", "holds credentials"),
        ("https://example.invalid/v1?key=x", "query or fragment"),
    ] {
        let out = run_env(
            dir.path(),
            &[
                "capture",
                "--run",
                "run-1",
                "--prompt-file",
                "prompt.txt",
                "--endpoint",
                endpoint,
                "--provider",
                "openai-chat",
                "--model",
                "m",
                "--max-tokens",
                "10",
            ],
            &[("OPENAI_API_KEY", KEY)],
        );
        out.assert_code(64);
        assert!(out.stderr.contains(message), "{endpoint}: {}", out.stderr);
        assert!(!out.stderr.contains(":pw@"), "{}", out.stderr);
    }
    assert!(!dir.path().join(".agent-ledger").exists());
}

#[test]
fn the_capture_table_supplies_defaults_and_flags_and_the_budget_win() {
    let dir = tempdir();
    let api = &APIS[3];
    let server = whole_server(api);
    write(
        &dir.path().join("agent-ledger.toml"),
        format!(
            "schema = 1\n[capture]\nendpoint = \"{}\"\nprovider = \"openai-responses\"\nmodel = \"m-config\"\nstream = true\napi_key_env = \"TEAM_KEY\"\nmax_tokens = 111\nconnect_timeout = 5\nidle_timeout = 30\n",
            server.url
        ),
    );
    write(&dir.path().join("prompt.txt"), "p\n");
    let base = ["capture", "--prompt-file", "prompt.txt", "--format", "json"];
    let key = ("TEAM_KEY", KEY);
    // (run, --max-tokens, MODEL_TOKEN_BUDGET, the limit sent)
    let cases = [
        ("a", None, None, 111),
        ("b", None, Some("222"), 222),
        ("c", Some("333"), Some("222"), 333),
    ];
    for (i, (run, flag, budget, max)) in cases.into_iter().enumerate() {
        let mut args = base.to_vec();
        args.extend(["--run", run]);
        if let Some(n) = flag {
            args.extend(["--max-tokens", n]);
        }
        let mut env = vec![key];
        if let Some(n) = budget {
            env.push(("MODEL_TOKEN_BUDGET", n));
        }
        let out = run_env(dir.path(), &args, &env);
        out.assert_code(0);
        let r = check_receipt(dir.path(), run, &out);
        assert_eq!(r["format"], "openai-responses-sse");
        assert_eq!(r["http"]["model_requested"], "m-config");
        assert_eq!(r["http"]["max_tokens"], max);
        assert_eq!(server.seen()[i].json()["max_output_tokens"], max);
    }
    // `--no-stream` overrides `stream = true`.
    let mut args = base.to_vec();
    args.extend(["--run", "d", "--no-stream", "--max-tokens", "9"]);
    let out = run_env(dir.path(), &args, &[key]);
    assert_eq!(out.json()["format"], "openai-responses");
    assert_eq!(server.seen()[3].json()["stream"], false);
}

#[test]
fn a_configuration_holding_a_key_is_refused() {
    let dir = tempdir();
    write(
        &dir.path().join("agent-ledger.toml"),
        format!("schema = 1\n[capture]\napi_key = \"{KEY}\"\n"),
    );
    write(&dir.path().join("prompt.txt"), "p\n");
    let out = run_env(
        dir.path(),
        &["capture", "--run", "r", "--prompt-file", "prompt.txt"],
        &[],
    );
    out.assert_code(65);
    assert!(
        out.stderr.contains("never holds an API key"),
        "{}",
        out.stderr
    );
}

#[test]
fn exactly_one_of_body_and_prompt_file() {
    let dir = tempdir();
    write(&dir.path().join("prompt.txt"), "p\n");
    let body = fixture("capture/complete-multifile.diff");
    let body = body.to_str().unwrap();
    for args in [
        &["capture", "--run", "r"][..],
        &[
            "capture",
            "--run",
            "r",
            "--body",
            body,
            "--prompt-file",
            "prompt.txt",
        ],
        &[
            "capture",
            "--run",
            "r",
            "--body",
            body,
            "--endpoint",
            "https://h/v1",
        ],
        &[
            "capture",
            "--run",
            "r",
            "--prompt-file",
            "prompt.txt",
            "--declared-bytes",
            "3",
        ],
    ] {
        let out = run_env(dir.path(), args, &[]);
        out.assert_code(64);
        assert!(out.stderr.contains("--"), "{args:?}: {}", out.stderr);
    }
    // A budget in the environment does not get in the way of a body file.
    run_env(
        dir.path(),
        &["capture", "--run", "r", "--body", body],
        &[("MODEL_TOKEN_BUDGET", "5")],
    )
    .assert_code(0);
}

#[test]
fn a_run_id_is_never_sent_twice() {
    let dir = tempdir();
    let api = &APIS[0];
    let server = whole_server(api);
    live(dir.path(), "run-1", &server, api, &[]).assert_code(0);
    let out = live(dir.path(), "run-1", &server, api, &[]);
    out.assert_code(73);
    assert!(
        out.stderr.contains("a retry is a new run id"),
        "{}",
        out.stderr
    );
    assert_eq!(server.seen().len(), 1, "the second capture sent a request");
    // A run whose capture died mid-stream keeps its id too.
    std::fs::write(transcripts(dir.path()).join("run-2.response.partial"), b"x").unwrap();
    live(dir.path(), "run-2", &server, api, &[]).assert_code(73);
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn a_tampered_live_receipt_is_refused() {
    let dir = tempdir();
    let api = &APIS[0];
    let server = Server::start(
        Reply::Whole {
            status: 429,
            body: recorded(api.error_body),
            stream: false,
        },
        api.request_id_header,
    );
    live(dir.path(), "run-1", &server, api, &[]).assert_code(2);
    let path = transcripts(dir.path()).join("run-1.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let tamper = |from: &str, to: &str| {
        assert!(original.contains(from), "{from}");
        std::fs::write(&path, original.replace(from, to)).unwrap();
        let out = run_env(dir.path(), &["classify", "--run", "run-1"], &[]);
        out.assert_code(65);
        out.stderr
    };
    // A status that hides the error, and a request that is not the one sent.
    let err = tamper("\"status\": 429", "\"status\": 200");
    assert!(err.contains("do not agree"), "{err}");
    std::fs::write(
        transcripts(dir.path()).join("run-1.request"),
        b"{\"model\":\"other\"}\n",
    )
    .unwrap();
    let err = tamper("\"status\": 429", "\"status\": 429");
    assert!(err.contains("run-1.request"), "{err}");
}

#[test]
fn file_capture_reports_model_completion_id_and_usage() {
    let dir = tempdir();
    for (i, api) in APIS.iter().enumerate() {
        let run = format!("f{i}");
        let body = fixture(&format!("live/{}", api.complete));
        let out = run_env(
            dir.path(),
            &[
                "capture",
                "--run",
                &run,
                "--body",
                body.to_str().unwrap(),
                "--body-format",
                api.format,
                "--format",
                "json",
            ],
            &[],
        );
        out.assert_code(0);
        let r = out.json();
        assert_eq!(r["model"], api.model, "{}", api.format);
        assert_eq!(r["completion_id"], api.completion_id, "{}", api.format);
        assert_eq!(r["usage"]["total_tokens"], 460, "{}", api.format);
        assert!(r.get("http").is_none(), "{}", api.format);
        run_env(dir.path(), &["classify", "--run", &run], &[]).assert_code(3);
    }
}

#[test]
fn a_connection_that_never_opens_is_an_incomplete_receipt() {
    let dir = tempdir();
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = Server {
        url: format!("http://127.0.0.1:{port}/v1"),
        seen: Arc::default(),
        tiny: None,
    };
    let out = live(dir.path(), "run-1", &server, &APIS[1], &[]);
    out.assert_code(2);
    let r = check_receipt(dir.path(), "run-1", &out);
    assert_eq!(r["http"]["status"], serde_json::Value::Null);
    assert_eq!(r["reasons"][0]["code"], "transport_error");
    let message = r["reasons"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("no response arrived: "), "{message}");
    assert_eq!(r["response"]["bytes"], 0);
    assert!(out.stderr.contains("--run run-1-retry1"), "{}", out.stderr);
}

#[test]
fn live_runs_verify_offline_from_the_ledger_and_from_an_archive() {
    let dir = tempdir();
    let api = &APIS[5];
    let status = Server::start(
        Reply::Whole {
            status: api.error_status,
            body: recorded(api.error_body),
            stream: true,
        },
        api.request_id_header,
    );
    live(dir.path(), "run-1", &status, api, &[]).assert_code(2);
    let body = recorded(api.complete);
    let cut = Server::start(
        Reply::Broken {
            declared: None,
            sent: body[..body.len() / 3].to_vec(),
            pause: Duration::ZERO,
        },
        api.request_id_header,
    );
    live(dir.path(), "run-2", &cut, api, &[]).assert_code(2);
    for run in ["run-1", "run-2"] {
        run_env(dir.path(), &["classify", "--run", run], &[]).assert_code(2);
    }
    // Every run in the ledger: the stored requests are not runs of their own.
    let out = run_env(dir.path(), &["verify", "--format", "json"], &[]);
    out.assert_code(0);
    assert_eq!(
        out.stdout.matches("\"run_id\"").count(),
        2,
        "{}",
        out.stdout
    );
    run_env(
        dir.path(),
        &["pack", "--run", "run-1", "--run", "run-2", "-o", "runs.tar"],
        &[],
    )
    .assert_code(0);
    std::fs::remove_dir_all(dir.path().join(".agent-ledger")).unwrap();
    run_env(dir.path(), &["verify", "runs.tar"], &[]).assert_code(0);
    assert_no_key_anywhere(dir.path());
}

// A server that quotes the key back (an echoing proxy, an error message
// that repeats it) must not get it into the ledger either.
#[test]
fn a_key_the_server_sends_back_is_masked_and_reported() {
    let dir = tempdir();
    let api = &APIS[0];
    let body = format!(
        "{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}.\",\"type\":\"invalid_request_error\"}}}}\n"
    );
    let server = Server::start(
        Reply::Whole {
            status: 401,
            body: body.clone().into_bytes(),
            stream: false,
        },
        api.request_id_header,
    );
    let out = live(dir.path(), "run-1", &server, api, &[]);
    out.assert_code(2);
    let r = check_receipt(dir.path(), "run-1", &out);
    let masked = "*".repeat(KEY.len());
    assert_eq!(
        codes(&r)[..2],
        ["http_status", "api_key_echoed"],
        "{:?}",
        codes(&r)
    );
    assert_eq!(
        r["reasons"][0]["message"],
        format!("the server answered HTTP 401 Unauthorized: Incorrect API key provided: {masked}.")
    );
    assert_eq!(
        stored(dir.path(), "run-1.response"),
        body.replace(KEY, &masked).into_bytes()
    );
    // The masked body's length still matches what the server declared.
    assert_eq!(r["declared_bytes"], body.len() as u64);
}

// https goes through rustls (with its bundled roots): a server that does
// not speak TLS is a transport error in the receipt, not a crash.
#[test]
fn an_https_endpoint_that_fails_the_handshake_is_a_transport_error() {
    let dir = tempdir();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut hello = [0u8; 512];
        let _ = stream.read(&mut hello);
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
    });
    let server = Server {
        url: format!("https://127.0.0.1:{port}/v1"),
        seen: Arc::default(),
        tiny: None,
    };
    let out = live(dir.path(), "run-1", &server, &APIS[0], &[]);
    out.assert_code(2);
    let r = check_receipt(dir.path(), "run-1", &out);
    assert_eq!(r["http"]["status"], serde_json::Value::Null);
    assert_eq!(r["reasons"][0]["code"], "transport_error");
}

#[test]
fn a_prompt_that_cannot_be_read_is_refused_before_sending() {
    let dir = tempdir();
    let api = &APIS[0];
    let server = whole_server(api);
    write(&dir.path().join("latin1.txt"), b"caf\xe9\n");
    for (prompt, code, message) in [
        ("missing.txt", 66, "`missing.txt`"),
        ("latin1.txt", 65, "the prompt is not UTF-8"),
    ] {
        let out = run_env(
            dir.path(),
            &[
                "capture",
                "--run",
                "run-1",
                "--prompt-file",
                prompt,
                "--endpoint",
                &server.url,
                "--provider",
                "openai-chat",
                "--model",
                "m",
                "--max-tokens",
                "10",
            ],
            &[("OPENAI_API_KEY", KEY)],
        );
        out.assert_code(code);
        assert!(out.stderr.contains(message), "{}", out.stderr);
    }
    assert!(server.seen().is_empty(), "the endpoint was contacted");
    assert!(!dir.path().join(".agent-ledger").exists());
}

// The key comes back in the forms a response can carry it: with some
// characters `\u`-escaped in a JSON string (every format), and split
// across two SSE events that the extractor joins (every stream). Nothing
// stored, printed or packed holds it, and each copy is reported.
#[test]
fn a_key_sent_back_escaped_or_split_across_events_is_masked_and_reported() {
    let escaped = format!(
        "\\u0073{}\\n",
        KEY[1..].replace('-', "\\u002d").replace('/', "\\/")
    );
    for api in &APIS {
        let dir = tempdir();
        let mut body = String::from_utf8(recorded(api.complete)).unwrap();
        let at = body.find("diff --git a/README.md").unwrap();
        body.insert_str(at, &escaped);
        let mut copies = 1;
        if api.stream {
            let end = body.find("..044\"").unwrap() + "..044".len();
            body.insert_str(end, &KEY[..12]);
            let start = body.find("\"5e6d 100644").unwrap() + 1;
            body.insert_str(start, &KEY[12..]);
            copies += 1;
        }
        assert!(!body.contains(KEY), "the literal key is not what is tested");
        let server = Server::start(
            Reply::Whole {
                status: 200,
                body: body.into_bytes(),
                stream: api.stream,
            },
            api.request_id_header,
        );
        let out = live(dir.path(), "run-1", &server, api, &[]);
        let r = check_receipt(dir.path(), "run-1", &out);
        let echoed: Vec<&serde_json::Value> = r["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["code"] == "api_key_echoed")
            .collect();
        assert_eq!(echoed.len(), 1, "{}: {r:#}", api.format);
        assert!(
            echoed[0]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("({copies} copies")),
            "{}: {r:#}",
            api.format
        );
        assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
        let response = String::from_utf8(stored(dir.path(), "run-1.response")).unwrap();
        assert!(!response.contains("\\u0073k"), "{}: {response}", api.format);
        assert!(!response.contains(&KEY[..12]), "{}", api.format);
        run_env(
            dir.path(),
            &["pack", "--run", "run-1", "-o", "run.tar"],
            &[],
        )
        .assert_code(0);
        assert_no_key_anywhere(dir.path());
    }
}

// A server that gzips its body unasked sent the key in bytes no masking
// layer could read; the ledger kept them (gunzip gave the key back) and the
// receipt said nothing of the key.
#[test]
fn a_body_encoded_unasked_is_not_stored_and_the_capture_is_incomplete() {
    use std::io::Write as _;
    let api = APIS.iter().find(|a| !a.stream).unwrap();
    let plain = String::from_utf8(recorded(api.complete)).unwrap().replace(
        "diff --git a/README.md",
        &format!("{KEY} diff --git a/README.md"),
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(plain.as_bytes()).unwrap();
    let gzipped = gz.finish().unwrap();
    let dir = tempdir();
    let server = Server::start(
        Reply::Encoded {
            body: gzipped.clone(),
            encoding: "gzip",
        },
        api.request_id_header,
    );
    let out = live(dir.path(), "run-1", &server, api, &[]);
    out.assert_code(2);
    assert_eq!(
        server.seen()[0].header("accept-encoding"),
        Some("identity"),
        "the request must ask for the body as it is"
    );
    let r = check_receipt(dir.path(), "run-1", &out);
    let reasons = r["reasons"].to_string();
    assert!(reasons.contains("`gzip`"), "{r:#}");
    let response =
        std::fs::read(transcripts(dir.path()).join("run-1.response")).unwrap_or_default();
    assert!(
        !response
            .windows(16)
            .any(|w| gzipped.windows(16).any(|g| g == w)),
        "the encoded body was stored"
    );
    assert_no_key_anywhere(dir.path());
}

// A server that sends a byte every 200 ms never trips `--idle-timeout`;
// `--total-timeout` cuts it, and the receipt says which limit did.
#[test]
fn a_server_that_trickles_bytes_is_cut_at_the_total_deadline() {
    let dir = tempdir();
    let api = &APIS[0];
    let server = Server::start(
        Reply::Trickle {
            body: recorded(api.complete),
            every: Duration::from_millis(200),
        },
        api.request_id_header,
    );
    let out = live(
        dir.path(),
        "run-1",
        &server,
        api,
        &["--idle-timeout", "60", "--total-timeout", "2"],
    );
    out.assert_code(2);
    let r = check_receipt(dir.path(), "run-1", &out);
    assert_eq!(codes(&r)[0], "transport_error", "{r:#}");
    let message = r["reasons"][0]["message"].as_str().unwrap();
    assert!(message.contains("`--total-timeout`"), "{message}");
    assert!(message.contains("within 2 s"), "{message}");
}
