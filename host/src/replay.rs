//! Replay: apply the frozen patch to the base revision in a temporary tree,
//! keep it in bounds, compare the fixture lock, run every property in the
//! sandbox, and produce the property record.
//!
//! The user's checkout never sees the trial: trees live in a temp dir (removed
//! on drop, also on error) with their own git index and object directory.
//! Configuration and plugins come from the base revision (or from explicit
//! files outside the tree), never from the patched tree.

use crate::capture::check_receipt;
use crate::config::{self, Config, PropertyConfig};
use crate::digest::sha256_hex;
use crate::exit::{Error, Result};
use crate::git::{Checkout, Repo};
use crate::ledger::{self, Ledger, Loaded, RunId};
use crate::lock::{self, check_consistent};
use crate::record::{
    Drift, Finding, FixtureLock, Outcome, PropertyRecord, PropertyResult, SCHEMA, TranscriptReceipt,
};
use crate::sandbox::{Change, ChangeKind, Limits, Mounts, Plugin, Sandbox, TrialInput};
use globset::{GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The name of the host-side property that makes the tree.
pub const PATCH_APPLIES: &str = "patch_applies";

/// Where the configuration comes from.
pub fn load_config(repo: &Repo, base: &str, file: Option<&Path>) -> Result<config::Loaded> {
    match file {
        Some(path) => {
            let canonical = path.canonicalize().map_err(|e| Error::read(path, e))?;
            let root = repo
                .root
                .canonicalize()
                .map_err(|e| Error::read(&repo.root, e))?;
            if canonical.starts_with(&root) {
                return Err(Error::Usage(format!(
                    "`--config {}` is inside the repository; the patched tree must not supply its own configuration: name a file outside it, or let agent-ledger read `{}` from the base revision",
                    path.display(),
                    config::FILE_NAME
                )));
            }
            let bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
            Ok(config::Loaded {
                config: Config::parse(&bytes, path)?,
                sha256: sha256_hex(&bytes),
                bytes,
                source: path.display().to_string(),
            })
        }
        None => {
            let source = format!("{} at {base}", config::FILE_NAME);
            match repo.read_at(base, config::FILE_NAME)? {
                Some(bytes) => Ok(config::Loaded {
                    config: Config::parse(&bytes, Path::new(&source))?,
                    sha256: sha256_hex(&bytes),
                    bytes,
                    source,
                }),
                None => Ok(config::Loaded {
                    config: Config::absent(),
                    sha256: sha256_hex(b""),
                    bytes: Vec::new(),
                    source: format!("no {source}"),
                }),
            }
        }
    }
}

/// Which optional inputs a trial has.
#[derive(Debug, Clone, Copy, Default)]
pub struct Present {
    pub trace: bool,
    pub junit: bool,
}

/// The properties that run: the configured ones, or the built-ins
/// (`span_bijection` only when the trial has a trace, `tests_pass` only when
/// it has a test report).
pub fn properties(config: &Config, present: Present) -> Vec<PropertyConfig> {
    if !config.properties.is_empty() {
        return config.properties.clone();
    }
    crate::plugins::BUILTINS
        .iter()
        .filter(|b| {
            b.needs.iter().all(|need| match need {
                crate::plugins::Need::Trace => present.trace,
                crate::plugins::Need::Junit => present.junit,
            })
        })
        .map(|b| PropertyConfig {
            name: b.name.to_string(),
            plugin: format!("builtin:{}", b.name),
            known_bad: None,
            config: BTreeMap::new(),
            fuel: None,
            memory_mb: None,
            timeout_ms: None,
        })
        .collect()
}

/// Everything one replay needs.
/// Where plugins and known-bad patches come from.
pub enum Source<'a> {
    /// As configured: built in, the base revision, or an absolute path.
    Live,
    /// From a ledger's content-addressed objects, by the digests a stored
    /// property record names (re-running an archived replay).
    Archive {
        objects: &'a Path,
        record: &'a PropertyRecord,
    },
}

