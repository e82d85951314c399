//! The batch manifest: JSONL, one trial per line ([`ManifestLine`]), each line read
//! and checked on its own (a bad line is an error naming it), and the
//! files a line names confined to the manifest's directory.

use crate::exit::{Error, Result};
use crate::ledger::RunId;
use crate::provider::BodyFormat;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The manifest format this build reads (`schema` on a line, optional).
pub const MANIFEST_SCHEMA: u32 = 1;

/// One trial of a manifest. Paths are relative to the manifest's directory.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestLine {
    /// The manifest format; 1 when absent.
    #[serde(default)]
    pub schema: Option<u32>,
    /// The run id.
    pub run: String,
    /// The model's response body, a file (as `capture --body`).
    #[serde(default)]
    pub body: Option<PathBuf>,
    /// A prompt for live capture (`capture --prompt-file`), sent with the
    /// `[capture]` settings of the repository's working-tree configuration
    /// (or `config`) and `MODEL_TOKEN_BUDGET`. Live captures all happen
    /// first; a run already captured is never sent again.
    #[serde(default)]
    pub prompt: Option<PathBuf>,
    /// Seconds a live capture (`prompt`) may take as a whole, as `capture
    /// --total-timeout` (over the configuration's `total_timeout`).
    #[serde(default)]
    pub total_timeout: Option<u64>,
    /// The body format (`raw` when absent), as `capture --body-format`.
    #[serde(default)]
    pub format: Option<String>,
    /// As `capture --extract`.
    #[serde(default)]
    pub extract: Option<crate::envelope::Extract>,
    /// The repository.
    pub repo: PathBuf,
    /// The base revision.
    pub base: String,
    /// A configuration file outside the repository (as `--config`).
    #[serde(default)]
    pub config: Option<PathBuf>,
    /// A JUnit report (as `check --junit`).
    #[serde(default)]
    pub junit: Option<PathBuf>,
    /// The project's test command (as `check --test-cmd`).
    #[serde(default)]
    pub test_cmd: Option<String>,
    /// When the body was captured, RFC 3339 (default: now). Fixing it makes
    /// a re-run batch write byte-identical records.
    #[serde(default)]
    pub captured_at: Option<String>,
    /// The evaluator's test patch (as `check --eval-patch`): a file, or the
    /// diff itself inline (a string holding a newline is the text).
    #[serde(default)]
    pub eval_patch: Option<String>,
    /// Tests that fail on the base and must pass (SWE-bench's
    /// `FAIL_TO_PASS`): a list, or a JSON-encoded list in a string.
    #[serde(default, deserialize_with = "id_list")]
    #[schemars(with = "IdList")]
    pub fail_to_pass: Vec<String>,
    /// Tests that must keep passing (`PASS_TO_PASS`), the same way.
    #[serde(default, deserialize_with = "id_list")]
    #[schemars(with = "IdList")]
    pub pass_to_pass: Vec<String>,
    /// As `check --require-pass`.
    #[serde(default, deserialize_with = "id_list")]
    #[schemars(with = "IdList")]
    pub require_pass: Vec<String>,
    /// As `check --test-ro` (host paths, absolute).
    #[serde(default)]
    pub test_ro: Vec<PathBuf>,
    /// As `check --test-env` (`NAME` or `NAME=VALUE`).
    #[serde(default)]
    pub test_env: Vec<String>,
    /// As `check --test-log-parser`.
    #[serde(default)]
    pub log_parser: Option<crate::logparse::LogParser>,
    /// A label for reports (`report --swebench`): the benchmark instance
    /// the trial evaluates. Not part of the trial.
    #[serde(default)]
    pub instance_id: Option<String>,
    /// A label for reports: the model whose prediction the body is.
    #[serde(default)]
    pub model: Option<String>,
    /// For reports (`report --swebench`): ids `swebench import` left out of
    /// the dataset's lists because no runner reports them (fragments of
    /// the harness's log, such as `[100%]`), each with its list. Not part
    /// of the trial.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_ids: Vec<DroppedId>,
    /// The body's length as its sender counted it (as `capture
    /// --declared-bytes`): a body cut at a hunk or file boundary is still
    /// a valid diff, and only its length shows the cut.
    #[serde(default)]
    pub declared_bytes: Option<u64>,
}

/// A list of test ids, or SWE-bench's spelling of one: a string holding a
/// JSON list.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum IdList {
    List(Vec<String>),
    Encoded(String),
}

impl ManifestLine {
    /// The evaluator's test patch the line names, read (`None` without
    /// one).
    pub fn eval_patch(&self) -> Result<Option<crate::evaluation::TestPatch>> {
        Ok(match &self.eval_patch {
            Some(text) if text.contains('\n') => Some(crate::evaluation::TestPatch::new(
                text.clone().into_bytes(),
                "the manifest's inline `eval_patch`",
            )?),
            Some(file) => {
                let path = PathBuf::from(file);
                Some(crate::evaluation::TestPatch::new(
                    crate::input::read_file(&path, crate::input::BODY_CAP)?,
                    path.display().to_string(),
                )?)
            }
            None => None,
        })
    }

