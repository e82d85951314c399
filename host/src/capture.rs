//! Capture: judge a model response body and store it with its transcript
//! receipt. The judgement is a pure function of the bytes, the format and the
//! declared length, so classify and verify can re-run it on the stored body.
//! A body comes from a file (`capture`) or from a model called by `live`,
//! the only code in agent-ledger that opens a connection.

pub mod live;
mod secret;

use crate::diff;
use crate::digest::sha256_hex;
use crate::envelope::{self, Extract};
use crate::exit::{Error, Result};
use crate::ledger::{self, Ledger, RETRY_HINT, RunId};
use crate::provider::{self, BodyFormat};
use crate::record::ReasonCode;
use crate::record::{
    CaptureVerdict, HttpExchange, Reason, SCHEMA, StoredFile, TokenUsage, TranscriptReceipt,
};
use std::path::PathBuf;

/// The outcome of judging one body.
#[derive(Debug)]
pub struct BodyJudgement {
    /// The patch text taken from the body.
    pub patch: Vec<u8>,
    /// Empty when the body is a complete patch.
    pub reasons: Vec<Reason>,
    /// The `git apply -p` level the patch needs.
    pub strip: u32,
    /// The envelope the patch was taken out of (`mbox`, `patch-tags`,
    /// `fence`).
    pub envelope: Option<crate::record::PatchEnvelope>,
    /// Irregularities that lose nothing.
    pub notes: Vec<Reason>,
    /// What the response says about itself (see `provider::Extracted`).
    pub model: Option<String>,
    pub completion_id: Option<String>,
    pub usage: Option<TokenUsage>,
}

/// Judges `body` as a response in `format` whose server declared
/// `declared_bytes`, taking the diff out of the envelope `extract` names.
pub fn judge(
    format: BodyFormat,
    body: &[u8],
    declared_bytes: Option<u64>,
    extract: Option<Extract>,
) -> BodyJudgement {
    let mut reasons = Vec::new();
    if let Some(declared) = declared_bytes
        && declared != body.len() as u64
    {
        reasons.push(Reason::new(
            ReasonCode::LengthMismatch,
            format!(
                "the server declared {declared} bytes but {} were received",
                body.len()
            ),
        ));
    }
    let extracted = provider::extract(format, body);
    let provider_failed = !extracted.reasons.is_empty();
    reasons.extend(extracted.reasons);
    let unwrapped = envelope::unwrap(&extracted.patch, extract);
    let envelope_missing = unwrapped
        .reasons
        .iter()
        .any(|r| r.code == ReasonCode::MissingEnvelope);
    reasons.extend(unwrapped.reasons);
    let mut strip = 1;
    let mut notes = Vec::new();
    // A response that failed and carried no text, or carried no envelope,
    // needs no second reason.
    if !((provider_failed || envelope_missing) && unwrapped.patch.is_empty()) {
        let analysis = diff::analyze(&unwrapped.patch);
        reasons.extend(analysis.reasons);
        strip = analysis.strip;
        notes = analysis.notes;
    }
    BodyJudgement {
        patch: unwrapped.patch,
        reasons,
        strip,
        envelope: unwrapped.envelope,
        notes,
        model: extracted.model,
        completion_id: extracted.completion_id,
        usage: extracted.usage,
    }
}

/// What to capture.
pub struct CaptureInput<'a> {
    pub run: &'a RunId,
    pub format: BodyFormat,
    /// The envelope to take the diff out of (`--extract`).
    pub extract: Option<Extract>,
    pub body: &'a [u8],
    pub declared_bytes: Option<u64>,
    pub request_id: Option<String>,
    /// The agent's tool-call trace bytes, stored beside the transcript.
    pub trace: Option<&'a [u8]>,
    /// How the trace was authenticated (`None`: it has no begin line).
    pub trace_auth: Option<crate::record::TraceAuth>,
    pub captured_at: String,
    /// Who may read the stored body and patch: `Private` when the body
    /// came from a file only its owner can read.
    pub access: ledger::Access,
    /// The commits the patch was taken from (`capture --git`).
    pub git: Option<crate::record::GitRange>,
    /// The repository, for people (`git::Repo::display_name`).
    pub repository: Option<String>,
}

/// The files of one run's capture, in the transcripts directory.
struct Files {
    dir: PathBuf,
    receipt: PathBuf,
    patch: String,
    response: String,
    /// A live capture's request body.
    request: String,
    /// A live capture's response while it streams in.
    partial: String,
    trace: String,
}

impl Files {
    fn new(ledger: &Ledger, run: &RunId) -> Files {
        Files {
            dir: ledger.transcripts_dir(),
            receipt: ledger.transcript(run),
            patch: format!("{run}.patch"),
            response: format!("{run}.response"),
            request: format!("{run}.request"),
            partial: format!("{run}.response.partial"),
            trace: format!("{run}.trace.jsonl"),
        }
    }

