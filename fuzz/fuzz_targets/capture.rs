//! The capture judgement (`capture::judge`, what `capture`, `classify` and
//! `verify` run on a stored body) over every provider format, and with it
//! the unified-diff validator (`diff::validate`).
//!
//! The first byte picks the format (byte % 7), the declared length
//! (byte / 7 % 3: none, the body's own length, one more) and the envelope
//! to extract (byte / 21 % 3: none, `<patch>` tags, a fence); the rest is
//! the body.
#![no_main]

use agent_ledger::capture;
use agent_ledger::diff;
use agent_ledger::envelope::Extract;
use agent_ledger::provider::BodyFormat;
use agent_ledger::record::ReasonCode;
use libfuzzer_sys::fuzz_target;

const FORMATS: [BodyFormat; 7] = [
    BodyFormat::Raw,
    BodyFormat::OpenaiChat,
    BodyFormat::OpenaiSse,
    BodyFormat::OpenaiResponses,
    BodyFormat::OpenaiResponsesSse,
    BodyFormat::Anthropic,
    BodyFormat::AnthropicSse,
];
const EXTRACTS: [Option<Extract>; 3] = [None, Some(Extract::PatchTags), Some(Extract::Fence)];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let format = FORMATS[usize::from(selector) % FORMATS.len()];
    let len = body.len() as u64;
    let extract = EXTRACTS[usize::from(selector) / 21 % 3];
    let declared = match selector / 7 % 3 {
        0 => None,
        1 => Some(len),
        _ => Some(len + 1),
    };

    let first = capture::judge(format, body, declared, extract);
    // A pure function of the bytes: classify and verify re-run it and must
    // reach the same judgement.
    let again = capture::judge(format, body, declared, extract);
    assert_eq!(first.patch, again.patch, "judge is not deterministic");
    assert_eq!(first.reasons, again.reasons, "judge is not deterministic");
    assert_eq!(first.strip, again.strip, "judge is not deterministic");
    assert_eq!(first.notes, again.notes, "judge is not deterministic");
    // Every header path at the recorded level is what the bounds check
    // sees; computing it must not panic either.
    let _ = diff::header_paths(&first.patch, first.strip);

    // Every reason has a code: `ReasonCode` is a closed enum, so the type
    // says so; what is left to hold is that each has a sentence.
    for r in &first.reasons {
        assert!(!r.message.is_empty(), "a reason without a message: {r:?}");
    }
    if declared == Some(len + 1) {
        assert!(
            first
                .reasons
                .iter()
                .any(|r| r.code == ReasonCode::LengthMismatch),
            "a wrong declared length passed: {:?}",
            first.reasons
        );
    }
    if format == BodyFormat::Raw && extract.is_none() && first.envelope.is_none() {
        assert_eq!(first.patch, body, "a raw body is its own patch");
    }
    // Complete (no reasons) means the patch is a whole, valid diff, and
    // judging that patch as a raw body agrees.
    let validated = diff::validate(&first.patch);
    assert_eq!(
        validated,
        diff::validate(&first.patch),
        "validate is not deterministic"
    );
    if first.reasons.is_empty() {
        let summary = validated.expect("a complete judgement whose patch does not validate");
        assert!(summary.files > 0, "a complete patch names no file");
        let raw = capture::judge(BodyFormat::Raw, &first.patch, None, None);
        assert!(
            raw.reasons.is_empty(),
            "a complete extraction is not complete as raw: {:?}",
            raw.reasons
        );
        assert_eq!(
            raw.strip, first.strip,
            "the strip level depends on the wrapping"
        );
    }
});
