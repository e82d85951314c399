//! Where a command's time goes, for the benchmarks in `benches/`: with
//! `AGENT_LEDGER_PROFILE=1`, a phase report goes to stderr as one line,
//! `profile: lock walk=12.3ms hash=45.6ms`. Nothing else changes.

use std::sync::OnceLock;
use std::time::Duration;

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("AGENT_LEDGER_PROFILE").is_some_and(|v| v == "1"))
}

/// Reports `what`'s phases, when profiling is on.
pub fn phase(what: &str, phases: &[(&str, Duration)]) {
    if !enabled() {
        return;
    }
    let parts: Vec<String> = phases
        .iter()
        .map(|(name, d)| format!("{name}={:.1}ms", d.as_secs_f64() * 1000.0))
        .collect();
    eprintln!("profile: {what} {}", parts.join(" "));
}

/// Phases given as the times at which each ended, as their own lengths.
pub fn spans(ends: &[(&'static str, Duration)]) -> Vec<(&'static str, Duration)> {
    let mut last = Duration::ZERO;
    ends.iter()
        .map(|&(name, end)| {
            let d = end.saturating_sub(last);
            last = end;
            (name, d)
        })
        .collect()
}
