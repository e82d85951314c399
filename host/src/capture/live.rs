//! Live capture: send a prompt to a model endpoint and capture what comes
//! back. The response is written to the ledger as it arrives and is then
//! judged exactly as a body file in the provider's format would be
//! (`capture::judge`); the receipt adds the HTTP exchange.
//!
//! This is the only code in agent-ledger that opens a network connection,
//! and the only code that holds an API key. The key goes into one request
//! header and nowhere else: not the stored request, the receipt, an error
//! or a debug print. There is no retry: a second attempt is a new run id.

use super::secret;
use super::{CaptureInput, Exchange, Files, read_stored, record};
use crate::config::CaptureConfig;
use crate::exit::{Error, Result};
use crate::input::BODY_CAP;
use crate::ledger::{Growing, Ledger, RunId, write_new};
use crate::provider::{self, Provider};
use crate::record::ReasonCode;
use crate::record::{HttpExchange, Reason, TranscriptReceipt};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

mod settings;

pub use settings::{Flags, Settings, settings};

/// The live-capture reason codes, in the order they lead a receipt's reasons.
const LIVE_CODES: [ReasonCode; 3] = [
    ReasonCode::HttpStatus,
    ReasonCode::TransportError,
    ReasonCode::ApiKeyEchoed,
];

/// The environment variable `--max-tokens` defaults to.
pub const TOKEN_BUDGET_ENV: &str = "MODEL_TOKEN_BUDGET";
pub const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 10;
/// Long enough for a model that thinks before its first byte (a response
/// that is not streamed arrives all at once, at the end).
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 300;
/// The whole exchange, from resolving the host to the body's last byte: a
/// server that trickles bytes never trips the idle limit, and this stops
/// it. Long enough for a long answer streamed slowly.
pub const DEFAULT_TOTAL_TIMEOUT_SECS: u64 = 1200;
/// The `anthropic-version` header the Messages API requires.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// An API key read from the environment. Its `Debug` never shows it.
pub struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ApiKey {
    /// Reads the key from the variable `name`; nothing is sent without one.
    pub fn from_env(name: &str) -> Result<ApiKey> {
        let refuse = |why: &str| {
            Err(Error::Usage(format!(
                "the API key variable `{name}` {why}; no request was sent (name another variable with `--api-key-env`)"
            )))
        };
        match std::env::var_os(name) {
            None => refuse("is not set"),
            Some(v) if v.is_empty() => refuse("is empty"),
            Some(v) => match v.into_string() {
                // A header carries visible ASCII only; saying which byte is
                // wrong would print part of the key.
                Ok(key) if key.bytes().all(|b| b.is_ascii_graphic()) => Ok(ApiKey(key)),
                _ => refuse("holds characters an HTTP header cannot carry"),
            },
        }
    }
}

/// The API base a provider's path is appended to (`https://host/v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    base: String,
    /// Plain `http` to this machine: allowed (a local server), and never
    /// sent through a proxy from the environment.
    plain_loopback: bool,
}

impl Endpoint {
    /// Parses an endpoint. Refused: anything but `https`, or `http` to a
    /// loopback address (the key would cross the network in clear text);
    /// credentials, a query or a fragment (the endpoint is recorded, and the
    /// key comes from the environment only). A refusal never repeats a
    /// URL that holds credentials.
    pub fn parse(text: &str) -> std::result::Result<Endpoint, String> {
        let shown = if text.contains('@') {
            "the URL (not shown: it holds credentials)".to_string()
        } else {
            format!("`{text}`")
        };
        if text.contains('#') || text.contains('?') {
            return Err(format!(
                "{shown} has a query or fragment; give the API base only (`https://host/v1`)"
            ));
        }
        let uri: ureq::http::Uri = text
            .parse()
            .ok()
            .filter(|_| text.contains("://"))
            .ok_or_else(|| format!("{shown} is not an absolute URL (`https://host/v1`)"))?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(format!(
                "{shown} is not an absolute URL (`https://host/v1`)"
            ));
        };
        if authority.as_str().contains('@') {
            return Err(format!(
                "{shown} holds credentials; the key comes from the environment (`--api-key-env`)"
            ));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        match scheme {
            "https" => {}
            "http" if loopback => {}
            "http" => {
                return Err(format!(
                    "{shown} is plain http to another machine, which would send the API key in clear text: use https"
                ));
            }
            other => return Err(format!("{shown} has scheme `{other}`: use https")),
        }
        Ok(Endpoint {
            base: format!(
                "{scheme}://{}{}",
                authority.as_str(),
                uri.path().trim_end_matches('/')
            ),
            plain_loopback: scheme == "http",
        })
    }

    pub fn as_str(&self) -> &str {
        &self.base
    }

