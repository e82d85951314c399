//! The ledger directory: where each record of a run lives, the one place that
//! writes records (atomic, never overwriting) and the one place that reads and
//! checks them (schema, kind, run id).

use crate::digest::sha256_hex;
use crate::exit::{Error, Result};
use crate::record::{Record, SCHEMA};

use std::path::{Path, PathBuf};

mod write;
pub use write::{Access, Clobber, Growing, write_atomic, write_new, write_new_as};

/// The `.gitignore` a new ledger gets ([`Ledger::create`]).
pub const GITIGNORE: &str = "# Made by agent-ledger: the ledger's records are not source. Delete this\n# file to track them in git.\n*\n";

/// Hint appended when a run id is reused.
pub const RETRY_HINT: &str = "a retry is a new run id";

#[derive(Debug, Clone)]
pub struct Ledger {
    root: PathBuf,
}

impl Ledger {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Ledger { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Makes the ledger directory when it does not exist yet, with a
    /// `.gitignore` in it that ignores everything there (itself included),
    /// so records never show in `git status` or get committed by accident.
    /// An existing ledger is left as it is (its owner may track it on
    /// purpose). Every run starts with a capture (or a merge), which calls
    /// this first.
    pub fn create(&self) -> Result<()> {
        if self.root.symlink_metadata().is_ok() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.root).map_err(|e| Error::write(&self.root, e))?;
        match write_new(&self.root.join(".gitignore"), GITIGNORE.as_bytes()) {
            // Another capture made the same new ledger at the same time.
            Err(Error::Exists { .. }) => Ok(()),
            other => other,
        }
    }

    pub fn transcripts_dir(&self) -> PathBuf {
        self.root.join("transcripts")
    }
    pub fn transcript(&self, run: &RunId) -> PathBuf {
        self.transcripts_dir().join(format!("{run}.json"))
    }
    pub fn lock(&self, run: &RunId) -> PathBuf {
        self.root.join("fixtures").join(format!("{run}.lock.json"))
    }
    pub fn properties(&self, run: &RunId) -> PathBuf {
        self.root.join("properties").join(format!("{run}.json"))
    }
    /// The test report of a run, stored beside its property record.
    pub fn junit(&self, run: &RunId) -> PathBuf {
        self.root
            .join("properties")
            .join(format!("{run}.junit.xml"))
    }
    /// The report the test command wrote on the base revision (its
    /// baseline).
    pub fn base_junit(&self, run: &RunId) -> PathBuf {
        self.root
            .join("properties")
            .join(format!("{run}.base-junit.xml"))
    }
    /// Everything the trial's test command wrote (`check --test-cmd`).
    pub fn test_log(&self, run: &RunId) -> PathBuf {
        self.root.join("properties").join(format!("{run}.test.log"))
    }
    /// The evaluator's test patch of the trial (`--eval-patch`).
    pub fn eval_patch(&self, run: &RunId) -> PathBuf {
        self.root
            .join("properties")
            .join(format!("{run}.eval.patch"))
    }
    /// Content-addressed store: plugins, configurations and known-bad
    /// patches a replay used, each named by its sha256.
    pub fn objects(&self) -> PathBuf {
        self.root.join("objects")
    }
    /// The signed verdict (DSSE envelope) of a run.
    pub fn signature(&self, run: &RunId) -> PathBuf {
        self.root
            .join("signatures")
            .join(format!("{run}.dsse.json"))
    }
    pub fn verdict(&self, run: &RunId) -> PathBuf {
        self.root.join("verdicts").join(format!("{run}.json"))
    }
}

/// A validated run id: safe to use as a file name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunId(String);

