//! Every parse error and every bijection rule, on traces written as text the
//! way an agent (or an attacker) would hand them over.

use crate::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn open(id: &str, op: &str, path: &str) -> Value {
    json!({"schema": 1, "span": id, "event": "open", "op": op, "path": path,
           "before": null, "after": null, "status": "open", "error": null,
           "ts": "2026-11-30T10:00:00Z"})
}

fn close(id: &str, op: &str, path: &str, after: Option<&str>) -> Value {
    let mut line = open(id, op, path);
    line["event"] = json!("close");
    line["status"] = json!("closed");
    line["after"] = json!(after);
    line
}

/// An open and a close line of a closed span.
fn span(id: &str, op: &str, path: &str, after: Option<&str>) -> [Value; 2] {
    [open(id, op, path), close(id, op, path, after)]
}

fn text(lines: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for l in lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

fn spans(lines: &[Value]) -> Vec<Span> {
    parse(&text(lines)).expect("a well-formed trace")
}

fn parse_error(lines: &[Value]) -> ParseError {
    parse(&text(lines)).expect_err("a malformed trace")
}

fn delta(paths: &[&str]) -> BTreeSet<Vec<u8>> {
    paths.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// Every finding as text, hashing owned paths with `disk` (path, sha256).
fn findings(spans: &[Span], delta: &BTreeSet<Vec<u8>>, disk: &[(&str, &str)]) -> Vec<String> {
    let j = judge(spans, delta);
    let mut out = Vec::new();
    out.extend(j.open.iter().map(|s| format!("open {}", s.id)));
    out.extend(
        j.ghosts
            .iter()
            .map(|p| format!("ghost {}", String::from_utf8_lossy(p))),
    );
    out.extend(
        j.phantoms
            .iter()
            .map(|s| format!("phantom {} {}", String::from_utf8_lossy(&s.path), s.id)),
    );
    for o in &j.owned {
        let actual = disk
            .iter()
            .find(|(p, _)| p.as_bytes() == o.path)
            .map(|(_, h)| h.to_string());
        if let Some(m) = o.check(actual) {
            out.push(format!(
                "hash miss {} {} expected {:?} actual {:?}",
                String::from_utf8_lossy(m.path),
                m.span.id,
                m.expected,
                m.actual
            ));
        }
    }
    out
}

// ---- parse ----------------------------------------------------------------

#[test]
fn a_trace_parses_into_spans_in_open_order() {
    let s = spans(&[
        open("1", "write", "a"),
        open("2", "delete", "b"),
        close("2", "delete", "b", None),
    ]);
    assert_eq!(s.len(), 2);
    assert_eq!(
        (s[0].id.as_str(), s[0].op, s[0].open_line),
        ("1", Op::Write, 1)
    );
    assert!(s[0].close.is_none());
    assert_eq!((s[1].id.as_str(), s[1].path.as_slice()), ("2", &b"b"[..]));
    assert_eq!(s[1].close.as_ref().map(|c| c.status), Some(Status::Closed));
}

#[test]
fn empty_lines_and_an_empty_trace_are_fine() {
    assert_eq!(parse(b"").unwrap(), Vec::new());
    let mut t = b"\n".to_vec();
    t.extend(text(&span("1", "write", "a", Some(A))));
    t.push(b'\n');
    let s = parse(&t).unwrap();
    assert_eq!(s[0].open_line, 2);
}

#[test]
fn a_line_that_is_not_json_names_its_number() {
    let mut t = text(&span("1", "write", "a", Some(A)));
    t.extend(b"{\"schema\":1,\"span\":\"zz\",\"event\":\"close\"\n");
    let e = parse(&t).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(matches!(e.reason, Malformed::NotALine(_)), "{e}");
    assert!(
        e.to_string().starts_with("line 3: not a trace line: "),
        "{e}"
    );
}

#[test]
fn a_whitespace_only_line_is_malformed() {
    let e = parse(b" \n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(matches!(e.reason, Malformed::NotALine(_)), "{e}");
}

#[test]
fn another_schema_is_refused() {
    let mut l = open("1", "write", "a");
    l["schema"] = json!(3);
    let e = parse_error(&[l]);
    assert_eq!(e.reason, Malformed::Schema(3));
    assert_eq!(
        e.to_string(),
        "line 1: field `schema` is 3; this build reads trace schemas 1 and 2"
    );
}

#[test]
fn an_unknown_field_or_op_is_refused() {
    let mut l = open("1", "write", "a");
    l["owner"] = json!("agent");
    assert!(matches!(parse_error(&[l]).reason, Malformed::NotALine(_)));
    let l = open("1", "rename", "a");
    assert!(matches!(parse_error(&[l]).reason, Malformed::NotALine(_)));
}

#[test]
fn a_line_that_names_a_key_twice_is_refused() {
    // One reader keeps the first `path`, another the last: the line says
    // two things, and is read neither way.
    let open_line = open("1", "write", "a").to_string();
    let twice = open_line.replacen("\"path\":\"a\"", "\"path\":\"a\",\"path\":\"b\"", 1);
    assert_ne!(twice, open_line);
    let close_line = close("1", "write", "b", Some(A)).to_string();
    let e = parse(format!("{twice}\n{close_line}\n").as_bytes()).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(matches!(e.reason, Malformed::NotALine(_)), "{e}");
    assert!(
        e.to_string().contains("the key `path` appears twice"),
        "{e}"
    );
    // A begin line (read the other way) too, and a key inside a nested
    // value is no exception.
    let b = begin("r1").to_string();
    let twice = b.replacen("\"agent\":\"a1\"", "\"agent\":\"a1\",\"agent\":\"a2\"", 1);
    assert_ne!(twice, b);
    let e = parse(format!("{twice}\n").as_bytes()).unwrap_err();
    assert!(
        e.to_string().contains("the key `agent` appears twice"),
        "{e}"
    );
}

#[test]
fn a_line_needs_exactly_one_of_path_and_path_hex() {
    let mut both = open("1", "write", "a");
    both["path_hex"] = json!("62");
    assert_eq!(parse_error(&[both]).reason, Malformed::PathFields);
    let mut neither = open("1", "write", "a");
    neither.as_object_mut().unwrap().remove("path");
    assert_eq!(parse_error(&[neither]).reason, Malformed::PathFields);
}

#[test]
fn path_hex_is_the_exact_bytes_and_must_be_hex() {
    let mut l = open("1", "write", "x");
    l.as_object_mut().unwrap().remove("path");
    l["path_hex"] = json!("626164ff");
    assert_eq!(spans(&[l.clone()])[0].path, b"bad\xff");
    l["path_hex"] = json!("zz");
    assert_eq!(parse_error(&[l]).reason, Malformed::PathHex);
}

#[test]
fn a_path_must_stay_inside_the_repository() {
    for (path, want) in [
        ("", PathError::NotRelative(String::new())),
        ("/etc/passwd", PathError::NotRelative("/etc/passwd".into())),
        ("a/../../b", PathError::BadComponent("a/../../b".into())),
        ("./a", PathError::BadComponent("./a".into())),
        ("a//b", PathError::BadComponent("a//b".into())),
        ("a/", PathError::BadComponent("a/".into())),
        (
            ".git/hooks/pre-commit",
            PathError::InsideGit(".git/hooks/pre-commit".into()),
        ),
        (
            "sub/.GIT/config",
            PathError::InsideGit("sub/.GIT/config".into()),
        ),
    ] {
        assert_eq!(check_relative(path.as_bytes()), Err(want.clone()), "{path}");
        let e = parse_error(&[open("1", "write", path)]);
        assert_eq!(e.reason, Malformed::Path(want), "{path}");
    }
    assert_eq!(check_relative(b"src/a b.rs"), Ok(()));
    assert_eq!(check_relative(b".gitignore"), Ok(()));
}

#[test]
fn an_open_line_must_say_open() {
    let mut l = open("1", "write", "a");
    l["status"] = json!("closed");
    assert_eq!(parse_error(&[l]).reason, Malformed::OpenStatus);
}

#[test]
fn a_span_opens_once() {
    let e = parse_error(&[open("1", "write", "a"), open("1", "write", "b")]);
    assert_eq!((e.line, e.reason), (2, Malformed::OpenedTwice("1".into())));
}

#[test]
fn a_close_needs_an_earlier_open() {
    let e = parse_error(&[close("1", "write", "a", Some(A)), open("1", "write", "a")]);
    assert_eq!((e.line, e.reason), (1, Malformed::NeverOpened("1".into())));
}

#[test]
fn a_span_closes_once() {
    let [o, c] = span("1", "write", "a", Some(A));
    let again = close("1", "write", "a", Some(B));
    let e = parse_error(&[o, c, again]);
    assert_eq!((e.line, e.reason), (3, Malformed::ClosedTwice("1".into())));
}

#[test]
fn a_close_line_cannot_say_open() {
    let mut c = close("1", "write", "a", Some(A));
    c["status"] = json!("open");
    let e = parse_error(&[open("1", "write", "a"), c]);
    assert_eq!(e.reason, Malformed::CloseStatus);
}

#[test]
fn a_close_must_match_its_open_op_and_path() {
    let e = parse_error(&[open("1", "write", "a"), close("1", "write", "b", Some(A))]);
    assert_eq!(
        (e.line, e.reason),
        (2, Malformed::CloseMismatch("1".into()))
    );
    let e = parse_error(&[open("1", "read", "a"), close("1", "write", "a", Some(A))]);
    assert_eq!(e.reason, Malformed::CloseMismatch("1".into()));
}

// ---- bijection --------------------------------------------------------------

#[test]
fn a_traced_write_reconciles() {
    let s = spans(&span("1", "write", "a", Some(A)));
    let d = delta(&["a"]);
    assert_eq!(findings(&s, &d, &[("a", A)]), Vec::<String>::new());
    let j = judge(&s, &d);
    assert_eq!((j.mutating_spans, j.changed), (1, 1));
    assert_eq!(j.owned[0].expected, Some(A));
    assert_eq!(j.owned[0].span.id, "1");
}

#[test]
fn a_changed_path_without_a_span_is_a_ghost() {
    let s = spans(&span("1", "write", "a", Some(A)));
    let d = delta(&["a", "sneaky"]);
    assert_eq!(findings(&s, &d, &[("a", A)]), ["ghost sneaky"]);
}

#[test]
fn a_span_on_an_unchanged_path_is_a_phantom() {
    let s = spans(&span("1", "write", "a", Some(A)));
    let d = delta(&[]);
    assert_eq!(judge(&s, &d).phantoms[0].path, b"a");
    assert_eq!(findings(&s, &d, &[]), ["phantom a 1"]);
}

#[test]
fn a_write_whose_bytes_differ_is_a_hash_miss() {
    let s = spans(&span("1", "write", "a", Some(A)));
    let d = delta(&["a"]);
    assert_eq!(
        findings(&s, &d, &[("a", B)]),
        [format!(
            "hash miss a 1 expected Some({A:?}) actual Some({B:?})"
        )]
    );
    assert_eq!(
        findings(&s, &d, &[]),
        [format!("hash miss a 1 expected Some({A:?}) actual None")]
    );
}

#[test]
fn a_delete_whose_path_exists_is_a_hash_miss() {
    // The after hash of a delete is ignored: the path must be absent.
    let s = spans(&span("1", "delete", "a", Some(A)));
    let d = delta(&["a"]);
    assert_eq!(findings(&s, &d, &[]), Vec::<String>::new());
    assert_eq!(
        findings(&s, &d, &[("a", A)]),
        [format!("hash miss a 1 expected None actual Some({A:?})")]
    );
}

#[test]
fn an_open_span_is_reported_and_owns_nothing() {
    let s = spans(&[open("1", "write", "a")]);
    let d = delta(&["a"]);
    assert_eq!(findings(&s, &d, &[("a", A)]), ["open 1", "ghost a"]);
    let j = judge(&s, &d);
    assert_eq!((j.open[0].open_line, j.mutating_spans), (1, 0));
}

#[test]
fn a_span_closed_with_an_error_owns_nothing() {
    let [o, mut c] = span("1", "write", "a", Some(A));
    c["status"] = json!("error");
    c["error"] = json!("disk full");
    let s = spans(&[o, c]);
    assert_eq!(findings(&s, &delta(&["a"]), &[("a", A)]), ["ghost a"]);
    assert_eq!(judge(&s, &delta(&["a"])).mutating_spans, 0);
}

#[test]
fn the_last_closed_span_on_a_path_judges_it() {
    let mut lines = Vec::new();
    lines.extend(span("1", "write", "a", Some(A)));
    lines.extend(span("2", "write", "a", Some(B)));
    let s = spans(&lines);
    let d = delta(&["a"]);
    assert_eq!(findings(&s, &d, &[("a", B)]), Vec::<String>::new());
    assert_eq!(
        findings(&s, &d, &[("a", A)]),
        [format!(
            "hash miss a 2 expected Some({B:?}) actual Some({A:?})"
        )]
    );
    assert_eq!(judge(&s, &d).mutating_spans, 2);

    // A later failed or still-open span does not take the path over.
    let mut failed = close("3", "write", "a", Some(A));
    failed["status"] = json!("error");
    lines.extend([open("3", "write", "a"), failed, open("4", "delete", "a")]);
    let s = spans(&lines);
    assert_eq!(findings(&s, &d, &[("a", B)]), ["open 4"]);
}

#[test]
fn spans_are_ordered_by_their_open_line() {
    // Span 2 opens after span 1 but closes first: span 2 still judges.
    let s = spans(&[
        open("1", "write", "a"),
        open("2", "write", "a"),
        close("2", "write", "a", Some(B)),
        close("1", "write", "a", Some(A)),
    ]);
    assert_eq!(
        findings(&s, &delta(&["a"]), &[("a", B)]),
        Vec::<String>::new()
    );
}

#[test]
fn read_spans_never_count() {
    let mut lines = Vec::new();
    lines.extend(span("1", "read", "changed", Some(A)));
    lines.extend(span("2", "read", "untouched", Some(A)));
    let s = spans(&lines);
    let d = delta(&["changed"]);
    assert_eq!(findings(&s, &d, &[("changed", A)]), ["ghost changed"]);
    assert_eq!(judge(&s, &d).mutating_spans, 0);
}

#[test]
fn a_rename_is_owned_by_a_delete_plus_a_write() {
    let mut lines = Vec::new();
    lines.extend(span("1", "delete", "old name", None));
    lines.extend(span("2", "write", "new name", Some(A)));
    let s = spans(&lines);
    let d = delta(&["old name", "new name"]);
    assert_eq!(findings(&s, &d, &[("new name", A)]), Vec::<String>::new());
    // Only the add traced: the old path is a ghost.
    let s = spans(&span("2", "write", "new name", Some(A)));
    assert_eq!(findings(&s, &d, &[("new name", A)]), ["ghost old name"]);
}

#[test]
fn paths_compare_as_exact_bytes() {
    let mut o = open("1", "write", "x");
    o.as_object_mut().unwrap().remove("path");
    o["path_hex"] = json!("626164ff");
    let mut c = o.clone();
    c["event"] = json!("close");
    c["status"] = json!("closed");
    c["after"] = json!(A);
    let s = spans(&[o, c]);
    let d: BTreeSet<Vec<u8>> = [b"bad\xff".to_vec()].into();
    let j = judge(&s, &d);
    assert!(j.ghosts.is_empty() && j.phantoms.is_empty());
    assert_eq!(j.owned[0].check(Some(A.into())), None);
    // The lossy spelling of the same path is another path.
    let lossy: BTreeSet<Vec<u8>> = ["bad\u{fffd}".as_bytes().to_vec()].into();
    assert_eq!(
        findings(&s, &lossy, &[]),
        ["ghost bad\u{fffd}", "phantom bad\u{fffd} 1"]
    );
}

// ---- an attacker's hand-written trace -------------------------------------

/// Traces that try to pass off an untraced change to `secret` (the delta is
/// `a` and `secret`; only `a` was written through the adapter, with bytes
/// `A`; `secret` now holds `B`). Each must fail to parse or leave `secret`
/// a ghost or a hash miss.
#[test]
fn a_hand_written_trace_cannot_own_an_untraced_change() {
    let honest = span("1", "write", "a", Some(A)).to_vec();
    let with = |extra: Vec<Value>| {
        let mut t = honest.clone();
        t.extend(extra);
        t
    };
    let mut both_paths = open("2", "write", "a");
    both_paths["path_hex"] = json!(hex::encode("secret"));
    let mut dup_key = open("2", "write", "a").to_string();
    dup_key.insert_str(1, "\"path\":\"secret\",");
    let mut error_then_closed = close("2", "write", "secret", Some(B));
    error_then_closed["status"] = json!("error");
    let attempts: Vec<(&str, Vec<u8>)> = vec![
        (
            "a close naming another path than its open",
            text(&with(vec![
                open("2", "write", "a"),
                close("2", "write", "secret", Some(B)),
            ])),
        ),
        (
            "a close for another span's id",
            text(&[
                open("1", "write", "a"),
                close("1", "write", "secret", Some(B)),
            ]),
        ),
        (
            "a duplicate span id",
            text(&with(span("1", "write", "secret", Some(B)).to_vec())),
        ),
        (
            "both path and path_hex",
            text(&with(vec![both_paths.clone(), {
                let mut c = both_paths.clone();
                c["event"] = json!("close");
                c["status"] = json!("closed");
                c["after"] = json!(B);
                c
            }])),
        ),
        ("a repeated JSON key", {
            let mut t = text(&honest);
            t.extend(dup_key.as_bytes());
            t.push(b'\n');
            t
        }),
        (
            "a second close that rewrites the outcome",
            text(&with(vec![
                open("2", "write", "secret"),
                error_then_closed,
                close("2", "write", "secret", Some(B)),
            ])),
        ),
        (
            "a close that turns a read into a write",
            text(&with(vec![
                open("2", "read", "secret"),
                close("2", "write", "secret", Some(B)),
            ])),
        ),
        (
            "a close before its open",
            text(&with(vec![
                close("2", "write", "secret", Some(B)),
                open("2", "write", "secret"),
            ])),
        ),
        (
            "a dot-dot spelling of the path",
            text(&with(span("2", "write", "x/../secret", Some(B)).to_vec())),
        ),
        (
            "a read span on the path",
            text(&with(span("2", "read", "secret", Some(B)).to_vec())),
        ),
        (
            "a write that claims other bytes",
            text(&with(span("2", "write", "secret", Some(A)).to_vec())),
        ),
        (
            "a delete of a path that still exists",
            text(&with(span("2", "delete", "secret", None).to_vec())),
        ),
        (
            "a later failed span",
            text(&with(vec![open("2", "write", "secret"), {
                let mut c = close("2", "write", "secret", Some(B));
                c["status"] = json!("error");
                c
            }])),
        ),
    ];
    let d = delta(&["a", "secret"]);
    for (what, trace) in attempts {
        let Ok(s) = parse(&trace) else { continue };
        let f = findings(&s, &d, &[("a", A), ("secret", B)]);
        assert!(
            f.iter()
                .any(|f| f == "ghost secret" || f.starts_with("hash miss secret")),
            "{what}: accepted with findings {f:?}"
        );
    }
}

// ---- authenticated traces ---------------------------------------------------

/// A fake MAC for these tests (the crate has no HMAC; the host's is tested
/// end to end): sha256 of the key and the input.
fn fake_mac(key: &str, input: &[u8]) -> String {
    let mut bytes = key.as_bytes().to_vec();
    bytes.extend_from_slice(input);
    line_sha256(&bytes)
}

fn begin(run: &str) -> Value {
    json!({"schema": 2, "event": "begin", "run": run, "agent": "a1",
           "key_sha256": A, "workspace": "/ws", "base": B, "git_dir": "/r/.git/worktrees/ws", "prev": null,
           "ts": "2026-11-30T10:00:00Z"})
}

fn end_line(run: &str, lines: u64) -> Value {
    json!({"schema": 2, "event": "end", "run": run, "lines": lines,
           "ts": "2026-11-30T10:00:00Z"})
}

/// Signs and chains `lines` the way the adapter writes them: span lines get
/// schema 2, the run id, `prev` and a MAC under `key`.
fn chained(key: &str, run: &str, lines: &[Value]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for l in lines {
        let mut l = l.clone();
        let obj = l.as_object_mut().unwrap();
        if obj.get("event") != Some(&json!("begin")) {
            obj.insert("prev".into(), json!(line_sha256(out.last().unwrap())));
        }
        if obj.contains_key("span") {
            obj.insert("schema".into(), json!(2));
            obj.insert("agent".into(), json!("a1"));
            obj.entry("run").or_insert(json!(run));
        }
        let input = if obj.contains_key("span") {
            serde_json::from_value::<Line>(l.clone())
                .unwrap()
                .mac_input()
        } else {
            serde_json::from_value::<Seal>(l.clone())
                .unwrap()
                .mac_input()
        };
        l["mac"] = json!(fake_mac(key, &input));
        out.push(serde_json::to_vec(&l).unwrap());
    }
    out
}

fn joined(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut t = Vec::new();
    for l in lines {
        t.extend_from_slice(l);
        t.push(b'\n');
    }
    t
}

fn honest_run() -> Vec<Vec<u8>> {
    let mut lines = vec![begin("r1")];
    lines.extend(span("1", "write", "a", Some(A)));
    lines.extend(span("2", "delete", "b", None));
    lines.push(end_line("r1", 5));
    chained("k", "r1", &lines)
}

fn chain_error(lines: &[Vec<u8>]) -> ParseError {
    parse_trace(&joined(lines)).expect_err("a broken chain")
}

#[test]
fn an_honest_authenticated_trace_parses_with_its_chain() {
    let t = parse_trace(&joined(&honest_run())).unwrap();
    assert_eq!(t.spans.len(), 2);
    assert_eq!(t.spans[0].agent.as_deref(), Some("a1"));
    let chain = t.chain.unwrap();
    assert_eq!(chain.begin.run, "r1");
    assert_eq!(chain.end, Some(6));
    assert_eq!(chain.lines(), 6);
    chain
        .check_macs(|input, mac| fake_mac("k", input) == mac)
        .unwrap();
    let e = chain
        .check_macs(|input, mac| fake_mac("other key", input) == mac)
        .unwrap_err();
    assert_eq!((e.line, e.reason.clone()), (1, Malformed::Mac));
    assert!(e.is_forgery());
}

#[test]
fn an_appended_hand_written_line_is_unsigned() {
    let mut lines = honest_run();
    lines.pop();
    lines.push(serde_json::to_vec(&open("9", "write", "ghost")).unwrap());
    let e = chain_error(&lines);
    assert_eq!((e.line, e.reason.clone()), (6, Malformed::Unsigned));
    assert!(e.to_string().starts_with("line 6: forged: "), "{e}");
}

#[test]
fn a_removed_or_reordered_line_breaks_the_chain() {
    let mut removed = honest_run();
    removed.remove(2);
    let e = chain_error(&removed);
    assert_eq!((e.line, e.reason.clone()), (3, Malformed::Chain));
    let mut swapped = honest_run();
    swapped.swap(3, 4);
    assert_eq!(chain_error(&swapped).reason, Malformed::Chain);
}

#[test]
fn an_edited_line_breaks_the_next_link_or_its_own_mac() {
    let mut lines = honest_run();
    let edited = String::from_utf8(lines[2].clone()).unwrap().replace(A, B);
    lines[2] = edited.into_bytes();
    let e = chain_error(&lines);
    assert_eq!((e.line, e.reason.clone()), (4, Malformed::Chain));
    // The last line edited: the chain holds, its MAC does not.
    let mut lines = honest_run();
    lines.pop();
    let last = lines.len() - 1;
    lines[last] = String::from_utf8(lines[last].clone())
        .unwrap()
        .replace("10:00:00Z", "09:00:00Z")
        .into_bytes();
    let chain = parse_trace(&joined(&lines)).unwrap().chain.unwrap();
    let e = chain
        .check_macs(|input, mac| fake_mac("k", input) == mac)
        .unwrap_err();
    assert_eq!((e.line, e.reason), (5, Malformed::Mac));
}

#[test]
fn a_line_from_another_run_is_refused() {
    let mut lines = honest_run();
    lines.pop();
    let other = chained("k2", "r2", &[begin("r2"), open("7", "write", "x")]);
    let mut foreign: Value = serde_json::from_slice(&other[1]).unwrap();
    foreign["prev"] = json!(line_sha256(lines.last().unwrap()));
    lines.push(serde_json::to_vec(&foreign).unwrap());
    let e = chain_error(&lines);
    assert_eq!(
        e.reason,
        Malformed::OtherRun {
            found: "r2".into(),
            run: "r1".into()
        }
    );
    // Relabelled with this run's id, the chain holds but the MAC is the
    // other run's.
    let n = lines.len() - 1;
    let mut relabelled: Value = serde_json::from_slice(&lines[n]).unwrap();
    relabelled["run"] = json!("r1");
    lines[n] = serde_json::to_vec(&relabelled).unwrap();
    let chain = parse_trace(&joined(&lines)).unwrap().chain.unwrap();
    let e = chain
        .check_macs(|input, mac| fake_mac("k", input) == mac)
        .unwrap_err();
    assert_eq!((e.line, e.reason), (6, Malformed::Mac));
}

#[test]
fn a_begin_line_anywhere_but_line_1_is_refused() {
    let mut lines = honest_run();
    lines.pop();
    let second = chained("k", "r1", &[begin("r1")]);
    lines.push(second[0].clone());
    assert_eq!(chain_error(&lines).reason, Malformed::BeginNotFirst);
    let mut t = text(&span("1", "write", "a", Some(A)));
    t.extend(joined(&chained("k", "r1", &[begin("r1")])));
    let e = parse_trace(&t).unwrap_err();
    assert_eq!((e.line, e.reason), (3, Malformed::BeginNotFirst));
}

#[test]
fn removing_the_begin_line_does_not_make_an_unauthenticated_trace() {
    let mut lines = honest_run();
    lines.remove(0);
    let e = chain_error(&lines);
    assert_eq!((e.line, e.reason.clone()), (1, Malformed::NoBegin));
    assert!(e.is_forgery());
}

#[test]
fn nothing_follows_the_end_line_and_its_count_must_hold() {
    let mut lines = honest_run();
    lines.push(chained("k", "r1", &[begin("r1"), open("9", "write", "z")])[1].clone());
    let e = chain_error(&lines);
    assert_eq!((e.line, e.reason), (7, Malformed::AfterEnd(6)));
    let mut short = vec![begin("r1")];
    short.extend(span("1", "write", "a", Some(A)));
    short.push(end_line("r1", 2));
    let e = chain_error(&chained("k", "r1", &short));
    assert_eq!(e.reason, Malformed::EndCount { said: 2, actual: 3 });
}

#[test]
fn an_unsealed_trace_parses_without_an_end() {
    let mut lines = honest_run();
    lines.pop();
    let chain = parse_trace(&joined(&lines)).unwrap().chain.unwrap();
    assert_eq!(chain.end, None);
}

#[test]
fn a_schema_1_line_cannot_carry_schema_2_fields() {
    let mut l = open("1", "write", "a");
    l["agent"] = json!("a1");
    assert_eq!(parse_error(&[l]).reason, Malformed::NotInSchema1("agent"));
}

#[test]
fn a_close_line_of_another_agent_is_refused() {
    let mut o = open("1", "write", "a");
    o["schema"] = json!(2);
    o["agent"] = json!("a1");
    let mut c = close("1", "write", "a", Some(A));
    c["schema"] = json!(2);
    c["agent"] = json!("a2");
    assert_eq!(
        parse_error(&[o, c]).reason,
        Malformed::CloseMismatch("1".into())
    );
}

// ---- aliases and agents -------------------------------------------------------

#[test]
fn paths_differing_only_in_case_or_normalisation_are_aliases() {
    let s = spans(&[
        open("1", "write", "src/Readme.md"),
        close("1", "write", "src/Readme.md", Some(A)),
        open("2", "write", "caf\u{e9}.txt"),
        close("2", "write", "caf\u{e9}.txt", Some(A)),
    ]);
    let d = delta(&[
        "src/Readme.md",
        "src/README.md",
        "caf\u{e9}.txt",
        "cafe\u{301}.txt",
        "other.txt",
    ]);
    let j = judge(&s, &d);
    let shown: Vec<Vec<String>> = j
        .aliases
        .iter()
        .map(|g| {
            g.iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect()
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            vec!["cafe\u{301}.txt".to_string(), "caf\u{e9}.txt".to_string()],
            vec!["src/README.md".to_string(), "src/Readme.md".to_string()],
        ]
    );
    let d = delta(&["src/Readme.md", "caf\u{e9}.txt"]);
    assert!(judge(&s, &d).aliases.is_empty());
}

#[test]
fn spans_of_two_agents_are_listed_with_their_paths() {
    let mut lines = Vec::new();
    for (id, agent, path) in [("1", "a1", "x"), ("2", "a2", "y"), ("3", "a1", "z")] {
        for mut l in span(id, "write", path, Some(A)) {
            l["schema"] = json!(2);
            l["agent"] = json!(agent);
            lines.push(l);
        }
    }
    let s = spans(&lines);
    let d = delta(&["x", "y", "z"]);
    let j = judge(&s, &d);
    let shown: Vec<(Option<&str>, Vec<&[u8]>)> = j.agents.clone();
    assert_eq!(
        shown,
        vec![
            (Some("a1"), vec![&b"x"[..], b"z"]),
            (Some("a2"), vec![&b"y"[..]]),
        ]
    );
    let one = spans(&lines[..2]);
    let d = delta(&["x"]);
    assert!(judge(&one, &d).agents.is_empty());
}

/// A closed span whose open and close lines record `before`.
fn span_from(
    id: &str,
    op: &str,
    path: &str,
    before: Option<&str>,
    after: Option<&str>,
) -> [Value; 2] {
    let [mut o, mut c] = span(id, op, path, after);
    o["before"] = json!(before);
    c["before"] = json!(before);
    [o, c]
}

/// Every continuity finding: breaks, and first spans whose `before` is not
/// what `base` (path, sha256) holds.
fn breaks(spans: &[Span], base: &[(&str, &str)]) -> Vec<String> {
    let none = delta(&[]);
    let j = judge(spans, &none);
    let mut out: Vec<String> = j
        .firsts
        .iter()
        .filter_map(|f| {
            let at = base
                .iter()
                .find(|(p, _)| p.as_bytes() == f.path)
                .map(|(_, h)| h.to_string());
            f.check(at)
                .map(|m| format!("first {} found {:?}", m.span.id, m.expected))
        })
        .collect();
    out.extend(j.breaks.iter().map(|b| {
        format!(
            "break {} after {} expected {:?} found {:?}",
            b.span.id,
            b.previous.map_or("base", |p| p.id.as_str()),
            b.expected,
            b.found
        )
    }));
    out
}

#[test]
fn a_span_cannot_adopt_an_untraced_change() {
    // The agent writes `a` (A), changes it outside the trace (to B), then a
    // no-op call on `a` records before == after == B: the B nobody traced
    // writing. Its `before` does not chain to span 1's `after`.
    let mut lines = Vec::new();
    lines.extend(span_from("1", "write", "a", None, Some(A)));
    lines.extend(span_from("2", "write", "a", Some(B), Some(B)));
    let s = spans(&lines);
    assert_eq!(
        breaks(&s, &[]),
        [format!(
            "break 2 after 1 expected Some({A:?}) found Some({B:?})"
        )]
    );
    // The honest sequence chains.
    let mut lines = Vec::new();
    lines.extend(span_from("1", "write", "a", None, Some(A)));
    lines.extend(span_from("2", "write", "a", Some(A), Some(B)));
    lines.extend(span_from("3", "delete", "a", Some(B), None));
    lines.extend(span_from("4", "write", "a", None, Some(A)));
    assert_eq!(breaks(&spans(&lines), &[]), Vec::<String>::new());
}

#[test]
fn the_first_span_on_a_path_starts_from_the_base() {
    // Changed outside the trace before any span: the first span's `before`
    // is not the base's entry. The caller checks it (the crate has no I/O).
    let s = spans(&span_from("1", "write", "a", Some(B), Some(B)));
    assert_eq!(
        breaks(&s, &[("a", A)]),
        [format!("first 1 found Some({B:?})")]
    );
    assert_eq!(breaks(&s, &[]), [format!("first 1 found Some({B:?})")]);
    assert_eq!(breaks(&s, &[("a", B)]), Vec::<String>::new());
    // A file the base does not have starts absent.
    let s = spans(&span_from("1", "write", "new", None, Some(A)));
    assert_eq!(breaks(&s, &[]), Vec::<String>::new());
}

#[test]
fn failed_reads_and_open_spans_carry_what_they_saw() {
    // A failed write left C there (its close line says so): the next span
    // starts from it. A read leaves what it found.
    let c = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc";
    let [o, mut failed] = span_from("1", "write", "a", None, Some(c));
    failed["status"] = json!("error");
    let mut lines = vec![o, failed];
    lines.extend(span_from("2", "read", "a", Some(c), Some(c)));
    lines.extend(span_from("3", "write", "a", Some(c), Some(A)));
    assert_eq!(breaks(&spans(&lines), &[]), Vec::<String>::new());
    // After a span that never closed, nothing is known: the next `before`
    // is not judged (the open span fails the run on its own).
    let mut o = open("4", "write", "a");
    o["before"] = json!(A);
    lines.push(o);
    lines.extend(span_from("5", "write", "a", Some(B), Some(B)));
    assert_eq!(breaks(&spans(&lines), &[]), Vec::<String>::new());
}