pub struct Trial<'a> {
    pub source: Source<'a>,
    /// Every plugin and known-bad patch the replay read, by sha256: the
    /// caller archives them in the ledger.
    pub used: std::sync::Mutex<BTreeMap<String, Vec<u8>>>,
    pub run: &'a RunId,
    pub repo: &'a Repo,
    /// Full object id of the base revision.
    pub base: &'a str,
    pub config: &'a config::Loaded,
    /// The ledger directory, relative to the repository when inside it.
    pub ledger_rel: Option<String>,
    pub transcript: &'a Loaded<TranscriptReceipt>,
    pub lock: &'a Loaded<FixtureLock>,
    pub sandbox: &'a Sandbox,
    /// The instant flake-freeze expiry is judged against.
    pub now: time::OffsetDateTime,
    /// The test report, when the trial has one, and how it was produced.
    pub junit: Option<(crate::record::StoredFile, Vec<u8>)>,
    pub test_run: Option<crate::record::TestRun>,
}

/// Reads and checks the transcript; `Ok(None)` when there is none.
pub fn read_transcript(
    ledger: &Ledger,
    run: &RunId,
) -> Result<Option<(Loaded<TranscriptReceipt>, Vec<u8>)>> {
    let Some(t) = ledger::read_optional::<TranscriptReceipt>(&ledger.transcript(run))? else {
        return Ok(None);
    };
    ledger::check_run(&t, run)?;
    let patch = check_receipt(&t.path, &t.record)?;
    Ok(Some((t, patch)))
}

/// Reads and checks the lock against the transcript it names.
pub fn read_lock(
    ledger: &Ledger,
    run: &RunId,
    transcript: &Loaded<TranscriptReceipt>,
) -> Result<Option<Loaded<FixtureLock>>> {
    let Some(l) = ledger::read_optional::<FixtureLock>(&ledger.lock(run))? else {
        return Ok(None);
    };
    ledger::check_run(&l, run)?;
    check_consistent(&l.record, &l.path)?;
    ledger::check_link(
        &l.path,
        "transcript_sha256",
        &l.record.transcript_sha256,
        &transcript.sha256,
        &transcript.path,
    )?;
    Ok(Some(l))
}

/// Locks the fixture roots from the base tree. `Ok(Err(empty_roots))` when
/// a root holds no files (no lock is written).
pub fn lock_from_base(
    ledger: &Ledger,
    run: &RunId,
    trees: &TrialTrees,
    base: &str,
    config: &Config,
    transcript: &Loaded<TranscriptReceipt>,
) -> Result<std::result::Result<Loaded<FixtureLock>, Vec<String>>> {
    let roots = config
        .fixtures
        .roots
        .iter()
        .map(|r| lock::normalize_root(r))
        .collect::<Result<Vec<_>>>()?;
    if roots.is_empty() {
        return Ok(Err(Vec::new()));
    }
    let scanned = lock::scan(&trees.base.tree, &roots)?;
    if !scanned.empty_roots.is_empty() {
        return Ok(Err(scanned.empty_roots));
    }
    let record = FixtureLock {
        schema: SCHEMA,
        record: "fixture_lock".into(),
        run_id: run.to_string(),
        transcript_sha256: transcript.sha256.clone(),
        base_revision: Some(base.to_string()),
        roots,
        count: scanned.entries.len() as u64,
        dir_hash: lock::dir_hash(&scanned.entries),
        files: scanned.entries,
    };
    let path = ledger.lock(run);
    let sha256 = ledger::write_record(&path, &record)?;
    Ok(Ok(Loaded {
        record,
        sha256,
        path,
    }))
}

/// The trial's temporary directory and the base revision checked out in
/// it, shared by the lock (taken from the base tree) and the replay. The
/// directory is removed when this is dropped, also on error.
pub struct TrialTrees {
    pub tmp: tempfile::TempDir,
    pub base: Checkout,
}

impl TrialTrees {
    pub fn new(repo: &Repo, base: &str) -> Result<TrialTrees> {
        let tmp = tempdir()?;
        let base = repo.checkout(base, &tmp.path().join("base"))?;
        Ok(TrialTrees { tmp, base })
    }
}

fn tempdir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("agent-ledger-trial-")
        .tempdir()
        .map_err(|e| Error::write(&std::env::temp_dir(), e))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::write(path, e))
}

fn glob_set(patterns: &[String], what: &str) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim_end_matches('/');
        let glob = |s: &str| {
            globset::GlobBuilder::new(s)
                .literal_separator(true)
                .build()
                .map_err(|e| Error::Usage(format!("invalid {what} pattern `{s}`: {e}")))
        };
        b.add(glob(p)?);
        // A plain directory name protects everything under it.
        b.add(glob(&format!("{p}/**"))?);
    }
    b.build()
        .map_err(|e| Error::Usage(format!("invalid {what} patterns: {e}")))
}

