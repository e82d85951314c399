//! The ledger directory: where each record of a run lives, the one place that
//! writes records (atomic, never overwriting) and the one place that reads and
//! checks them (schema, kind, run id).

use crate::digest::sha256_hex;
use crate::exit::{Error, Result};
use crate::record::{Record, SCHEMA};

use std::path::{Path, PathBuf};

mod write;
pub use crate::atomic::Access;
pub use write::{Growing, write_new, write_new_as};

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

    /// The run id of the patch that ends at `commit` (`capture --git`
    /// without `--run`, and `check` without it on that checkout):
    /// `git-` and the commit's first 12 hex digits, so two branches never
    /// share one and a later push is a run of its own.
    pub fn of_commit(commit: &str) -> Result<Self> {
        RunId::parse(&format!("git-{}", commit.get(..12).unwrap_or(commit)))
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
    Ok(Loaded {
        record: parse_unhashed(path, bytes)?,
        sha256: sha256_hex(bytes),
        path: path.to_path_buf(),
    })
}

/// [`parse_record`] without the digest of the bytes, for a reader that
/// never names it (`lock --compare`).
pub fn parse_unhashed<T: Record>(path: &Path, bytes: &[u8]) -> Result<T> {
    // The usual record parses straight into its type, in one pass and with
    // no tree of values in between (a 10,000-file lock is 1.8 MB);
    // anything else (a duplicate key, a wrong type, not JSON, a schema or
    // kind not this one) takes the path below, which decides and words the
    // error (a key named twice is refused there, whichever key it is).
    if let Ok(record) = serde_json::from_slice::<T>(bytes)
        && record.schema() != 0
        && record.schema() <= SCHEMA
        && record.kind() == T::KIND
    {
        return Ok(record);
    }
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::data(path, format!("not valid JSON: {e}")))?;
    // `Value` keeps the last of two equal keys, another reader may keep the
    // first: a record that says two things is refused, not read one way.
    serde_json::from_slice::<agent_ledger_trace::UniqueKeys>(bytes)
        .map_err(|e| Error::data(path, format!("ambiguous JSON: {e}")))?;
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
    serde_path_to_error::deserialize(value).map_err(|e| {
        Error::data(
            path,
            format!(
                "malformed {} record: field `{}`: {}",
                T::KIND,
                e.path(),
                e.inner()
            ),
        )
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
mod tests;