    /// The URL a provider's request goes to.
    fn url(&self, provider: Provider) -> String {
        let path = match provider {
            Provider::OpenaiChat => "/chat/completions",
            Provider::OpenaiResponses => "/responses",
            Provider::Anthropic => "/messages",
        };
        format!("{}{path}", self.base)
    }
}

/// One call to a model.
#[derive(Debug)]
pub struct Call<'a> {
    pub run: &'a RunId,
    pub provider: Provider,
    pub endpoint: &'a Endpoint,
    pub model: &'a str,
    pub stream: bool,
    pub key: &'a ApiKey,
    /// The output token limit sent with the request.
    pub max_tokens: u64,
    /// Limit on resolving the host and opening the connection (TLS
    /// handshake included).
    pub connect_timeout: Duration,
    /// Limit on any one wait for bytes (the response head, each chunk of
    /// the body) and on any one write of the request.
    pub idle_timeout: Duration,
    /// Limit on the whole exchange, the body's last byte included.
    pub total_timeout: Duration,
    pub prompt: &'a str,
    /// The envelope to take the diff out of the answer (`--extract`).
    pub extract: Option<crate::envelope::Extract>,
    /// The agent's tool-call trace, stored beside the transcript.
    pub trace: Option<&'a [u8]>,
    /// How the trace was authenticated (`None`: it has no begin line).
    pub trace_auth: Option<crate::record::TraceAuth>,
    pub captured_at: String,
    /// The repository, for people (`git::Repo::display_name`).
    pub repository: Option<String>,
}

/// The request body for `provider`. Chat Completions gets
/// `max_completion_tokens` (the field OpenAI documents; `max_tokens` is
/// deprecated there and refused by its reasoning models) and, when
/// streaming, `stream_options.include_usage` so that the usage arrives.
pub fn request_body(
    provider: Provider,
    model: &str,
    prompt: &str,
    max_tokens: u64,
    stream: bool,
) -> Vec<u8> {
    use serde_json::json;
    let messages = json!([{ "role": "user", "content": prompt }]);
    let body = match provider {
        Provider::OpenaiChat => {
            let mut body = json!({
                "model": model,
                "messages": messages,
                "max_completion_tokens": max_tokens,
                "stream": stream,
            });
            if stream {
                body["stream_options"] = json!({ "include_usage": true });
            }
            body
        }
        Provider::OpenaiResponses => json!({
            "model": model,
            "input": prompt,
            "max_output_tokens": max_tokens,
            "stream": stream,
        }),
        Provider::Anthropic => json!({
            "model": model,
            "max_tokens": max_tokens,
            "messages": messages,
            "stream": stream,
        }),
    };
    let mut bytes = serde_json::to_vec_pretty(&body).expect("a JSON value serialises");
    bytes.push(b'\n');
    bytes
}

/// Sends the prompt and captures the response. Before anything is sent
/// the run's files must all be free and the request is stored
/// (`ID.request`); the response streams into `ID.response.partial`,
/// which becomes `ID.response` when the exchange ends, however it ends;
/// then the patch and, last, the receipt are written. A transport failure
/// or an error status is a receipt marked incomplete, never an error of
/// the command; an error here is the ledger's (exit 73 or 74).
pub fn capture(ledger: &Ledger, call: Call<'_>) -> Result<TranscriptReceipt> {
    let files = Files::new(ledger, call.run);
    ledger.create()?;
    files.check_free()?;
    let request = request_body(
        call.provider,
        call.model,
        call.prompt,
        call.max_tokens,
        call.stream,
    );
    write_new(&files.dir.join(&files.request), &request)?;
    let mut sink = Growing::create(
        &files.dir.join(&files.partial),
        &files.dir.join(&files.response),
    )?;
    let mut received = exchange(&call, &request, &mut sink)?;
    // The literal copies were masked as the bytes arrived; now the copies
    // only decoding shows (escaped, split across events), and, failing
    // closed, anything the extractor would still find.
    let key = call.key.0.as_bytes();
    let decoded = secret::mask_decoded(&mut received.body, key);
    let whole = secret::still_in(call.provider.body_format(call.stream), &received.body, key);
    if whole {
        received.body.fill(b'*');
    }
    received.key_echoed += decoded + usize::from(whole);
    if decoded > 0 || whole {
        sink.rewrite(&received.body)?;
    }
    sink.finish()?;
    let mut reasons = Vec::new();
    if let Some(status) = received.status.filter(|s| !(200..300).contains(s)) {
        reasons.push(Reason::new(
            ReasonCode::HttpStatus,
            status_message(status, &received.body),
        ));
    }
    if let Some(message) = received.transport_error {
        reasons.push(Reason::new(ReasonCode::TransportError, message));
    }
    if received.key_echoed > 0 {
        reasons.push(Reason::new(
            ReasonCode::ApiKeyEchoed,
            format!(
                "the server sent the API key back ({} copies, literal, escaped or split across events); each is stored masked with `*`{}: rotate the key",
                received.key_echoed,
                if whole {
                    " (one in a form that could not be located: the whole response is stored masked)"
                } else {
                    ""
                }
            ),
        ));
    }
    let http = HttpExchange {
        provider: call.provider,
        endpoint: call.endpoint.as_str().into(),
        model_requested: call.model.into(),
        stream: call.stream,
        status: received.status,
        max_tokens: call.max_tokens,
        request: files.stored(&files.request, &request),
    };
    record(
        &files,
        CaptureInput {
            run: call.run,
            format: call.provider.body_format(call.stream),
            extract: call.extract,
            body: &received.body,
            declared_bytes: received.declared_bytes,
            request_id: received.request_id,
            trace: call.trace,
            trace_auth: call.trace_auth,
            captured_at: call.captured_at,
            access: crate::ledger::Access::Shared,
            git: None,
            repository: call.repository,
        },
        Some(Exchange { http, reasons }),
    )
}

