//! Tool-call trace lines (`trace::parse`, i.e. `agent_ledger_trace::parse`,
//! what `reconcile` and `capture --trace` read, and the `span_bijection`
//! guest too), then the span rules (`agent_ledger_trace::judge`) on the
//! spans against a delta made from their own paths.
#![no_main]

use agent_ledger::exit::Sysexit;
use agent_ledger::trace;
use agent_ledger_trace::{Event, Line};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeSet;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz/trace.jsonl");
    let spans = match trace::parse(path, data) {
        Ok(spans) => spans,
        Err(e) => {
            assert_eq!(e.exit_code(), Sysexit::Data, "{e}");
            assert!(e.to_string().contains("fuzz/trace.jsonl"), "{e}");
            return;
        }
    };
    let mut ids = BTreeSet::new();
    for s in &spans {
        assert!(ids.insert(s.id.as_str()), "span `{}` twice", s.id);
        assert!(trace::check_relative(&s.path).is_ok(), "{:?}", s.path);
        if let Some(close) = &s.close {
            assert_eq!(close.op, s.op);
            assert_eq!(close.path_bytes().as_deref(), Some(&s.path[..]));
        }
    }

    // Written back the way the writer writes lines, the spans parse to the
    // same spans: paths survive exactly (UTF-8 or hex).
    let mut text = Vec::new();
    let mut closes = Vec::new();
    for s in &spans {
        let open = Line::new(&s.id, Event::Open, s.op, &s.path);
        text.extend(serde_json::to_vec(&open).unwrap());
        text.push(b'\n');
        if let Some(close) = &s.close {
            closes.push(close);
        }
    }
    for close in closes {
        text.extend(serde_json::to_vec(close).unwrap());
        text.push(b'\n');
    }
    let back = trace::parse(path, &text).expect("re-written spans do not parse");
    assert_eq!(back.len(), spans.len());
    for (a, b) in spans.iter().zip(&back) {
        assert_eq!(
            (&a.id, a.op, &a.path, &a.close),
            (&b.id, b.op, &b.path, &b.close)
        );
    }

    // Judge against a delta holding every other span's path.
    let delta: BTreeSet<Vec<u8>> = spans.iter().step_by(2).map(|s| s.path.clone()).collect();
    let judged = agent_ledger_trace::judge(&spans, &delta);
    assert_eq!(judged, agent_ledger_trace::judge(&spans, &delta));
    assert_eq!(judged.changed, delta.len());
    assert!(judged.ghosts.len() + judged.owned.len() == delta.len());
    for o in &judged.owned {
        assert!(delta.contains(o.path));
        let _ = o.check(None);
    }
});
