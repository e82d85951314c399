//! Signed verdicts: an in-toto Statement v1 about the patch, whose predicate
//! names the verdict and the digests of the records it follows from, in a
//! DSSE envelope signed with Ed25519.
//!
//! Key files are JSON with a `schema`: `{"schema":1,"kind":"ed25519-secret"|
//! "ed25519-public","key":"<base64>","keyid":"<sha256 of the public key>"}`.
//! A key id is only a hint for finding a key: a signature is trusted only
//! when it verifies under a key the auditor passed with `--trusted-key`.

use crate::digest::sha256_hex;
use crate::exit::{Error, Result};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://github.com/agent-ledger/verdict/v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFile {
    pub schema: u32,
    pub kind: String,
    pub key: String,
    pub keyid: String,
}

pub fn keyid(key: &VerifyingKey) -> String {
    sha256_hex(key.as_bytes())
}

/// Makes a key pair; the secret file is created 0600 and never overwritten.
pub fn keygen(secret: &Path, public: &Path) -> Result<String> {
    let mut seed = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom")
            .map_err(|e| Error::read(Path::new("/dev/urandom"), e))?,
        &mut seed,
    )
    .map_err(|e| Error::read(Path::new("/dev/urandom"), e))?;
    let signing = SigningKey::from_bytes(&seed);
    let id = keyid(&signing.verifying_key());
    let file = |kind: &str, key: &[u8]| {
        let mut text = serde_json::to_string_pretty(&KeyFile {
            schema: 1,
            kind: kind.into(),
            key: B64.encode(key),
            keyid: id.clone(),
        })
        .expect("key files serialise");
        text.push('\n');
        text
    };
    for path in [secret, public] {
        if path.symlink_metadata().is_ok() {
            return Err(Error::Exists {
                path: path.to_path_buf(),
                hint: "choose another file for the new key".into(),
            });
        }
    }
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(secret)
        .map_err(|e| Error::write(secret, e))?;
    std::io::Write::write_all(&mut f, file("ed25519-secret", &seed).as_bytes())
        .map_err(|e| Error::write(secret, e))?;
    crate::ledger::write_new(
        public,
        file("ed25519-public", signing.verifying_key().as_bytes()).as_bytes(),
    )?;
    Ok(id)
}

fn read_key(path: &Path, kind: &str) -> Result<[u8; 32]> {
    let bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
    let file: KeyFile = serde_json::from_slice(&bytes)
        .map_err(|e| Error::data(path, format!("not a key file: {e}")))?;
    if file.schema != 1 {
        return Err(Error::data(
            path,
            format!(
                "field `schema` is {}; this build reads key schema 1",
                file.schema
            ),
        ));
    }
    if file.kind != kind {
        return Err(Error::data(
            path,
            format!("field `kind` is `{}`, expected `{kind}`", file.kind),
        ));
    }
    let raw = B64
        .decode(&file.key)
        .map_err(|_| Error::data(path, "field `key` is not base64"))?;
    raw.try_into()
        .map_err(|_| Error::data(path, "field `key` is not 32 bytes"))
}

pub fn load_signing(path: &Path) -> Result<SigningKey> {
    Ok(SigningKey::from_bytes(&read_key(path, "ed25519-secret")?))
}

pub fn load_verifying(path: &Path) -> Result<VerifyingKey> {
    VerifyingKey::from_bytes(&read_key(path, "ed25519-public")?)
        .map_err(|_| Error::data(path, "field `key` is not an Ed25519 public key"))
}

/// DSSE pre-authentication encoding: the payload type is signed too.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    pub keyid: String,
    pub sig: String,
}

/// The statement signed for a run: subject is the patch; the predicate
/// names the verdict and the digests of every record it follows from.
pub fn statement(
    run: &str,
    patch_sha256: &str,
    verdict: &crate::record::VerdictRecord,
    verdict_sha256: &str,
) -> serde_json::Value {
    serde_json::json!({
        "_type": STATEMENT_TYPE,
        "subject": [{ "name": format!("transcripts/{run}.patch"), "digest": { "sha256": patch_sha256 } }],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "run_id": run,
            "verdict": verdict.verdict.as_str(),
            "exit_code": verdict.exit_code,
            "records": {
                "transcript": verdict.transcript_sha256,
                "fixture_lock": verdict.lock_sha256,
                "properties": verdict.properties_sha256,
                "verdict": verdict_sha256,
            },
        },
    })
}

pub fn sign(statement: &serde_json::Value, key: &SigningKey) -> Envelope {
    let payload = serde_json::to_vec(statement).expect("statements serialise");
    let sig = key.sign(&pae(PAYLOAD_TYPE, &payload));
    Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: B64.encode(&payload),
        signatures: vec![EnvelopeSignature {
            keyid: keyid(&key.verifying_key()),
            sig: B64.encode(sig.to_bytes()),
        }],
    }
}

/// Checks an envelope against the trusted keys and returns its statement.
/// Every signature is tried against every trusted key: the key id is never
/// what makes a signature trusted.
pub fn open(
    bytes: &[u8],
    trusted: &[VerifyingKey],
) -> std::result::Result<serde_json::Value, String> {
    let env: Envelope =
        serde_json::from_slice(bytes).map_err(|e| format!("not a DSSE envelope: {e}"))?;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(format!(
            "payload type `{}` is not `{PAYLOAD_TYPE}`",
            env.payload_type
        ));
    }
    let payload = B64
        .decode(&env.payload)
        .map_err(|_| "payload is not base64".to_string())?;
    let message = pae(&env.payload_type, &payload);
    let valid = env.signatures.iter().any(|s| {
        let Ok(raw) = B64.decode(&s.sig) else {
            return false;
        };
        let Ok(raw): std::result::Result<[u8; 64], _> = raw.try_into() else {
            return false;
        };
        let sig = Signature::from_bytes(&raw);
        trusted.iter().any(|k| k.verify(&message, &sig).is_ok())
    });
    if !valid {
        return Err(
            "no signature verifies under a trusted key (unknown key or bad signature)".into(),
        );
    }
    serde_json::from_slice(&payload).map_err(|e| format!("signed payload is not JSON: {e}"))
}