/// What came back, as far as it came.
#[derive(Default)]
struct Received {
    status: Option<u16>,
    request_id: Option<String>,
    declared_bytes: Option<u64>,
    body: Vec<u8>,
    transport_error: Option<String>,
    /// Copies of the key masked in what the server sent.
    key_echoed: usize,
}

/// Makes the request and streams the body into `sink` (and memory, for
/// the judgement). Only a failure to write `sink` is an error.
fn exchange(call: &Call<'_>, request: &[u8], sink: &mut Growing) -> Result<Received> {
    let mut config = ureq::Agent::config_builder()
        // An error status is an answer to record, with its payload.
        .http_status_as_error(false)
        // A redirect would carry the key somewhere the operator did not name.
        .max_redirects(0)
        .timeout_resolve(Some(call.connect_timeout))
        .timeout_connect(Some(call.connect_timeout))
        .timeout_per_read(Some(call.idle_timeout))
        .timeout_per_write(Some(call.idle_timeout))
        .timeout_global(Some(call.total_timeout))
        .user_agent(concat!("agent-ledger/", env!("CARGO_PKG_VERSION")));
    if call.endpoint.plain_loopback {
        config = config.proxy(None);
    }
    let agent = ureq::Agent::new_with_config(config.build());
    let mut req = agent
        .post(call.endpoint.url(call.provider))
        .header("content-type", "application/json")
        // The body is masked as the bytes it is: a compressed one would
        // carry the key where no layer of `secret` can see it.
        .header("accept-encoding", "identity")
        .header(
            "accept",
            if call.stream {
                "text/event-stream"
            } else {
                "application/json"
            },
        );
    req = match call.provider {
        Provider::Anthropic => req
            .header("x-api-key", call.key.0.as_str())
            .header("anthropic-version", ANTHROPIC_VERSION),
        Provider::OpenaiChat | Provider::OpenaiResponses => {
            req.header("authorization", format!("Bearer {}", call.key.0))
        }
    };
    let mut received = Received::default();
    let started = std::time::Instant::now();
    let response = match req.send(request) {
        Ok(r) => r,
        Err(e) => {
            let message = format!("no response arrived: {}", describe(&e, call));
            received.transport_error = Some(secret::mask_text(
                message,
                &call.key.0,
                &mut received.key_echoed,
            ));
            return Ok(received);
        }
    };
    received.status = Some(response.status().as_u16());
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    received.request_id = header("x-request-id")
        .or_else(|| header("request-id"))
        .map(|id| secret::mask_text(id, &call.key.0, &mut received.key_echoed));
    received.declared_bytes = header("content-length").and_then(|v| v.parse().ok());
    // Asked for `identity`, a server that encodes the body anyway (gzip,
    // br, ...) sends bytes the key could hide in: none of them is stored.
    // Every value of either header counts, and one that is not text is an
    // encoding too.
    let encoded = ["content-encoding", "transfer-encoding"]
        .into_iter()
        .flat_map(|name| {
            response
                .headers()
                .get_all(name)
                .iter()
                .map(move |v| (name, v))
        })
        .find_map(|(name, v)| {
            let Ok(text) = v.to_str() else {
                return Some(String::from_utf8_lossy(v.as_bytes()).into_owned());
            };
            let plain = |c: &str| {
                let c = c.trim().to_ascii_lowercase();
                c == "identity" || c.is_empty() || (name == "transfer-encoding" && c == "chunked")
            };
            (!text.split(',').all(plain)).then(|| text.trim().to_string())
        });
    if let Some(encoding) = encoded {
        let encoding = secret::mask_text(encoding, &call.key.0, &mut received.key_echoed);
        received.transport_error = Some(format!(
            "the server sent its body encoded as `{encoding}` after being asked for `Accept-Encoding: identity`; the body is not stored (the API key could not be masked in it)"
        ));
        return Ok(received);
    }
    // Unlimited in ureq; the cap is ours, so the bytes past it are counted
    // as a cut rather than an error of the command.
    let mut reader = response.into_body().into_reader();
    let mut buf = vec![0u8; 64 << 10];
    let mut masker = secret::Masker::new(call.key.0.as_bytes());
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                sink.write(masker.push(&mut received.body, &buf[..n]))?;
                // ureq checks the deadline at each read; this holds it
                // whatever a read returns.
                if started.elapsed() > call.total_timeout {
                    received.transport_error = Some(format!(
                        "the response stopped after {} bytes: it did not finish within {} s (`--total-timeout`)",
                        received.body.len(),
                        call.total_timeout.as_secs()
                    ));
                    break;
                }
                if received.body.len() as u64 > BODY_CAP {
                    received.transport_error = Some(format!(
                        "stopped reading after {} bytes: the response passed the {BODY_CAP}-byte cap",
                        received.body.len()
                    ));
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let why = match e.get_ref().and_then(|e| e.downcast_ref::<ureq::Error>()) {
                    Some(inner) => describe(inner, call),
                    None => e.to_string(),
                };
                received.transport_error = Some(format!(
                    "the response stopped after {} bytes: {why}",
                    received.body.len()
                ));
                break;
            }
        }
    }
    sink.write(masker.finish(&received.body))?;
    received.key_echoed += masker.found;
    received.transport_error = received
        .transport_error
        .map(|m| secret::mask_text(m, &call.key.0, &mut received.key_echoed));
    Ok(received)
}