impl Trial<'_> {
    /// Paths no patch may touch: the configuration, the flake-freeze file,
    /// the ledger, plugins and known-bad patches, and `[protect].paths`.
    fn protected(&self) -> Result<GlobSet> {
        let c = &self.config.config;
        let mut patterns = vec![
            config::FILE_NAME.to_string(),
            c.flakes.file.clone(),
            c.ledger.clone(),
        ];
        patterns.extend(c.protect.paths.iter().cloned());
        patterns.extend(self.ledger_rel.iter().cloned());
        for p in &c.properties {
            if !p.plugin.starts_with("builtin:") && !Path::new(&p.plugin).is_absolute() {
                patterns.push(p.plugin.clone());
            }
            patterns.extend(
                p.known_bad
                    .iter()
                    .filter(|k| !Path::new(k).is_absolute())
                    .cloned(),
            );
        }
        glob_set(&patterns, "protected path")
    }

    /// Runs the replay and returns the property record (not yet written).
    pub fn replay(&self, patch: &[u8], trees: &TrialTrees) -> Result<PropertyRecord> {
        let tmp = &trees.tmp;
        let base_tree = &trees.base;
        let inputs = tmp.path().join("inputs");
        std::fs::create_dir_all(&inputs).map_err(|e| Error::write(&inputs, e))?;
        let patch_file = inputs.join("patch.diff");
        write_file(&patch_file, patch)?;
        write_file(
            &inputs.join("transcript.json"),
            &read_bytes(&self.transcript.path)?,
        )?;
        write_file(&inputs.join("lock.json"), &read_bytes(&self.lock.path)?)?;
        let mut present = Present::default();
        if let Some(trace) = &self.transcript.record.trace {
            write_file(
                &inputs.join("trace.jsonl"),
                &crate::capture::read_stored(&self.transcript.path, trace)?,
            )?;
            present.trace = true;
        }
        if let Some((_, bytes)) = &self.junit {
            write_file(&inputs.join("junit.xml"), bytes)?;
            present.junit = true;
        }
        let frozen = self.frozen_tests(&inputs)?;

        let mut record = PropertyRecord {
            schema: SCHEMA,
            record: "properties".into(),
            run_id: self.run.to_string(),
            transcript_sha256: self.transcript.sha256.clone(),
            lock_sha256: self.lock.sha256.clone(),
            base_revision: self.base.to_string(),
            config_sha256: self.config.sha256.clone(),
            now: crate::freeze::format_time(self.now),
            junit: self.junit.as_ref().map(|(stored, _)| stored.clone()),
            test_run: self.test_run.clone(),
            fixtures: Drift::default(),
            properties: Vec::new(),
        };
        let mut applies = host_result(PATCH_APPLIES);
        applies.inputs = BTreeMap::from([
            ("base_revision".into(), self.base.to_string()),
            ("patch".into(), sha256_hex(patch)),
        ]);

        let protected = self.protected()?;
        let mut findings = self.bounds(patch, &protected);
        let patched = base_tree.link_copy(&tmp.path().join("patched"))?;
        let mut changes = Vec::new();
        if findings.is_empty() {
            match patched.apply(&patch_file)? {
                Ok(()) => {
                    changes = changes_of(&patched, self.base)?;
                    findings.extend(self.bounds_after(&patched, &changes, &protected));
                }
                Err(msg) => findings.push(Finding {
                    path: String::new(),
                    line: None,
                    message: format!("git apply refused the patch: {msg}"),
                    frozen: false,
                }),
            }
        }
        if !findings.is_empty() {
            applies.outcome = Outcome::Miss;
            findings.sort();
            applies.findings = findings;
            record.properties.push(applies);
            return Ok(record);
        }
        record.properties.push(applies);

        // Drift: the fixtures are compared before any property is trusted.
        let scanned = lock::scan(&patched.tree, &self.lock.record.roots)?;
        record.fixtures = lock::compare(&self.lock.record.files, &scanned.entries);
        if !record.fixtures.is_empty() {
            return Ok(record);
        }

        let mounts = Mounts {
            patched: &patched.tree,
            base: &base_tree.tree,
            inputs: &inputs,
        };
        let trial = TrialInput {
            run_id: self.run.to_string(),
            base_revision: self.base.to_string(),
            patch: patch.to_vec(),
            changes,
            config: Vec::new(),
        };
        let props = properties(&self.config.config, present);
        let results: Vec<PropertyResult> = props
            .par_iter()
            .enumerate()
            .map(|(i, p)| {
                self.run_property(
                    p,
                    &trial,
                    &frozen,
                    base_tree,
                    &mounts,
                    &tmp.path().join(format!("known-bad-{i}")),
                )
            })
            .collect::<Result<_>>()?;
        record.properties.extend(results);
        Ok(record)
    }

    /// Header paths that leave the tree or touch protected paths.
    fn bounds(&self, patch: &[u8], protected: &GlobSet) -> Vec<Finding> {
        let mut findings = Vec::new();
        for raw in crate::diff::header_paths(patch) {
            let path = String::from_utf8_lossy(&raw).into_owned();
            if escapes(&raw) {
                findings.push(finding(
                    &path,
                    "path escapes the repository (absolute, `..` or `.git`)",
                ));
            } else if protected.is_match(&path) {
                findings.push(finding(&path, "patch touches a protected path"));
            }
        }
        findings
    }

    /// After applying: protected paths as git sees them, and symlinks that
    /// point out of the tree.
    fn bounds_after(&self, co: &Checkout, changes: &[Change], protected: &GlobSet) -> Vec<Finding> {
        let mut findings = Vec::new();
        for c in changes {
            for p in std::iter::once(&c.path).chain(c.old_path.iter()) {
                if protected.is_match(p) {
                    findings.push(finding(p, "patch touches a protected path"));
                }
            }
            let on_disk = co.tree.join(&c.path);
            if let Ok(target) = std::fs::read_link(&on_disk)
                && symlink_escapes(&c.path, &target)
            {
                findings.push(finding(
                    &c.path,
                    &format!(
                        "symlink points outside the repository (`{}`)",
                        target.display()
                    ),
                ));
            }
        }
        findings.dedup();
        findings
    }

    /// The freeze file at the base revision (the patch can never carry it),
    /// copied to the inputs; returns the tests frozen at `now`.
    fn frozen_tests(&self, inputs: &Path) -> Result<Vec<String>> {
        let file = &self.config.config.flakes.file;
        let Some(bytes) = self.repo.read_at(self.base, file)? else {
            return Ok(Vec::new());
        };
        write_file(&inputs.join("flakes.toml"), &bytes)?;
        let source = format!("{file} at {}", self.base);
        Ok(crate::freeze::FreezeFile::parse(&bytes, Path::new(&source))?.active_tests(self.now))
    }

    fn run_property(
        &self,
        p: &PropertyConfig,
        trial: &TrialInput,
        frozen: &[String],
        base_tree: &Checkout,
        mounts: &Mounts<'_>,
        scratch: &Path,
    ) -> Result<PropertyResult> {
        let mut result = host_result(&p.name);
        result.plugin = p.plugin.clone();
        let mut config: BTreeMap<String, String> = p.config.clone();
        config
            .entry("test_globs".into())
            .or_insert_with(|| self.config.config.tests.globs.join("\n"));
        config
            .entry("frozen".into())
            .or_insert_with(|| frozen.join("\n"));
        let config: Vec<(String, String)> = config.into_iter().collect();
        if let Some((stored, _)) = &self.junit {
            result.inputs.insert("junit".into(), stored.sha256.clone());
        }
        result
            .inputs
            .insert("base_revision".into(), self.base.to_string());
        result
            .inputs
            .insert("patch".into(), sha256_hex(&trial.patch));
        result
            .inputs
            .insert("transcript".into(), self.transcript.sha256.clone());
        result
            .inputs
            .insert("lock".into(), self.lock.sha256.clone());
        result.inputs.insert(
            "config".into(),
            sha256_hex(&serde_json::to_vec(&config).unwrap_or_default()),
        );
        let limits = self.limits(p);

        let bytes = match self.plugin_bytes(&p.name, &p.plugin, Artifact::Plugin)? {
            Ok(b) => b,
            Err(msg) => return Ok(errored(result, msg)),
        };
        result.plugin_sha256 = sha256_hex(&bytes);
        let plugin: Arc<Plugin> = match self.sandbox.load(&bytes) {
            Ok(pl) => pl,
            Err(refusal) => return Ok(errored(result, format!("plugin refused: {}", refusal.0))),
        };
        let seed = seed(self.run, &p.name, &trial.patch);

        if let Some(kb) = &p.known_bad {
            let kb_bytes = match self.plugin_bytes(&p.name, kb, Artifact::KnownBad)? {
                Ok(b) => b,
                Err(msg) => return Ok(errored(result, format!("known-bad patch: {msg}"))),
            };
            result
                .inputs
                .insert("known_bad".into(), sha256_hex(&kb_bytes));
            match self.self_test(
                &plugin, p, &kb_bytes, &config, base_tree, mounts, scratch, &limits, seed,
            )? {
                SelfTest::Missed => {}
                SelfTest::Vacuous(msg) => {
                    result.outcome = Outcome::Vacuous;
                    result.error = Some(msg);
                    return Ok(result);
                }
                SelfTest::Failed(msg) => return Ok(errored(result, msg)),
            }
        }

        let trial = TrialInput {
            config,
            ..clone_trial(trial)
        };
        let run = self.sandbox.run(&plugin, &trial, mounts, &limits, seed);
        result.outcome = run.outcome;
        result.findings = run.findings;
        result.error = run.error;
        result.fuel_used = run.fuel_used;
        result.stdout = run.stdout;
        result.stderr = run.stderr;
        Ok(result)
    }

    #[allow(clippy::too_many_arguments)]
    fn self_test(
        &self,
        plugin: &Plugin,
        p: &PropertyConfig,
        known_bad: &[u8],
        config: &[(String, String)],
        base_tree: &Checkout,
        mounts: &Mounts<'_>,
        scratch: &Path,
        limits: &Limits,
        seed: [u8; 32],
    ) -> Result<SelfTest> {
        let kb_path = scratch.join("known-bad.diff");
        std::fs::create_dir_all(scratch).map_err(|e| Error::write(scratch, e))?;
        write_file(&kb_path, known_bad)?;
        let co = base_tree.link_copy(scratch)?;
        if let Err(msg) = co.apply(&kb_path)? {
            return Ok(SelfTest::Failed(format!(
                "known-bad patch `{}` does not apply to the base revision: {msg}",
                p.known_bad.as_deref().unwrap_or("")
            )));
        }
        let changes = changes_of(&co, self.base)?;
        let kb_mounts = Mounts {
            patched: &co.tree,
            base: mounts.base,
            inputs: mounts.inputs,
        };
        let trial = TrialInput {
            run_id: self.run.to_string(),
            base_revision: self.base.to_string(),
            patch: known_bad.to_vec(),
            changes,
            config: config.to_vec(),
        };
        let run = self.sandbox.run(plugin, &trial, &kb_mounts, limits, seed);
        let kb = p.known_bad.as_deref().unwrap_or("");
        Ok(match run.outcome {
            Outcome::Miss => SelfTest::Missed,
            Outcome::Holds => SelfTest::Vacuous(format!(
                "it holds on its known-bad patch `{kb}`: a check that cannot fail is not a property"
            )),
            _ => SelfTest::Failed(format!(
                "self-test on known-bad patch `{kb}` failed: {}",
                run.error.unwrap_or_default()
            )),
        })
    }

    fn limits(&self, p: &PropertyConfig) -> Limits {
        let d = Limits::default();
        let l = &self.config.config.limits;
        Limits {
            fuel: p.fuel.or(l.fuel).unwrap_or(d.fuel),
            memory_bytes: p
                .memory_mb
                .or(l.memory_mb)
                .map_or(d.memory_bytes, |mb| (mb as usize) << 20),
            wall: p
                .timeout_ms
                .or(l.timeout_ms)
                .map_or(d.wall, Duration::from_millis),
            output_bytes: d.output_bytes,
        }
    }

    /// A plugin or known-bad patch: built in, from the base revision, or an
    /// absolute path outside the repository. `Ok(Err(_))` is a per-property
    /// error, not a failure of the whole replay.
    fn plugin_bytes(
        &self,
        name: &str,
        spec: &str,
        what: Artifact,
    ) -> Result<std::result::Result<Vec<u8>, String>> {
        let found =
            match &self.source {
                Source::Live => self.live_bytes(spec)?,
                Source::Archive { objects, record } => {
                    let sha =
                        record.properties.iter().find(|p| p.name == name).and_then(
                            |p| match what {
                                Artifact::Plugin => {
                                    Some(p.plugin_sha256.clone()).filter(|s| !s.is_empty())
                                }
                                Artifact::KnownBad => p.inputs.get("known_bad").cloned(),
                            },
                        );
                    match sha {
                        Some(sha) => read_object(objects, &sha)?,
                        None => Err(format!(
                            "the archived record names no {} for property `{name}`",
                            what.noun()
                        )),
                    }
                }
            };
        if let Ok(bytes) = &found {
            self.used
                .lock()
                .expect("used objects")
                .insert(sha256_hex(bytes), bytes.clone());
        }
        Ok(found)
    }

    fn live_bytes(&self, spec: &str) -> Result<std::result::Result<Vec<u8>, String>> {
        if let Some(name) = spec.strip_prefix("builtin:") {
            return Ok(crate::plugins::builtin(name)
                .map(|b| b.component.to_vec())
                .ok_or_else(|| format!("no built-in property `{name}`")));
        }
        let path = Path::new(spec);
        if path.is_absolute() {
            let root = self
                .repo
                .root
                .canonicalize()
                .map_err(|e| Error::read(&self.repo.root, e))?;
            return Ok(match path.canonicalize() {
                Ok(c) if c.starts_with(&root) => Err(format!(
                    "`{spec}` is inside the repository; name it relative to the repository so it is read from the base revision"
                )),
                Ok(_) => std::fs::read(path).map_err(|e| format!("cannot read `{spec}`: {e}")),
                Err(e) => Err(format!("cannot read `{spec}`: {e}")),
            });
        }
        Ok(self
            .repo
            .read_at(self.base, spec)?
            .ok_or_else(|| format!("`{spec}` does not exist at the base revision")))
    }
}

