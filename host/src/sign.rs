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

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
    let bytes = crate::input::read_file(path, crate::input::KEY_CAP)?;
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

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
/// Standard or URL-safe base64, padded or not: DSSE verifiers "MUST accept
/// either" (protocol.md).
fn decode_either(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [&B64, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
}

/// The statement an envelope carries, its signatures not checked: what it
/// claims, for comparing with the records it names (`merge` without a
/// trusted key). Never a reason to trust it.
pub fn claimed(bytes: &[u8]) -> std::result::Result<serde_json::Value, String> {
    let (env, payload) = envelope(bytes)?;
    if env.signatures.is_empty() {
        return Err("the envelope holds no signature".into());
    }
    statement_of(&payload)
}

/// The payload as a statement: JSON in which no object names a key twice
/// (`serde_json::Value` keeps the last value, an in-toto verifier may keep
/// the first: a statement that says two things is read neither way).
fn statement_of(payload: &[u8]) -> std::result::Result<serde_json::Value, String> {
    let value =
        serde_json::from_slice(payload).map_err(|e| format!("signed payload is not JSON: {e}"))?;
    serde_json::from_slice::<agent_ledger_trace::UniqueKeys>(payload)
        .map_err(|e| format!("signed payload is ambiguous JSON: {e}"))?;
    Ok(value)
}

/// An envelope of our payload type and its decoded payload.
fn envelope(bytes: &[u8]) -> std::result::Result<(Envelope, Vec<u8>), String> {
    let env: Envelope =
        serde_json::from_slice(bytes).map_err(|e| format!("not a DSSE envelope: {e}"))?;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(format!(
            "payload type `{}` is not `{PAYLOAD_TYPE}`",
            env.payload_type
        ));
    }
    let payload = decode_either(&env.payload).ok_or_else(|| "payload is not base64".to_string())?;
    Ok((env, payload))
}

