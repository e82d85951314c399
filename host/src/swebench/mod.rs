//! SWE-bench in and out (DESIGN section 5): the dataset and predictions as
//! published turned into a batch manifest (`swebench import`), and a run
//! report in the harness's shape with our verdicts beside it (`report
//! --swebench`).
//!
//! The harness resets the evaluator's test files, applies the gold
//! `test_patch`, runs the test files it touches and reads the runner's log
//! for `FAIL_TO_PASS` and `PASS_TO_PASS`. Here the manifest line carries
//! the `test_patch` as `eval_patch`, the two lists as they are, and the
//! test command a configuration file gives per repository (and version),
//! with the test files filled in; `batch` does the rest with receipts.

use crate::exit::{Error, Result};

mod report;
pub use report::{InstanceReport, ModelReport, RunReport, run_report};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One instance of the dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub instance_id: String,
    /// `owner/name`.
    pub repo: String,
    pub base_commit: String,
    pub test_patch: String,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
    pub version: Option<String>,
}

/// One prediction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    pub instance_id: String,
    pub model: String,
    pub patch: String,
}

/// Every JSON object of a file that is a JSON list, a JSON object, or
/// JSONL. `what` names the file's kind in errors.
fn objects(path: &Path, what: &str) -> Result<Vec<(String, serde_json::Value)>> {
    let bytes = crate::input::read_file(path, crate::input::OBJECT_CAP)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::data(path, format!("the {what} is not UTF-8")))?;
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(items)) => Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("item {i}"), v))
            .collect()),
        Ok(v @ serde_json::Value::Object(_)) => Ok(vec![("the object".into(), v)]),
        Ok(_) => Err(Error::data(
            path,
            format!("the {what} is not a JSON list, object or JSONL"),
        )),
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l)
                    .map(|v| (format!("line {}", i + 1), v))
                    .map_err(|e| Error::data(path, format!("line {}: not JSON: {e}", i + 1)))
            })
            .collect(),
    }
}

fn field<'a>(path: &Path, at: &str, v: &'a serde_json::Value, name: &str) -> Result<&'a str> {
    v.get(name).and_then(|f| f.as_str()).ok_or_else(|| {
        Error::data(
            path,
            format!("{at}: field `{name}` is missing or not a string"),
        )
    })
}

/// A list of test ids as the dataset spells it: a JSON list, or a string
/// holding one.
fn id_list(path: &Path, at: &str, v: &serde_json::Value, name: &str) -> Result<Vec<String>> {
    let bad = |e: String| Error::data(path, format!("{at}: field `{name}`: {e}"));
    match v.get(name) {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::String(s)) => serde_json::from_str(s)
            .map_err(|e| bad(format!("a string must hold a JSON list of ids: {e}"))),
        Some(other) => serde_json::from_value(other.clone()).map_err(|e| bad(e.to_string())),
    }
}

/// Reads the dataset (JSON list or JSONL), instances by id.
pub fn read_dataset(path: &Path) -> Result<BTreeMap<String, Instance>> {
    let mut out = BTreeMap::new();
    for (at, v) in objects(path, "dataset")? {
        let version = match v.get("version") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let i = Instance {
            instance_id: field(path, &at, &v, "instance_id")?.to_string(),
            repo: field(path, &at, &v, "repo")?.to_string(),
            base_commit: field(path, &at, &v, "base_commit")?.to_string(),
            test_patch: field(path, &at, &v, "test_patch")?.to_string(),
            fail_to_pass: id_list(path, &at, &v, "FAIL_TO_PASS")?,
            pass_to_pass: id_list(path, &at, &v, "PASS_TO_PASS")?,
            version,
        };
        if let Some(old) = out.insert(i.instance_id.clone(), i) {
            return Err(Error::data(
                path,
                format!(
                    "{at}: instance `{}` is in the dataset twice",
                    old.instance_id
                ),
            ));
        }
    }
    Ok(out)
}

/// The ids of a required-test list that a runner can report, and the ones
/// no runner ever does: fragments of the harness's log its parser took for
/// test names (SWE-bench Lite's pytest-dev__pytest-5227 lists `[100%]`,
/// `[` and `[100%]-----`). A pytest node id, a unittest or Django
/// `name (module.Class)` and a bare function name never start with `[`.
/// Required, such an id could never be found in a report, and a resolving
/// patch would be rejected for it; the harness counts it as passing only
/// because its own parser wrote it.
pub fn without_log_fragments(ids: &[String]) -> (Vec<String>, Vec<String>) {
    ids.iter().cloned().partition(|id| !id.starts_with('['))
}