    /// Refuses when any file of the run exists, a partial response too: a
    /// run id is captured once, and a retry is a new run id.
    fn check_free(&self) -> Result<()> {
        let names = [
            &self.patch,
            &self.response,
            &self.request,
            &self.partial,
            &self.trace,
        ];
        let paths = std::iter::once(self.receipt.clone()).chain(names.map(|n| self.dir.join(n)));
        for p in paths {
            if p.symlink_metadata().is_ok() {
                return Err(Error::Exists {
                    path: p,
                    hint: RETRY_HINT.into(),
                });
            }
        }
        Ok(())
    }

    fn stored(&self, name: &str, bytes: &[u8]) -> StoredFile {
        StoredFile {
            file: name.to_string(),
            sha256: sha256_hex(bytes),
            bytes: bytes.len() as u64,
        }
    }
}

/// What a live capture adds to the judgement of the body it received.
struct Exchange {
    http: HttpExchange,
    /// `http_status` and `transport_error` reasons, which no judgement of
    /// the bytes could find; they come first in the receipt.
    reasons: Vec<Reason>,
}

/// Judges and stores a body. Nothing is written when any target exists.
pub fn capture(ledger: &Ledger, input: CaptureInput<'_>) -> Result<TranscriptReceipt> {
    let files = Files::new(ledger, input.run);
    ledger.create()?;
    files.check_free()?;
    if input.format != BodyFormat::Raw {
        ledger::write_new_as(&files.dir.join(&files.response), input.body, input.access)?;
    }
    record(&files, input, None)
}

/// Judges a body whose response file (for a provider format) is already
/// stored, then writes the patch, the trace and, last, the receipt: a
/// receipt on disk always has its files beside it.
fn record(
    files: &Files,
    input: CaptureInput<'_>,
    exchange: Option<Exchange>,
) -> Result<TranscriptReceipt> {
    let judgement = judge(
        input.format,
        input.body,
        input.declared_bytes,
        input.extract,
    );
    let body = files.stored(&files.patch, &judgement.patch);
    // The response is kept whenever it is not the patch itself: a provider
    // format (stored before this), or a raw answer the patch was taken out
    // of (stored here).
    let unwrapped_raw = input.format == BodyFormat::Raw && judgement.patch != input.body;
    let response = (input.format != BodyFormat::Raw || unwrapped_raw)
        .then(|| files.stored(&files.response, input.body));
    let trace = input.trace.map(|t| files.stored(&files.trace, t));
    let (http, mut reasons) = match exchange {
        Some(e) => (Some(e.http), e.reasons),
        None => (None, Vec::new()),
    };
    reasons.extend(judgement.reasons);
    let complete = reasons.is_empty();
    let mut notes = judgement.notes;
    if input.trace.is_some() && input.trace_auth.is_none() {
        notes.push(unauthenticated_trace());
    }
    let receipt = TranscriptReceipt {
        schema: SCHEMA,
        record: "transcript".into(),
        run_id: input.run.to_string(),
        format: input.format,
        body,
        response,
        declared_bytes: input.declared_bytes,
        request_id: input.request_id,
        complete,
        verdict: if complete {
            CaptureVerdict::Captured
        } else {
            CaptureVerdict::Incomplete
        },
        reasons,
        trace,
        captured_at: input.captured_at,
        model: judgement.model,
        completion_id: judgement.completion_id,
        usage: judgement.usage,
        http,
        strip: judgement.strip,
        extract: input.extract,
        envelope: judgement.envelope,
        notes,
        trace_auth: input.trace_auth,
        git: input.git,
        repository: input.repository,
    };
    let access = input.access;
    if unwrapped_raw {
        ledger::write_new_as(&files.dir.join(&files.response), input.body, access)?;
    }
    ledger::write_new_as(&files.dir.join(&files.patch), &judgement.patch, access)?;
    if let Some(t) = input.trace {
        ledger::write_new(&files.dir.join(&files.trace), t)?;
    }
    ledger::write_record(&files.receipt, &receipt)?;
    Ok(receipt)
}

/// Reads a file stored beside a record and checks its digest and length.
pub fn read_stored(record_path: &std::path::Path, stored: &StoredFile) -> Result<Vec<u8>> {
    if stored.file.contains('/') || stored.file.starts_with('.') {
        return Err(Error::data(
            record_path,
            format!(
                "stored file name `{}` is not a plain file name",
                stored.file
            ),
        ));
    }
    let dir = record_path.parent().unwrap_or(std::path::Path::new("."));
    let path = dir.join(&stored.file);
    if stored.bytes > crate::input::BODY_CAP {
        return Err(Error::data(
            record_path,
            format!(
                "stored file `{}` is recorded as {} bytes, past the cap",
                stored.file, stored.bytes
            ),
        ));
    }
    let bytes = crate::input::read_file(&path, crate::input::BODY_CAP)?;
    let actual = sha256_hex(&bytes);
    if actual != stored.sha256 || bytes.len() as u64 != stored.bytes {
        return Err(Error::data(
            &path,
            format!(
                "has sha256 {actual} and {} bytes but `{}` records sha256 {} and {} bytes",
                bytes.len(),
                record_path.display(),
                stored.sha256,
                stored.bytes
            ),
        ));
    }
    Ok(bytes)
}

