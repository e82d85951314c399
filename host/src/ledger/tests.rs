use super::*;
use crate::record::{Verdict, VerdictRecord};
use std::fs;
use std::os::unix::fs::PermissionsExt;

fn verdict(verdict: Verdict) -> VerdictRecord {
    VerdictRecord {
        schema: SCHEMA,
        record: "verdict".into(),
        run_id: "run-001".into(),
        verdict,
        exit_code: verdict.exit_code().code(),
        reasons: vec![],
        transcript_sha256: None,
        lock_sha256: None,
        properties_sha256: None,
        tokens: None,
    }
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-"))
        .collect()
}

#[test]
fn run_id_parse_accepts_file_safe_ids() {
    let long = "a".repeat(128);
    for id in ["run-001", "R", "0", "a.b_c-D", long.as_str()] {
        assert_eq!(RunId::parse(id).unwrap().as_str(), id);
    }
    assert_eq!(RunId::parse("run-001").unwrap().to_string(), "run-001");
}

#[test]
fn run_id_parse_refuses_ids_that_are_not_plain_file_names() {
    let long = "a".repeat(129);
    for id in [
        "",
        "-run",
        ".hidden",
        "_x",
        "..",
        "../x",
        "a/b",
        "run 1",
        "run\n1",
        "ré",
        long.as_str(),
    ] {
        let err = RunId::parse(id).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::Sysexit::Usage, "{id:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("invalid run id `{id}`")),
            "{err}"
        );
    }
}

#[test]
fn ledger_paths_follow_the_documented_layout() {
    let l = Ledger::new(".agent-ledger");
    let run = RunId::parse("run-001").unwrap();
    assert_eq!(
        l.transcript(&run),
        Path::new(".agent-ledger/transcripts/run-001.json")
    );
    assert_eq!(
        l.lock(&run),
        Path::new(".agent-ledger/fixtures/run-001.lock.json")
    );
    assert_eq!(
        l.properties(&run),
        Path::new(".agent-ledger/properties/run-001.json")
    );
    assert_eq!(
        l.verdict(&run),
        Path::new(".agent-ledger/verdicts/run-001.json")
    );
}

#[test]
fn write_new_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("verdicts/run-001.json");
    write_new(&path, b"first\n").unwrap();
    let err = write_new(&path, b"second\n").unwrap_err();
    assert_eq!(err.exit_code(), crate::exit::Sysexit::CantCreate);
    match &err {
        Error::Exists { path: p, hint } => {
            assert_eq!(p, &path);
            assert_eq!(hint, RETRY_HINT);
        }
        other => panic!("expected Error::Exists, got {other:?}"),
    }
    assert!(
        err.to_string()
            .ends_with("run-001.json` already exists and records are never overwritten; a retry is a new run id"),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), b"first\n");
    assert!(leftovers(&path.with_file_name("")).is_empty());
}

#[test]
fn write_new_does_not_write_through_a_dangling_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run-001.json");
    let target = dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(matches!(write_new(&path, b"x"), Err(Error::Exists { .. })));
    assert!(!target.exists());
}

#[test]
fn a_growing_file_has_its_final_name_only_once_finished() {
    let dir = tempfile::tempdir().unwrap();
    let partial = dir.path().join("t/run-001.response.partial");
    let target = dir.path().join("t/run-001.response");
    let mut g = Growing::create(&partial, &target).unwrap();
    g.write(b"data: 1\n\n").unwrap();
    assert_eq!(fs::read(&partial).unwrap(), b"data: 1\n\n");
    assert!(!target.exists());
    assert!(matches!(
        Growing::create(&partial, &target),
        Err(Error::Exists { .. })
    ));
    g.write(b"data: 2\n\n").unwrap();
    g.finish().unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"data: 1\n\ndata: 2\n\n");
    assert!(!partial.exists());
    assert_eq!(mode(&target), 0o644);
    // A target that appeared meanwhile is never replaced.
    let g = Growing::create(&partial, &target).unwrap();
    assert!(matches!(g.finish(), Err(Error::Exists { .. })));
    assert_eq!(fs::read(&target).unwrap(), b"data: 1\n\ndata: 2\n\n");
}

#[test]
fn records_are_written_with_mode_0644() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("verdicts/run-001.json");
    let sha = write_record(&path, &verdict(Verdict::Review)).unwrap();
    assert_eq!(mode(&path), 0o644);
    let bytes = fs::read(&path).unwrap();
    assert_eq!(sha, sha256_hex(&bytes));
    assert!(bytes.ends_with(b"}\n"));
    assert!(leftovers(&dir.path().join("verdicts")).is_empty());
}

#[test]
fn write_or_match_accepts_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run-001.json");
    let first = write_or_match(&path, &verdict(Verdict::Reject), "verdict").unwrap();
    let again = write_or_match(&path, &verdict(Verdict::Reject), "verdict").unwrap();
    assert_eq!(first, again);
    assert_eq!(first, sha256_hex(&to_bytes(&verdict(Verdict::Reject))));
}