#[derive(Clone, Copy)]
enum Artifact {
    Plugin,
    KnownBad,
}

impl Artifact {
    fn noun(self) -> &'static str {
        match self {
            Artifact::Plugin => "plugin",
            Artifact::KnownBad => "known-bad patch",
        }
    }
}

/// Reads `objects/SHA` and checks it hashes to its name.
pub fn read_object(objects: &Path, sha: &str) -> Result<std::result::Result<Vec<u8>, String>> {
    if !crate::digest::is_sha256_hex(sha) {
        return Ok(Err(format!("`{sha}` is not a sha256")));
    }
    let path = objects.join(sha);
    Ok(match std::fs::read(&path) {
        Ok(bytes) if sha256_hex(&bytes) == sha => Ok(bytes),
        Ok(bytes) => Err(format!(
            "`{}` has sha256 {}, not its name",
            path.display(),
            sha256_hex(&bytes)
        )),
        Err(e) => Err(format!("`{}` is not in the ledger: {e}", path.display())),
    })
}

enum SelfTest {
    Missed,
    Vacuous(String),
    Failed(String),
}

fn clone_trial(t: &TrialInput) -> TrialInput {
    TrialInput {
        run_id: t.run_id.clone(),
        base_revision: t.base_revision.clone(),
        patch: t.patch.clone(),
        changes: t.changes.clone(),
        config: t.config.clone(),
    }
}

fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::read(path, e))
}

fn host_result(name: &str) -> PropertyResult {
    PropertyResult {
        name: name.to_string(),
        plugin: "host".into(),
        plugin_sha256: String::new(),
        outcome: Outcome::Holds,
        findings: Vec::new(),
        error: None,
        fuel_used: 0,
        stdout: String::new(),
        stderr: String::new(),
        inputs: BTreeMap::new(),
    }
}

fn errored(mut r: PropertyResult, msg: String) -> PropertyResult {
    r.outcome = Outcome::Error;
    r.error = Some(msg);
    r
}

fn finding(path: &str, message: &str) -> Finding {
    Finding {
        path: path.to_string(),
        line: None,
        message: message.to_string(),
        frozen: false,
    }
}

fn seed(run: &RunId, name: &str, patch: &[u8]) -> [u8; 32] {
    let text = format!("{run}\0{name}\0{}", sha256_hex(patch));
    let digest = sha256_hex(text.as_bytes());
    let mut seed = [0u8; 32];
    hex::decode_to_slice(&digest, &mut seed).expect("sha256 hex is 32 bytes");
    seed
}

/// An absolute path, a `..` component, or a `.git` component.
fn escapes(path: &[u8]) -> bool {
    path.starts_with(b"/")
        || path
            .split(|&b| b == b'/')
            .any(|c| c == b".." || c.eq_ignore_ascii_case(b".git"))
}