    /// How a run of this line was judged otherwise than the line says:
    /// another body (`receipt`, the run's transcript receipt), base, test
    /// command, log parser, report, evaluator's patch or required tests, or
    /// no baseline for an evaluation. A shard's records are the shard's
    /// word: a report that counts a run against this line must first see
    /// it answers this line. Not compared, as no record holds them:
    /// `test_ro` and `test_env`.
    pub fn disagreement(
        &self,
        record: &crate::record::PropertyRecord,
        receipt: Option<&crate::record::TranscriptReceipt>,
    ) -> Result<Option<String>> {
        let digest = |path: &Path| -> Result<String> {
            Ok(crate::digest::sha256_hex(&crate::input::read_file(
                path,
                crate::input::BODY_CAP,
            )?))
        };
        if let (Some(body), Some(receipt)) = (&self.body, receipt) {
            let stored = receipt.response.as_ref().unwrap_or(&receipt.body);
            if stored.sha256 != digest(body)? {
                return Ok(Some(format!(
                    "its captured body (sha256 {}) is not the line's `{}`",
                    stored.sha256,
                    body.display()
                )));
            }
        }
        let hex = self.base.len() >= 7 && self.base.bytes().all(|b| b.is_ascii_hexdigit());
        let same_base = if hex {
            record
                .base_revision
                .starts_with(&self.base.to_ascii_lowercase())
        } else {
            crate::git::Repo::open(&self.repo)
                .and_then(|r| r.resolve_commit(&self.base))
                .is_ok_and(|c| c == record.base_revision)
        };
        if !same_base {
            return Ok(Some(format!(
                "it was judged on base `{}`, the line names `{}`{}",
                record.base_revision,
                self.base,
                if hex {
                    ""
                } else {
                    " (resolved in the line's `repo`, where it must resolve)"
                }
            )));
        }
        if let Some(junit) = &self.junit {
            let want = digest(junit)?;
            if record.junit.as_ref().map(|j| &j.sha256) != Some(&want) {
                return Ok(Some(format!(
                    "its report is not the line's `{}`",
                    junit.display()
                )));
            }
        }
        let run = record.test_run.as_ref();
        if run.map(|r| &r.command) != self.test_cmd.as_ref() {
            return Ok(Some(format!(
                "it was judged with test command {}, the line names {}",
                run.map_or("none".into(), |r| format!("`{}`", r.command)),
                self.test_cmd
                    .as_ref()
                    .map_or("none".into(), |c| format!("`{c}`"))
            )));
        }
        if let Some(run) = run
            && run.stopped.is_none()
            && run.log_parser != self.log_parser
        {
            return Ok(Some(format!(
                "its output was read with log parser {}, the line names {}",
                run.log_parser.map_or("none", |p| p.as_str()),
                self.log_parser.map_or("none", |p| p.as_str())
            )));
        }
        let patch = self.eval_patch()?;
        let evaluation = record.evaluation.as_ref();
        let recorded = evaluation.and_then(|e| e.patch.as_ref()).map(|p| &p.sha256);
        if recorded != patch.as_ref().map(|p| &p.sha256) {
            return Ok(Some(format!(
                "it was judged with evaluator's patch {}, the line's is {}",
                recorded.map_or("none".into(), |s| format!("sha256 {s}")),
                patch
                    .as_ref()
                    .map_or("none".into(), |p| format!("sha256 {}", p.sha256))
            )));
        }
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v.dedup();
            v
        };
        let required = evaluation.map(|e| e.required.clone()).unwrap_or_default();
        for (list, judged, line) in [
            ("fail_to_pass", &required.fail_to_pass, &self.fail_to_pass),
            ("pass_to_pass", &required.pass_to_pass, &self.pass_to_pass),
            ("require_pass", &required.require_pass, &self.require_pass),
        ] {
            if sorted(judged) != sorted(line) {
                return Ok(Some(format!(
                    "it was judged with {} `{list}` tests, the line requires {}",
                    judged.len(),
                    line.len()
                )));
            }
        }
        if patch.is_some() && run.is_some_and(|r| r.baseline.is_none()) {
            return Ok(Some(
                "it was judged without a run on the base revision (`--no-test-baseline`), so what failed there is unknown".into(),
            ));
        }
        Ok(None)
    }
}

fn id_list<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    match IdList::deserialize(d)? {
        IdList::List(l) => Ok(l),
        IdList::Encoded(s) => serde_json::from_str::<Vec<String>>(&s).map_err(|e| {
            serde::de::Error::custom(format!("a string of test ids must hold a JSON list: {e}"))
        }),
    }
}