/// A transport failure in words, naming the flag of a timeout.
fn describe(e: &ureq::Error, call: &Call<'_>) -> String {
    use ureq::Timeout;
    match e {
        ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect) => format!(
            "could not connect within {} s (`--connect-timeout`)",
            call.connect_timeout.as_secs()
        ),
        ureq::Error::Timeout(Timeout::PerRead | Timeout::PerWrite) => format!(
            "nothing arrived for {} s (`--idle-timeout`)",
            call.idle_timeout.as_secs()
        ),
        ureq::Error::Timeout(Timeout::Global | Timeout::PerCall | Timeout::RecvBody) => format!(
            "it did not finish within {} s (`--total-timeout`)",
            call.total_timeout.as_secs()
        ),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the server closed the connection".into()
        }
        other => other.to_string(),
    }
}

fn status_message(status: u16, body: &[u8]) -> String {
    let mut message = format!("the server answered HTTP {status}");
    if let Some(phrase) = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        message.push(' ');
        message.push_str(phrase);
    }
    if let Some(payload) = provider::error_message(body) {
        message.push_str(": ");
        message.push_str(&payload);
    }
    message
}

/// Checks a receipt's `http` field against its reasons and returns how
/// many leading reasons are the exchange's own (`LIVE_CODES`), which a
/// re-judgement of the bytes cannot find.
/// The stored request must be intact, the format must be the provider's,
/// and `http_status` must be there exactly when the status is not 2xx.
pub(super) fn check_exchange(path: &Path, receipt: &TranscriptReceipt) -> Result<usize> {
    let leading = receipt
        .reasons
        .iter()
        .take_while(|r| LIVE_CODES.contains(&r.code))
        .count();
    let Some(http) = &receipt.http else {
        return match receipt.reasons.first() {
            Some(r) if leading > 0 => Err(Error::data(
                path,
                format!(
                    "reason `{}` belongs to a live capture, but field `http` is absent",
                    r.code
                ),
            )),
            _ => Ok(0),
        };
    };
    read_stored(path, &http.request)?;
    let provider = http.provider;
    if provider.body_format(http.stream) != receipt.format {
        return Err(Error::data(
            path,
            "field `format` is not the format of `http.provider` and `http.stream`",
        ));
    }
    let count = |c: ReasonCode| {
        receipt.reasons[..leading]
            .iter()
            .filter(|r| r.code == c)
            .count()
    };
    let failed_status = http.status.is_some_and(|s| !(200..300).contains(&s));
    let transport = count(ReasonCode::TransportError);
    if count(ReasonCode::HttpStatus) != usize::from(failed_status)
        || transport > 1
        || count(ReasonCode::ApiKeyEchoed) > 1
        || (http.status.is_none() && transport == 0)
    {
        return Err(Error::data(
            path,
            "field `http.status` and the reasons `http_status`, `transport_error` and `api_key_echoed` do not agree",
        ));
    }
    Ok(leading)
}

#[cfg(test)]
mod tests;