impl RunId {
    pub fn parse(s: &str) -> Result<Self> {
        let ok = !s.is_empty()
            && s.len() <= 128
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if ok {
            Ok(RunId(s.to_string()))
        } else {
            Err(Error::Usage(format!(
                "invalid run id `{s}`: use 1 to 128 ASCII letters, digits, `.`, `_` or `-`, starting with a letter or digit"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Stores bytes in the content-addressed object store, once.
pub fn store_object(ledger: &Ledger, bytes: &[u8]) -> Result<String> {
    let sha = sha256_hex(bytes);
    let path = ledger.objects().join(&sha);
    match crate::input::read_optional(&path, crate::input::OBJECT_CAP)? {
        Some(existing) if sha256_hex(&existing) == sha => Ok(sha),
        // A corrupt object is never trusted, and never silently replaced.
        Some(_) => Err(Error::data(
            &path,
            "stored object does not hash to its name",
        )),
        None => match write_new(&path, bytes) {
            // Another trial of this process stored it first: check it.
            Err(Error::Exists { .. }) => store_object(ledger, bytes),
            other => other.map(|()| sha),
        },
    }
}

/// Something looked up by digest or by name: its bytes, or why it cannot
/// be had. `Unavailable` is a per-property error in a replay, not a failure
/// of the whole command.
#[derive(Debug)]
pub enum Fetched {
    Found(Vec<u8>),
    Unavailable(String),
}

/// Reads `objects/SHA` and checks it hashes to its name.
pub fn read_object(objects: &Path, sha: &str) -> Result<Fetched> {
    if !crate::digest::is_sha256_hex(sha) {
        return Ok(Fetched::Unavailable(format!("`{sha}` is not a sha256")));
    }
    let path = objects.join(sha);
    Ok(
        match crate::input::read_file(&path, crate::input::OBJECT_CAP) {
            Ok(bytes) if sha256_hex(&bytes) == sha => Fetched::Found(bytes),
            Ok(bytes) => Fetched::Unavailable(format!(
                "`{}` has sha256 {}, not its name",
                path.display(),
                sha256_hex(&bytes)
            )),
            Err(e) => {
                Fetched::Unavailable(format!("`{}` is not in the ledger: {e}", path.display()))
            }
        },
    )
}

/// Serialises a record the one way records are written: pretty JSON with a
/// trailing newline. Deterministic for equal values.
pub fn to_bytes<T: Record>(record: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(record).expect("records serialise");
    bytes.push(b'\n');
    bytes
}

/// Writes a new record; see [`write_new`]. Returns the record's sha256.
pub fn write_record<T: Record>(path: &Path, record: &T) -> Result<String> {
    let bytes = to_bytes(record);
    write_new(path, &bytes)?;
    Ok(sha256_hex(&bytes))
}

/// Writes a record unless an identical one is already there: re-deriving a
/// record from the same inputs is idempotent, but a different record is never
/// written over the one on file. Returns the record's sha256.
pub fn write_or_match<T: Record>(path: &Path, record: &T, what: &str) -> Result<String> {
    write_bytes_or_match(path, &to_bytes(record), what)
}

/// [`write_or_match`] for bytes that are not a record (a stored report).
pub fn write_bytes_or_match(path: &Path, bytes: &[u8], what: &str) -> Result<String> {
    match crate::input::read_optional(path, crate::input::OBJECT_CAP)? {
        Some(existing) if existing == bytes => Ok(sha256_hex(bytes)),
        Some(_) => Err(Error::Exists {
            path: path.to_path_buf(),
            hint: format!("the {what} on file differs from the one derived now; {RETRY_HINT}"),
        }),
        None => {
            write_new(path, bytes)?;
            Ok(sha256_hex(bytes))
        }
    }
}

/// A record read from disk, with the digest of its exact bytes.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    pub record: T,
    pub sha256: String,
    pub path: PathBuf,
}

/// Reads a record, or `None` when the file does not exist.
pub fn read_optional<T: Record>(path: &Path) -> Result<Option<Loaded<T>>> {
    match crate::input::read_optional(path, crate::input::RECORD_CAP)? {
        Some(bytes) => parse_record(path, &bytes).map(Some),
        None => Ok(None),
    }
}

/// Reads a record that must exist.
pub fn read_required<T: Record>(path: &Path) -> Result<Loaded<T>> {
    let bytes = crate::input::read_file(path, crate::input::RECORD_CAP)?;
    parse_record(path, &bytes)
}

/// Parses and checks a record: JSON, `schema` not newer than this build,
/// `record` naming the expected kind.
pub fn parse_record<T: Record>(path: &Path, bytes: &[u8]) -> Result<Loaded<T>> {
    // The usual record parses straight into its type, with no tree of
    // values in between (a 10,000-file lock is 1.8 MB); anything else
    // (a duplicate key, a wrong type, not JSON) takes the path below, which
    // decides and words the error exactly as it always has.
    #[derive(serde::Deserialize)]
    struct Head {
        schema: Option<u64>,
        record: Option<String>,
    }
    if let Ok(Head {
        schema: Some(schema),
        record: Some(kind),
    }) = serde_json::from_slice::<Head>(bytes)
        && schema != 0
        && schema <= u64::from(SCHEMA)
        && kind == T::KIND
        && let Ok(record) = serde_json::from_slice::<T>(bytes)
    {
        return Ok(Loaded {
            record,
            sha256: sha256_hex(bytes),
            path: path.to_path_buf(),
        });
    }
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::data(path, format!("not valid JSON: {e}")))?;
    let schema = value
        .get("schema")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| Error::data(path, "missing or non-integer field `schema`"))?;
    if schema > u64::from(SCHEMA) || schema == 0 {
        return Err(Error::data(
            path,
            format!(
                "field `schema` is {schema}; this build reads schema {SCHEMA} and refuses newer major versions"
            ),
        ));
    }
    let kind = value.get("record").and_then(|v| v.as_str()).unwrap_or("");
    if kind != T::KIND {
        return Err(Error::data(
            path,
            format!("field `record` is `{kind}`, expected `{}`", T::KIND),
        ));
    }
    let record: T = serde_json::from_value(value)
        .map_err(|e| Error::data(path, format!("malformed {} record: {e}", T::KIND)))?;
    Ok(Loaded {
        record,
        sha256: sha256_hex(bytes),
        path: path.to_path_buf(),
    })
}

/// Refuses a record that belongs to another run.
pub fn check_run<T: Record>(loaded: &Loaded<T>, run: &RunId) -> Result<()> {
    if loaded.record.run_id() != run.as_str() {
        return Err(Error::data(
            &loaded.path,
            format!(
                "field `run_id` is `{}` but this is run `{run}`: records from another run are refused",
                loaded.record.run_id()
            ),
        ));
    }
    Ok(())
}

/// Checks that `actual` (the digest of a record read from disk) is what
/// `field` of the record at `path` says it builds on.
pub fn check_link(path: &Path, field: &str, named: &str, actual: &str, what: &Path) -> Result<()> {
    if named != actual {
        return Err(Error::data(
            path,
            format!(
                "field `{field}` names sha256 {named} but `{}` has sha256 {actual}: the chain is broken",
                what.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
        let err =
            parse_record::<VerdictRecord>(Path::new("l/verdicts/run-001.json"), text.as_bytes())
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
}