/// Reads the manifest: every trial line (numbered), or the error of each
/// bad line.
pub fn read_manifest(
    path: &Path,
) -> Result<Vec<(usize, std::result::Result<ManifestLine, String>)>> {
    let bytes = crate::input::read_file(path, crate::input::REPORT_CAP)?;
    let text =
        String::from_utf8(bytes).map_err(|_| Error::data(path, "the manifest is not UTF-8"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let raw = raw.trim();
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        // The error names the field (`field `log_parser`: unknown variant
        // ...`), not only a column.
        let mut de = serde_json::Deserializer::from_str(raw);
        let parsed = serde_path_to_error::deserialize::<_, ManifestLine>(&mut de)
            .map_err(|e| match e.path().to_string().as_str() {
                "." => e.inner().to_string(),
                at => format!("field `{at}`: {}", e.inner()),
            })
            // Nothing may follow the object on its line.
            .and_then(|l| de.end().map(|()| l).map_err(|e| e.to_string()))
            .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
            .and_then(|l| {
                check_line(l, dir).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
            });
        lines.push((i + 1, parsed));
    }
    if lines.is_empty() {
        return Err(Error::Missing(format!(
            "the manifest `{}` holds no trial (only blank lines and `#` comments)",
            path.display()
        )));
    }
    Ok(lines)
}

/// Refuses a line that names a file outside the manifest's directory and
/// the `--manifest-root`s (after links are resolved): a manifest is input
/// too, and `body: "/etc/shadow"` would copy that file into the ledger.
/// The repository is a directory git reads, never copied, and is not
/// confined.
pub(super) fn confine(l: &ManifestLine, roots: &[PathBuf]) -> std::result::Result<(), String> {
    let mut named: Vec<(&str, &Path)> = Vec::new();
    for (field, p) in [
        ("body", &l.body),
        ("prompt", &l.prompt),
        ("junit", &l.junit),
        ("config", &l.config),
    ] {
        if let Some(p) = p {
            named.push((field, p.as_path()));
        }
    }
    if let Some(e) = &l.eval_patch
        && !e.contains('\n')
    {
        named.push(("eval_patch", Path::new(e)));
    }
    named.extend(l.test_ro.iter().map(|p| ("test_ro", p.as_path())));
    for (field, p) in named {
        let real = std::fs::canonicalize(p)
            .map_err(|e| format!("field `{field}`: `{}`: {e}", p.display()))?;
        if !roots.iter().any(|r| real.starts_with(r)) {
            return Err(format!(
                "field `{field}`: `{}` lies outside the manifest's directory; pass `--manifest-root DIR` to allow another",
                p.display()
            ));
        }
    }
    Ok(())
}

fn check_line(mut l: ManifestLine, dir: &Path) -> std::result::Result<ManifestLine, String> {
    if let Some(s) = l.schema
        && s != MANIFEST_SCHEMA
    {
        return Err(format!(
            "field `schema` is {s}; this build reads manifest schema {MANIFEST_SCHEMA}"
        ));
    }
    RunId::parse(&l.run).map_err(|e| format!("field `run`: {e}"))?;
    match (&l.body, &l.prompt) {
        (Some(_), None) => {}
        (None, Some(_)) => {
            if l.format.is_some() || l.captured_at.is_some() {
                return Err("fields `format` and `captured_at` are for `body` lines: a live capture's format follows from its provider, and it is captured now".into());
            }
        }
        _ => return Err("exactly one of the fields `body` and `prompt` is needed".into()),
    }
    if let Some(f) = &l.format {
        <BodyFormat as clap::ValueEnum>::from_str(f, false)
            .map_err(|_| format!("field `format`: unknown body format `{f}`"))?;
    }
    if let Some(t) = &l.captured_at {
        crate::clock::parse_time(t).map_err(|e| format!("field `captured_at`: {e}"))?;
    }
    if let Some(v) = l.test_env.iter().find(|v| !v.contains('=')) {
        return Err(format!(
            "field `test_env`: `{v}` would pass this process's own value; a manifest sets `NAME=VALUE` only"
        ));
    }
    if l.test_cmd.is_none()
        && (l.eval_patch.is_some()
            || !l.test_ro.is_empty()
            || !l.test_env.is_empty()
            || l.log_parser.is_some())
    {
        return Err(
            "fields `eval_patch`, `test_ro`, `test_env` and `log_parser` need `test_cmd`".into(),
        );
    }
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    };
    l.body = l.body.as_deref().map(abs);
    l.prompt = l.prompt.as_deref().map(abs);
    l.repo = abs(&l.repo);
    l.config = l.config.as_deref().map(abs);
    l.junit = l.junit.as_deref().map(abs);
    // A file name, made absolute; a diff given inline holds a newline.
    l.eval_patch = l.eval_patch.map(|e| {
        if e.contains('\n') {
            e
        } else {
            abs(Path::new(&e)).to_string_lossy().into_owned()
        }
    });
    Ok(l)
}

/// A required-test id `swebench import` left out ([`ManifestLine::dropped_ids`]).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct DroppedId {
    /// The id as the dataset spells it.
    pub id: String,
    /// `FAIL_TO_PASS` or `PASS_TO_PASS`.
    pub list: String,
}