#[test]
fn write_or_match_refuses_different_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run-001.json");
    write_or_match(&path, &verdict(Verdict::Reject), "verdict").unwrap();
    let err = write_or_match(&path, &verdict(Verdict::Review), "verdict").unwrap_err();
    assert_eq!(err.exit_code(), crate::exit::Sysexit::CantCreate);
    assert!(
        err.to_string().ends_with(
            "the verdict on file differs from the one derived now; a retry is a new run id"
        ),
        "{err}"
    );
    let on_file: Loaded<VerdictRecord> = read_required(&path).unwrap();
    assert_eq!(on_file.record.verdict, Verdict::Reject);
}

#[test]
fn store_object_names_the_object_by_its_sha256_once() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::new(dir.path());
    let sha = store_object(&ledger, b"plugin bytes").unwrap();
    assert_eq!(sha, sha256_hex(b"plugin bytes"));
    assert_eq!(store_object(&ledger, b"plugin bytes").unwrap(), sha);
    fs::write(ledger.objects().join(&sha), b"corrupted").unwrap();
    let err = store_object(&ledger, b"plugin bytes")
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("stored object does not hash to its name"),
        "{err}"
    );
}

fn parse_err(text: &str) -> String {
    let err = parse_record::<VerdictRecord>(Path::new("l/verdicts/run-001.json"), text.as_bytes())
        .unwrap_err();
    assert_eq!(err.exit_code(), crate::exit::Sysexit::Data, "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with("`l/verdicts/run-001.json`: "), "{msg}");
    msg
}

fn record_json(schema: u32, kind: &str) -> String {
    let mut v = serde_json::to_value(verdict(Verdict::Review)).unwrap();
    v["schema"] = schema.into();
    v["record"] = kind.into();
    v.to_string()
}

#[test]
fn parse_record_accepts_its_own_kind_and_hashes_the_exact_bytes() {
    let text = record_json(1, "verdict");
    let loaded = parse_record::<VerdictRecord>(Path::new("v.json"), text.as_bytes()).unwrap();
    assert_eq!(loaded.record, verdict(Verdict::Review));
    assert_eq!(loaded.sha256, sha256_hex(text.as_bytes()));
    assert_eq!(loaded.path, Path::new("v.json"));
}

#[test]
fn parse_record_refuses_a_key_named_twice_at_any_depth() {
    // serde_json's `Value` would keep the last `verdict`; a reader keeping
    // the first would see another record.
    let text = record_json(1, "verdict");
    let twice = text.replacen('{', "{\"verdict\":\"reject\",", 1);
    let err = parse_err(&twice);
    assert!(
        err.contains("ambiguous JSON: the key `verdict` appears twice"),
        "{err}"
    );
    // Deeper down: a lock's entry that names two digests.
    let entry = |sha: &str| {
        format!(
            r#"{{"schema":1,"record":"fixture_lock","run_id":"r","transcript_sha256":"t","base_revision":null,"roots":["f"],"count":1,"dir_hash":"d","files":[{{"path":"f/a","kind":"file","size":1,{sha}}}]}}"#
        )
    };
    let lock = |text: &str| {
        parse_record::<crate::record::FixtureLock>(Path::new("l.json"), text.as_bytes())
            .map(|l| l.record.files[0].sha256.clone())
            .map_err(|e| e.to_string())
    };
    assert_eq!(lock(&entry(r#""sha256":"b""#)).unwrap(), "b");
    let err = lock(&entry(r#""sha256":"a","sha256":"b""#)).unwrap_err();
    assert!(err.contains("the key `sha256` appears twice"), "{err}");
}

#[test]
fn parse_record_refuses_a_newer_schema() {
    assert_eq!(
        parse_err(&record_json(2, "verdict")),
        "`l/verdicts/run-001.json`: field `schema` is 2; this build reads schema 1 and refuses newer major versions"
    );
}

#[test]
fn parse_record_refuses_schema_zero() {
    assert!(parse_err(&record_json(0, "verdict")).contains("field `schema` is 0"));
    assert!(
        parse_err(r#"{"schema":"1","record":"verdict"}"#)
            .contains("missing or non-integer field `schema`")
    );
}

#[test]
fn parse_record_refuses_a_record_of_another_kind() {
    assert_eq!(
        parse_err(&record_json(1, "transcript")),
        "`l/verdicts/run-001.json`: field `record` is `transcript`, expected `verdict`"
    );
}

#[test]
fn parse_record_refuses_non_json() {
    assert!(parse_err("verdict: review\n").contains("not valid JSON"));
    assert!(parse_err("").contains("not valid JSON"));
}

#[test]
fn parse_record_refuses_a_record_missing_a_field() {
    let msg = parse_err(r#"{"schema":1,"record":"verdict","run_id":"run-001"}"#);
    assert!(msg.contains("malformed verdict record"), "{msg}");
}

#[test]
fn read_optional_of_a_missing_record_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("run-404.json");
    assert!(read_optional::<VerdictRecord>(&missing).unwrap().is_none());
    let err = read_required::<VerdictRecord>(&missing).unwrap_err();
    assert_eq!(err.exit_code(), crate::exit::Sysexit::NoInput);
    assert!(err.to_string().contains("run-404.json"), "{err}");
}
