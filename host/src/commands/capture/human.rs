//! `capture`'s receipt as a person reads it.

use crate::output::inert;
use crate::record::TranscriptReceipt;

/// The receipt in sentences.
pub(super) fn human(receipt: &TranscriptReceipt) -> String {
    let mut text = format!(
        "{}: run {} ({}, {} bytes, sha256 {})\n",
        receipt.verdict,
        inert(&receipt.run_id),
        receipt.format.as_str(),
        receipt.body.bytes,
        receipt.body.sha256
    );
    if let Some(http) = &receipt.http {
        let status = http
            .status
            .map_or_else(|| "no response".to_string(), |s| format!("HTTP {s}"));
        text.push_str(&format!(
            "  {} from {} ({} `{}`, max tokens {})",
            status,
            inert(&http.endpoint),
            http.provider.as_str(),
            inert(&http.model_requested),
            http.max_tokens
        ));
        if let Some(id) = &receipt.request_id {
            text.push_str(&format!(", request id {}", inert(id)));
        }
        if let Some(n) = receipt.declared_bytes {
            text.push_str(&format!(", declared {n} bytes"));
        }
        text.push('\n');
    }
    if let Some(g) = &receipt.git {
        text.push_str(&format!(
            "  the patch of {}: merge base {}, head {} (check judges it on the merge base)\n",
            inert(&g.range),
            g.merge_base,
            g.head
        ));
    }
    let mut reported = Vec::new();
    if let Some(m) = &receipt.model {
        reported.push(format!("model {}", inert(m)));
    }
    if let Some(id) = &receipt.completion_id {
        reported.push(format!("completion {}", inert(id)));
    }
    if let Some(u) = &receipt.usage {
        reported.push(format!(
            "tokens {} in, {} out, {} total",
            u.input_tokens, u.output_tokens, u.total_tokens
        ));
    }
    if !reported.is_empty() {
        text.push_str(&format!("  {}\n", reported.join("; ")));
    }
    if let Some(e) = &receipt.envelope {
        text.push_str(&format!("  envelope: {e}\n"));
    }
    if receipt.strip != 1 {
        text.push_str(&format!("  strip: -p{}\n", receipt.strip));
    }
    for r in &receipt.reasons {
        text.push_str(&format!(
            "  - {}: {}\n",
            inert(r.code.as_str()),
            inert(&r.message)
        ));
    }
    for n in &receipt.notes {
        text.push_str(&format!(
            "  note {}: {}\n",
            inert(n.code.as_str()),
            inert(&n.message)
        ));
    }
    text
}