/// Reads predictions: a JSON list, a JSON object keyed by instance id, or
/// JSONL, each with `instance_id` (or the key), `model_name_or_path` and
/// `model_patch` (null or absent: an empty patch).
pub fn read_predictions(path: &Path) -> Result<Vec<Prediction>> {
    let mut items = objects(path, "predictions file")?;
    // One object that is not itself a prediction is a dict by instance id.
    if let [(_, serde_json::Value::Object(map))] = items.as_slice()
        && !map.contains_key("instance_id")
    {
        items = map
            .iter()
            .map(|(k, v)| {
                let mut v = v.clone();
                if let serde_json::Value::Object(m) = &mut v {
                    m.entry("instance_id")
                        .or_insert_with(|| serde_json::Value::String(k.clone()));
                }
                (format!("key `{k}`"), v)
            })
            .collect();
    }
    items
        .iter()
        .map(|(at, v)| {
            Ok(Prediction {
                instance_id: field(path, at, v, "instance_id")?.to_string(),
                model: field(path, at, v, "model_name_or_path")?.to_string(),
                patch: match v.get("model_patch") {
                    None | Some(serde_json::Value::Null) => String::new(),
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(_) => {
                        return Err(Error::data(
                            path,
                            format!("{at}: field `model_patch` is not a string"),
                        ));
                    }
                },
            })
        })
        .collect()
}

/// The import configuration (`--config FILE`, TOML).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportConfig {
    /// Always 1.
    pub schema: u32,
    /// Where each repository's clone is: `{owner}`, `{name}` and `{repo}`
    /// (`owner/name`) are filled in; relative to the configuration file.
    pub checkout: String,
    /// How each repository's tests run; the first whose `repo` (and, when
    /// given, `versions`) matches the instance is used.
    #[serde(rename = "spec")]
    pub specs: Vec<Spec>,
}

/// How one repository's tests run.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// `owner/name`.
    pub repo: String,
    /// The dataset versions this applies to [default: all].
    #[serde(default)]
    pub versions: Vec<String>,
    /// The test command: `{test_files}` (the files the `test_patch`
    /// touches, data files left out, shell-quoted), `{test_modules}` (the
    /// same as dotted modules, `test_root` stripped), `{test_ids}` (the
    /// `FAIL_TO_PASS` and `PASS_TO_PASS` ids, shell-quoted), `{version}`
    /// and `{instance_id}` (shell-quoted too) are filled in; `{{` and `}}`
    /// are braces.
    pub test_cmd: String,
    /// The log parser for a runner that writes no JUnit.
    #[serde(default)]
    pub log_parser: Option<crate::logparse::LogParser>,
    /// Host paths shown read-only to the test command (`--test-ro`).
    #[serde(default)]
    pub test_ro: Vec<PathBuf>,
    /// Variables passed to it (`--test-env`).
    #[serde(default)]
    pub test_env: Vec<String>,
    /// Stripped from test files to make `{test_modules}` (Django: `tests/`).
    #[serde(default)]
    pub test_root: String,
}

impl ImportConfig {
    pub fn load(path: &Path) -> Result<ImportConfig> {
        let bytes = crate::input::read_file(path, crate::input::CONFIG_CAP)?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| Error::data(path, "the configuration is not UTF-8"))?;
        let c: ImportConfig = toml::from_str(text).map_err(|e| Error::data(path, e.to_string()))?;
        if c.schema != 1 {
            return Err(Error::data(
                path,
                format!("field `schema` is {}; this build reads 1", c.schema),
            ));
        }
        for (i, s) in c.specs.iter().enumerate() {
            fill(&s.test_cmd, &BTreeMap::new(), true).map_err(|e| {
                Error::data(
                    path,
                    format!("spec {} (`{}`): `test_cmd`: {e}", i + 1, s.repo),
                )
            })?;
        }
        Ok(c)
    }

    fn spec(&self, i: &Instance) -> Option<&Spec> {
        self.specs.iter().find(|s| {
            s.repo == i.repo
                && (s.versions.is_empty()
                    || i.version.as_ref().is_some_and(|v| s.versions.contains(v)))
        })
    }
}

/// The variables a test command template may use.
const VARIABLES: &[&str] = &[
    "test_files",
    "test_modules",
    "test_ids",
    "version",
    "instance_id",
];