/// Whether a symlink at repo-relative `path` with `target` resolves outside
/// the repository (judged lexically: the tree holds nothing else to follow).
fn symlink_escapes(path: &str, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    let mut depth: i64 = path.split('/').count() as i64 - 1;
    for c in target.components() {
        match c {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

fn changes_of(co: &Checkout, base: &str) -> Result<Vec<Change>> {
    Ok(co
        .changes_since(base)?
        .into_iter()
        .map(|c| Change {
            kind: match c.status {
                b'A' => ChangeKind::Added,
                b'D' => ChangeKind::Deleted,
                b'R' => ChangeKind::Renamed,
                b'C' => ChangeKind::Copied,
                b'T' => ChangeKind::TypeChanged,
                _ => ChangeKind::Modified,
            },
            path: c.path,
            old_path: c.old_path,
        })
        .collect())
}

/// Runs the project's test command in its own patched checkout, with no
/// network: in a new network namespace, or (only with `allow_network`)
/// without one when no namespace can be made. The command finds the report
/// path it must write in `AGENT_LEDGER_JUNIT`. Returns how it ran and the
/// report (None when it wrote none).
pub fn run_tests(
    repo: &Repo,
    base: &str,
    patch: &[u8],
    command: &str,
    allow_network: bool,
) -> Result<(crate::record::TestRun, Option<Vec<u8>>)> {
    let tmp = tempdir()?;
    let patch_file = tmp.path().join("patch.diff");
    write_file(&patch_file, patch)?;
    let co = repo.checkout(base, &tmp.path().join("tests"))?;
    if let Err(msg) = co.apply(&patch_file)? {
        return Err(Error::Refused(format!(
            "the patch does not apply, so the test command cannot run: {msg}"
        )));
    }
    let isolated = std::process::Command::new("unshare")
        .args(["--net", "true"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !isolated && !allow_network {
        return Err(Error::Refused(
            "no network namespace can be made here (`unshare --net`), so the test command would have network access; pass --allow-network to run it anyway".into(),
        ));
    }
    let report = tmp.path().join("junit.xml");
    let mut cmd = if isolated {
        let mut c = std::process::Command::new("unshare");
        c.args(["--net", "--", "sh", "-c", command]);
        c
    } else {
        let mut c = std::process::Command::new("sh");
        c.args(["-c", command]);
        c
    };
    let status = cmd
        .current_dir(&co.tree)
        .env("AGENT_LEDGER_JUNIT", &report)
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| Error::Internal(format!("cannot run the test command: {e}")))?;
    let junit = match std::fs::read(&report) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::read(&report, e)),
    };
    let run = crate::record::TestRun {
        command: command.to_string(),
        network: if isolated { "isolated" } else { "allowed" }.into(),
        exit_code: status.code(),
    };
    Ok((run, junit))
}

/// The ledger directory relative to the repository root, when inside it.
pub fn ledger_relative(repo: &Repo, ledger: &Path) -> Option<String> {
    let root = repo.root.canonicalize().ok()?;
    let abs = if ledger.is_absolute() {
        ledger.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(ledger)
    };
    // The ledger may not exist yet: canonicalise its nearest existing parent.
    let mut existing: PathBuf = abs.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?.to_path_buf();
    }
    let mut full = existing.canonicalize().ok()?;
    for r in rest.into_iter().rev() {
        full.push(r);
    }
    full.strip_prefix(&root)
        .ok()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_escape_is_judged_from_the_link_location() {
        assert!(symlink_escapes("a", Path::new("/etc/passwd")));
        assert!(symlink_escapes("a", Path::new("../x")));
        assert!(!symlink_escapes("d/a", Path::new("../x")));
        assert!(symlink_escapes("d/a", Path::new("../../x")));
        assert!(symlink_escapes("d/a", Path::new("x/../../../y")));
    }

    #[test]
    fn escaping_paths() {
        assert!(escapes(b"/etc/passwd"));
        assert!(escapes(b"a/../../b"));
        assert!(escapes(b".git/hooks/pre-commit"));
        assert!(escapes(b"sub/.GIT/config"));
        assert!(!escapes(b"src/..foo/x"));
    }
}
