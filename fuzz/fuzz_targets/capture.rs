//! The capture judgement (`capture::judge`, what `capture`, `classify` and
//! `verify` run on a stored body) over every provider format, and with it
//! the unified-diff validator (`diff::validate`).
//!
//! The first byte picks the format (byte % 6) and the declared length
//! (byte / 6 % 3: none, the body's own length, one more); the rest is the body.
#![no_main]

use agent_ledger::capture;
use agent_ledger::diff;
use agent_ledger::provider::BodyFormat;
use libfuzzer_sys::fuzz_target;

const FORMATS: [BodyFormat; 6] = [
    BodyFormat::Raw,
    BodyFormat::OpenaiChat,
    BodyFormat::OpenaiSse,
    BodyFormat::OpenaiResponses,
    BodyFormat::Anthropic,
    BodyFormat::AnthropicSse,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let format = FORMATS[usize::from(selector) % FORMATS.len()];
    let len = body.len() as u64;
    let declared = match selector / 6 % 3 {
        0 => None,
        1 => Some(len),
        _ => Some(len + 1),
    };

    let first = capture::judge(format, body, declared);
    // A pure function of the bytes: classify and verify re-run it and must
    // reach the same judgement.
    let again = capture::judge(format, body, declared);
    assert_eq!(first.patch, again.patch, "judge is not deterministic");
    assert_eq!(first.reasons, again.reasons, "judge is not deterministic");

    for r in &first.reasons {
        assert!(!r.code.is_empty(), "a reason without a code: {r:?}");
    }
    if declared == Some(len + 1) {
        assert!(
            first
                .reasons
                .iter()
                .any(|r| r.code == capture::LENGTH_MISMATCH),
            "a wrong declared length passed: {:?}",
            first.reasons
        );
    }
    if format == BodyFormat::Raw {
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
        let raw = capture::judge(BodyFormat::Raw, &first.patch, None);
        assert!(
            raw.reasons.is_empty(),
            "a complete extraction is not complete as raw: {:?}",
            raw.reasons
        );
    }
});