/// Fills `{name}` in `template`; `check` only checks the names.
fn fill(
    template: &str,
    values: &BTreeMap<&str, String>,
    check: bool,
) -> std::result::Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(body) = tail.strip_prefix('{') {
            let end = body.find('}').ok_or("a `{` is not closed")?;
            let name = &body[..end];
            if !VARIABLES.contains(&name) {
                return Err(format!(
                    "unknown variable `{{{name}}}` (known: {})",
                    VARIABLES.join(", ")
                ));
            }
            if !check {
                out.push_str(values.get(name).map(String::as_str).unwrap_or(""));
            }
            rest = &body[end + 1..];
        } else {
            return Err("a lone `}`: write `}}`".into());
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A word for `sh`, in single quotes.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Files SWE-bench does not pass to the runner.
const NON_TEST_EXTS: &[&str] = &[
    ".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// The files a `test_patch` touches (the `b/` side of its `diff --git`
/// lines), data files left out, as the harness passes them to the runner.
pub fn test_files(test_patch: &str) -> Vec<String> {
    let mut files = BTreeSet::new();
    for line in test_patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/")
            && let Some((_, b)) = rest.split_once(" b/")
            && !NON_TEST_EXTS.iter().any(|e| b.ends_with(e))
        {
            files.insert(b.to_string());
        }
    }
    files.into_iter().collect()
}

/// A run id for a model's prediction of an instance.
/// A model's name without its organisation (`org/name` is `name`).
fn short_model(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

fn run_id(model: &str, instance: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    let model = clean(short_model(model));
    let mut id = format!(
        "{}__{}",
        model.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()),
        clean(instance)
    );
    if id.len() > 128 || !id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        let digest = crate::digest::sha256_hex(format!("{model}\0{instance}").as_bytes());
        id = format!("r{}__{}", &digest[..12], clean(instance));
        id.truncate(128);
    }
    id
}

/// What `import` wrote.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Imported {
    pub manifest: String,
    /// Trials written (one per prediction).
    pub trials: usize,
    /// Predictions with an empty patch (`incomplete`, never resolved).
    pub empty_patches: usize,
    /// Predictions skipped: their instance is not in the dataset
    /// (`--skip-unknown`).
    pub skipped: Vec<String>,
    /// Models, sorted.
    pub models: Vec<String>,
    /// The `test_ro` paths the trials show, sorted: `batch` reads them only
    /// under a `--manifest-root`, so each is one.
    pub manifest_roots: Vec<String>,
}