pub fn open(
    bytes: &[u8],
    trusted: &[VerifyingKey],
) -> std::result::Result<serde_json::Value, String> {
    let (env, payload) = envelope(bytes)?;
    let message = pae(&env.payload_type, &payload);
    let valid = env.signatures.iter().any(|s| {
        let Some(raw) = decode_either(&s.sig) else {
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
    statement_of(&payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Reason, Verdict, VerdictRecord};

    /// RFC 8032 (Edwards-Curve Digital Signature Algorithm), section 7.1
    /// "Test Vectors for Ed25519", TEST 1, TEST 2 and TEST 3:
    /// (secret key, public key, message, signature), all hex.
    const RFC8032_7_1: [(&str, &str, &str, &str); 3] = [
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
        ),
        (
            "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
            "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
        ),
    ];

    fn unhex(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn rfc_key(i: usize) -> SigningKey {
        SigningKey::from_bytes(&unhex(RFC8032_7_1[i].0).try_into().unwrap())
    }

    fn key_file(dir: &Path, name: &str, kind: &str, key: &[u8]) -> std::path::PathBuf {
        let path = dir.join(name);
        let text = serde_json::json!({
            "schema": 1, "kind": kind, "key": B64.encode(key), "keyid": "hint only",
        });
        std::fs::write(&path, text.to_string()).unwrap();
        path
    }

    fn verdict() -> VerdictRecord {
        VerdictRecord {
            schema: 1,
            record: "verdict".into(),
            run_id: "run-001".into(),
            verdict: Verdict::Review,
            exit_code: 0,
            reasons: vec![Reason::new(
                crate::record::ReasonCode::AllHold,
                "1 properties hold",
            )],
            transcript_sha256: Some("1".repeat(64)),
            lock_sha256: Some("2".repeat(64)),
            properties_sha256: Some("3".repeat(64)),
            tokens: None,
        }
    }

    fn signed() -> (serde_json::Value, Envelope) {
        let st = statement("run-001", &"a".repeat(64), &verdict(), &"4".repeat(64));
        let env = sign(&st, &rfc_key(0));
        (st, env)
    }

    fn bytes(env: &Envelope) -> Vec<u8> {
        serde_json::to_vec(env).unwrap()
    }

    #[test]
    fn pae_matches_the_dsse_protocol_test_vector() {
        // secure-systems-lab/dsse, protocol.md, section "Test Vectors":
        // PAYLOAD_TYPE `http://example.com/HelloWorld`, SERIALIZED_BODY
        // `hello world`. (Its signature there is ECDSA P-256, which this
        // build does not use; Ed25519 is checked against RFC 8032 below.)
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }

    #[test]
    fn pae_lengths_are_byte_lengths_and_an_empty_body_keeps_its_space() {
        // protocol.md: LEN(s) is "the byte length of s"; `ä` is two bytes.
        assert_eq!(
            pae("application/vnd.exämple+json", b""),
            "DSSEv1 29 application/vnd.exämple+json 0 ".as_bytes()
        );
    }

    #[test]
    fn ed25519_key_files_reproduce_the_rfc8032_test_vectors() {
        let dir = tempfile::tempdir().unwrap();
        for (i, (secret, public, message, signature)) in RFC8032_7_1.iter().enumerate() {
            let s = key_file(
                dir.path(),
                &format!("{i}.key"),
                "ed25519-secret",
                &unhex(secret),
            );
            let p = key_file(
                dir.path(),
                &format!("{i}.pub"),
                "ed25519-public",
                &unhex(public),
            );
            let signing = load_signing(&s).unwrap();
            let verifying = load_verifying(&p).unwrap();
            assert_eq!(hex::encode(signing.verifying_key().as_bytes()), *public);
            let sig = signing.sign(&unhex(message));
            assert_eq!(hex::encode(sig.to_bytes()), *signature, "TEST {}", i + 1);
            let published = Signature::from_bytes(&unhex(signature).try_into().unwrap());
            assert!(verifying.verify(&unhex(message), &published).is_ok());
            assert!(verifying.verify(b"another message", &published).is_err());
        }
    }

    #[test]
    fn keyid_is_the_sha256_of_the_public_key() {
        // `printf <public key hex> | xxd -r -p | sha256sum` for RFC 8032
        // section 7.1 TEST 1 and TEST 2.
        assert_eq!(
            keyid(&rfc_key(0).verifying_key()),
            "21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9"
        );
        assert_eq!(
            keyid(&rfc_key(1).verifying_key()),
            "39f713d0a644253f04529421b9f51b9b08979d08295959c4f3990ee617f5139f"
        );
    }

    #[test]
    fn sign_signs_the_pae_of_the_in_toto_payload_type() {
        let (st, env) = signed();
        assert_eq!(env.payload_type, "application/vnd.in-toto+json");
        assert_eq!(env.signatures.len(), 1);
        assert_eq!(
            env.signatures[0].keyid,
            "21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9"
        );
        let payload = B64.decode(&env.payload).unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&payload).unwrap(),
            st
        );
        let sig = Signature::from_bytes(
            &B64.decode(&env.signatures[0].sig)
                .unwrap()
                .try_into()
                .unwrap(),
        );
        let vk = rfc_key(0).verifying_key();
        assert!(vk.verify(&pae(PAYLOAD_TYPE, &payload), &sig).is_ok());
        // The payload alone is not what is signed: the type is bound in.
        assert!(vk.verify(&payload, &sig).is_err());
    }

    #[test]
    fn statement_names_the_patch_and_every_record_digest() {
        let (st, _) = signed();
        assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");
        assert_eq!(st["subject"][0]["name"], "transcripts/run-001.patch");
        assert_eq!(st["subject"][0]["digest"]["sha256"], "a".repeat(64));
        assert_eq!(st["predicate"]["verdict"], "review");
        assert_eq!(st["predicate"]["exit_code"], 0);
        assert_eq!(st["predicate"]["records"]["transcript"], "1".repeat(64));
        assert_eq!(st["predicate"]["records"]["fixture_lock"], "2".repeat(64));
        assert_eq!(st["predicate"]["records"]["properties"], "3".repeat(64));
        assert_eq!(st["predicate"]["records"]["verdict"], "4".repeat(64));
    }

    #[test]
    fn open_accepts_a_trusted_signature_and_returns_the_statement() {
        let (st, env) = signed();
        let trusted = [rfc_key(1).verifying_key(), rfc_key(0).verifying_key()];
        assert_eq!(open(&bytes(&env), &trusted).unwrap(), st);
    }

    #[test]
    fn a_signed_statement_that_names_a_key_twice_is_refused() {
        // Signed by a trusted key, but one reader would see the first
        // verdict and another the second.
        let payload = br#"{"_type":"https://in-toto.io/Statement/v1","predicate":{"verdict":"reject","verdict":"review"}}"#;
        let key = rfc_key(0);
        let sig = key.sign(&pae(PAYLOAD_TYPE, payload));
        let env = Envelope {
            payload_type: PAYLOAD_TYPE.into(),
            payload: B64.encode(payload),
            signatures: vec![EnvelopeSignature {
                keyid: keyid(&key.verifying_key()),
                sig: B64.encode(sig.to_bytes()),
            }],
        };
        let err = open(&bytes(&env), &[key.verifying_key()]).unwrap_err();
        assert!(err.contains("the key `verdict` appears twice"), "{err}");
        let err = claimed(&bytes(&env)).unwrap_err();
        assert!(err.contains("ambiguous JSON"), "{err}");
    }

    #[test]
    fn open_refuses_an_envelope_signed_by_an_untrusted_key() {
        let (_, env) = signed();
        let err = open(&bytes(&env), &[rfc_key(1).verifying_key()]).unwrap_err();
        assert_eq!(
            err,
            "no signature verifies under a trusted key (unknown key or bad signature)"
        );
    }

    #[test]
    fn open_refuses_an_untrusted_key_claiming_a_trusted_keyid() {
        // The key id is a hint only: an attacker can copy it.
        let st = statement("run-001", &"a".repeat(64), &verdict(), &"4".repeat(64));
        let mut env = sign(&st, &rfc_key(2));
        env.signatures[0].keyid = keyid(&rfc_key(0).verifying_key());
        assert!(open(&bytes(&env), &[rfc_key(0).verifying_key()]).is_err());
    }

    #[test]
    fn open_refuses_a_tampered_payload() {
        let (mut st, mut env) = signed();
        st["predicate"]["verdict"] = "reject".into();
        env.payload = B64.encode(serde_json::to_vec(&st).unwrap());
        let err = open(&bytes(&env), &[rfc_key(0).verifying_key()]).unwrap_err();
        assert!(
            err.starts_with("no signature verifies under a trusted key"),
            "{err}"
        );
    }

    #[test]
    fn open_refuses_a_tampered_payload_type() {
        let (_, mut env) = signed();
        env.payload_type = "application/vnd.example.other+json".into();
        let err = open(&bytes(&env), &[rfc_key(0).verifying_key()]).unwrap_err();
        assert_eq!(
            err,
            "payload type `application/vnd.example.other+json` is not `application/vnd.in-toto+json`"
        );
    }

    #[test]
    fn open_refuses_a_truncated_signature_and_a_non_envelope() {
        let (_, mut env) = signed();
        env.signatures[0].sig = B64.encode([0u8; 63]);
        assert!(open(&bytes(&env), &[rfc_key(0).verifying_key()]).is_err());
        let err = open(b"{\"payload\":1}", &[rfc_key(0).verifying_key()]).unwrap_err();
        assert!(err.starts_with("not a DSSE envelope"), "{err}");
    }

    #[test]
    fn open_accepts_url_safe_base64_as_the_dsse_protocol_requires() {
        // secure-systems-lab/dsse, protocol.md, section "Protocol": "Either
        // standard or URL-safe base64 encodings are allowed. Signers may use
        // either, and verifiers MUST accept either."
        use base64::engine::general_purpose::URL_SAFE;
        let st = serde_json::json!({ "_type": STATEMENT_TYPE, "note": "??>>??>>" });
        let mut env = sign(&st, &rfc_key(0));
        let payload = B64.decode(&env.payload).unwrap();
        let sig = B64.decode(&env.signatures[0].sig).unwrap();
        let url_payload = URL_SAFE.encode(&payload);
        let url_sig = URL_SAFE.encode(&sig);
        // The re-encoding must really differ, or this test proves nothing.
        assert!(url_payload != env.payload || url_sig != env.signatures[0].sig);
        env.payload = url_payload;
        env.signatures[0].sig = url_sig;
        assert_eq!(
            open(&bytes(&env), &[rfc_key(0).verifying_key()]).unwrap(),
            st
        );
    }

    #[test]
    fn key_files_of_the_wrong_kind_or_length_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let public = key_file(dir.path(), "k.pub", "ed25519-public", &[7u8; 32]);
        let err = load_signing(&public).unwrap_err().to_string();
        assert!(err.contains("k.pub"), "{err}");
        assert!(
            err.contains("field `kind` is `ed25519-public`, expected `ed25519-secret`"),
            "{err}"
        );
        let short = key_file(dir.path(), "short.key", "ed25519-secret", &[7u8; 31]);
        let err = load_signing(&short).unwrap_err().to_string();
        assert!(err.contains("short.key"), "{err}");
        assert!(err.contains("field `key` is not 32 bytes"), "{err}");
    }
}