/// The note of a receipt whose trace has no begin line.
fn unauthenticated_trace() -> Reason {
    Reason::new(
        ReasonCode::UnauthenticatedTrace,
        "the trace has no begin line (`trace begin`): nothing binds its lines together, so anyone who could write the file could have written any of them",
    )
}

/// The notes a receipt's stored trace calls for, checking its `trace_auth`
/// against the trace's begin and end lines (the MACs were checked with the
/// key at capture; the key is not here to check them again).
fn trace_notes(path: &std::path::Path, receipt: &TranscriptReceipt) -> Result<Vec<Reason>> {
    let mismatch = || {
        Error::data(
            path,
            "field `trace_auth` does not follow from the stored trace",
        )
    };
    let Some(trace) = &receipt.trace else {
        return match receipt.trace_auth {
            Some(_) => Err(mismatch()),
            None => Ok(Vec::new()),
        };
    };
    let bytes = read_stored(path, trace)?;
    let parsed = agent_ledger_trace::parse_trace(&bytes)
        .map_err(|e| Error::data(path, format!("the stored trace does not parse: {e}")))?;
    match (&parsed.chain, &receipt.trace_auth) {
        (None, None) => Ok(vec![unauthenticated_trace()]),
        (Some(chain), Some(auth)) => {
            let begin = &chain.begin;
            let agrees = auth.run == begin.run
                && Some(&auth.agent) == begin.agent.as_ref()
                && Some(&auth.key_sha256) == begin.key_sha256.as_ref()
                && Some(&auth.base) == begin.base.as_ref()
                && auth.sealed == chain.end.is_some()
                && auth.lines == chain.lines() as u64
                && auth.verified == crate::record::TraceVerification::HmacSha256;
            if agrees {
                Ok(Vec::new())
            } else {
                Err(mismatch())
            }
        }
        _ => Err(mismatch()),
    }
}

/// Re-reads a receipt's stored files and re-judges them: a receipt whose
/// judgement does not follow from its bytes is refused.
pub fn check_receipt(path: &std::path::Path, receipt: &TranscriptReceipt) -> Result<Vec<u8>> {
    let patch = read_stored(path, &receipt.body)?;
    let format = receipt.format;
    let extract = receipt.extract;
    let response = match &receipt.response {
        None => patch.clone(),
        Some(r) => read_stored(path, r)?,
    };
    let trace_notes = trace_notes(path, receipt)?;
    let exchange_reasons = live::check_exchange(path, receipt)?;
    let judgement = judge(format, &response, receipt.declared_bytes, extract);
    if judgement.patch != patch {
        return Err(Error::data(
            path,
            "the stored patch is not the patch text of the stored response",
        ));
    }
    // The response is stored exactly when it is not the patch itself.
    if receipt.response.is_some() != (format != BodyFormat::Raw || response != patch) {
        return Err(Error::data(
            path,
            "field `response` does not fit fields `format` and `body`",
        ));
    }
    // Receipts written before the trace note carry none.
    let mut noted = judgement.notes.clone();
    noted.extend(trace_notes);
    if judgement.strip != receipt.strip
        || judgement.envelope != receipt.envelope
        || (judgement.notes != receipt.notes && noted != receipt.notes)
    {
        return Err(Error::data(
            path,
            "fields `strip`, `envelope` and `notes` do not follow from the stored body",
        ));
    }
    let expected_verdict = if receipt.complete {
        CaptureVerdict::Captured
    } else {
        CaptureVerdict::Incomplete
    };
    // What the body says about itself is checked where the receipt states
    // it; receipts written before these fields state none.
    let stated = |field: &str, matches: bool| {
        if matches {
            Ok(())
        } else {
            Err(Error::data(
                path,
                format!("field `{field}` is not what the stored response says"),
            ))
        }
    };
    stated(
        "model",
        receipt.model.is_none() || receipt.model == judgement.model,
    )?;
    stated(
        "completion_id",
        receipt.completion_id.is_none() || receipt.completion_id == judgement.completion_id,
    )?;
    stated(
        "usage",
        receipt.usage.is_none() || receipt.usage == judgement.usage,
    )?;
    if judgement.reasons != receipt.reasons[exchange_reasons..]
        || receipt.complete != receipt.reasons.is_empty()
        || receipt.verdict != expected_verdict
    {
        return Err(Error::data(
            path,
            "fields `complete`, `verdict` and `reasons` do not follow from the stored body",
        ));
    }
    Ok(patch)
}