/// Writes `out/manifest.jsonl`, `out/bodies/RUN.diff` and
/// `out/eval/INSTANCE.patch`; refuses an `out` that already holds a
/// manifest (nothing the user had is overwritten).
pub fn import(
    dataset: &Path,
    predictions: &Path,
    config_path: &Path,
    out: &Path,
    skip_unknown: bool,
    captured_at: &str,
) -> Result<Imported> {
    let instances = read_dataset(dataset)?;
    let preds = read_predictions(predictions)?;
    let config = ImportConfig::load(config_path)?;
    // Paths in the configuration are relative to it, wherever the command
    // runs; the manifest holds them absolute (its own relative paths are
    // relative to the manifest, elsewhere).
    let absolute = std::path::absolute(config_path).map_err(|e| Error::read(config_path, e))?;
    let config_dir = absolute.parent().unwrap_or(Path::new("/"));
    let manifest = out.join("manifest.jsonl");
    if manifest.symlink_metadata().is_ok() {
        return Err(Error::Exists {
            path: manifest,
            hint: "import into a new directory".into(),
        });
    }
    let mut lines = Vec::new();
    let mut runs = BTreeMap::new();
    let mut skipped = Vec::new();
    let mut empty = 0;
    let mut models = BTreeSet::new();
    let mut roots = BTreeSet::new();
    let mut bodies: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut evals: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for p in &preds {
        let Some(i) = instances.get(&p.instance_id) else {
            if skip_unknown {
                skipped.push(p.instance_id.clone());
                continue;
            }
            return Err(Error::data(
                predictions,
                format!(
                    "instance `{}` is not in the dataset `{}` (pass --skip-unknown to leave it out)",
                    p.instance_id,
                    dataset.display()
                ),
            ));
        };
        let spec = config.spec(i).ok_or_else(|| {
            Error::data(
                config_path,
                format!(
                    "no `[[spec]]` for repository `{}` version {} (instance `{}`)",
                    i.repo,
                    i.version.as_deref().unwrap_or("(none)"),
                    i.instance_id
                ),
            )
        })?;
        let mut run = run_id(&p.model, &p.instance_id);
        if let Some((model, _)) = runs.get(&run) {
            if *model == p.model {
                return Err(Error::data(
                    predictions,
                    format!(
                        "model `{}` predicts instance `{}` twice (run id `{run}`)",
                        p.model, p.instance_id
                    ),
                ));
            }
            // Two models whose names end alike (`org-a/m`, `org-b/m`): the
            // later one's id names its whole name by digest.
            let digest = crate::digest::sha256_hex(p.model.as_bytes());
            run = run_id(
                &format!("{}-{}", short_model(&p.model), &digest[..8]),
                &p.instance_id,
            );
            if runs.contains_key(&run) {
                return Err(Error::data(
                    predictions,
                    format!("run id `{run}` of model `{}` is taken", p.model),
                ));
            }
        }
        runs.insert(run.clone(), (p.model.clone(), p.instance_id.clone()));
        let files = test_files(&i.test_patch);
        let modules: Vec<String> = files
            .iter()
            .map(|f| {
                let f = f.strip_prefix(spec.test_root.as_str()).unwrap_or(f);
                f.strip_suffix(".py").unwrap_or(f).replace('/', ".")
            })
            .collect();
        let (fail_to_pass, dropped_f2p) = without_log_fragments(&i.fail_to_pass);
        let (pass_to_pass, dropped_p2p) = without_log_fragments(&i.pass_to_pass);
        let dropped: Vec<serde_json::Value> = dropped_f2p
            .iter()
            .map(|id| serde_json::json!({"id": id, "list": "FAIL_TO_PASS"}))
            .chain(
                dropped_p2p
                    .iter()
                    .map(|id| serde_json::json!({"id": id, "list": "PASS_TO_PASS"})),
            )
            .collect();
        let ids: Vec<String> = fail_to_pass
            .iter()
            .chain(&pass_to_pass)
            .map(|s| quote(s))
            .collect();
        let values = BTreeMap::from([
            (
                "test_files",
                files.iter().map(|f| quote(f)).collect::<Vec<_>>().join(" "),
            ),
            (
                "test_modules",
                modules
                    .iter()
                    .map(|m| quote(m))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            ("test_ids", ids.join(" ")),
            ("version", quote(i.version.as_deref().unwrap_or_default())),
            ("instance_id", quote(&i.instance_id)),
        ]);
        let test_cmd =
            fill(&spec.test_cmd, &values, false).map_err(|e| Error::data(config_path, e))?;
        let (owner, name) = i.repo.split_once('/').unwrap_or(("", &i.repo));
        let checkout = config
            .checkout
            .replace("{owner}", owner)
            .replace("{name}", name)
            .replace("{repo}", &i.repo);
        let checkout = config_dir.join(checkout);
        if p.patch.trim().is_empty() {
            empty += 1;
        }
        models.insert(p.model.clone());
        let body = format!("bodies/{run}.diff");
        bodies.push((out.join(&body), p.patch.clone().into_bytes()));
        // Named by the id's digest too: two ids that clean to one name
        // (`x/1`, `x-1`) never share a file.
        let eval = format!(
            "eval/{}-{}.patch",
            run_id("eval", &i.instance_id),
            &crate::digest::sha256_hex(i.instance_id.as_bytes())[..12]
        );
        evals.insert(eval.clone(), i.test_patch.clone().into_bytes());
        let mut line = serde_json::json!({
            "schema": 1,
            "run": run,
            "body": body,
            "repo": checkout,
            "base": i.base_commit,
            "test_cmd": test_cmd,
            "eval_patch": eval,
            "fail_to_pass": fail_to_pass,
            "pass_to_pass": pass_to_pass,
            "captured_at": captured_at,
            "instance_id": i.instance_id,
            "model": p.model,
        });
        if !dropped.is_empty() {
            line["dropped_ids"] = dropped.into();
        }
        if let Some(parser) = &spec.log_parser {
            line["log_parser"] = parser.as_str().into();
        }
        if !spec.test_ro.is_empty() {
            line["test_ro"] = serde_json::json!(spec.test_ro);
            roots.extend(spec.test_ro.iter().map(|r| r.display().to_string()));
        }
        if !spec.test_env.is_empty() {
            line["test_env"] = serde_json::json!(spec.test_env);
        }
        lines.push(line.to_string());
    }
    for dir in [out.join("bodies"), out.join("eval")] {
        std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, e))?;
    }
    for (path, bytes) in bodies {
        crate::ledger::write_new(&path, &bytes)?;
    }
    for (rel, bytes) in evals {
        crate::ledger::write_new(&out.join(rel), &bytes)?;
    }
    let mut text = lines.join("\n");
    text.push('\n');
    crate::ledger::write_new(&manifest, text.as_bytes())?;
    Ok(Imported {
        manifest: manifest.display().to_string(),
        trials: lines.len(),
        empty_patches: empty,
        skipped,
        models: models.into_iter().collect(),
        manifest_roots: roots.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests;
