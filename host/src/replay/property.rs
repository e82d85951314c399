//! One property on the trial: its configuration and limits, its inputs'
//! digests, its self-test first (when it has a known-bad patch), then the
//! run in the sandbox.

use super::Session;
use super::artifacts::Artifact;
use super::self_test::SelfTest;
use crate::config::PropertyConfig;
use crate::digest::sha256_hex;
use crate::exit::Result;
use crate::git::Checkout;
use crate::ledger::{Fetched, RunId};
use crate::record::{Outcome, PropertyResult};
use crate::wasm::{Limits, Mounts, Plugin, TrialInput};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What every property of a trial runs on: the base checkout (self-tests
/// copy it), the trees and inputs plugins see, and what they are not shown.
pub(super) struct Stage<'a> {
    pub base_tree: &'a Checkout,
    pub mounts: &'a Mounts<'a>,
    pub unseen: &'a [std::path::PathBuf],
    /// The test globs, one per line (`runners::effective_globs`).
    pub test_globs: &'a str,
}

impl Session<'_, '_> {
    pub(super) fn run_property(
        &self,
        p: &PropertyConfig,
        trial: &TrialInput,
        frozen: &[String],
        stage: &Stage<'_>,
        scratch: &Path,
    ) -> Result<PropertyResult> {
        let Stage {
            base_tree,
            mounts,
            unseen,
            test_globs,
        } = *stage;
        let spec = self.spec;
        let mut result = host_result(&p.name);
        result.plugin = p.plugin.clone();
        let mut config: BTreeMap<String, String> = p.config.clone();
        config
            .entry("test_globs".into())
            .or_insert_with(|| test_globs.to_string());
        config
            .entry("frozen".into())
            .or_insert_with(|| frozen.join("\n"));
        if let Some(e) = spec.evaluation {
            for (key, ids) in [
                ("fail_to_pass", &e.required.fail_to_pass),
                ("pass_to_pass", &e.required.pass_to_pass),
                ("require_pass", &e.required.require_pass),
            ] {
                if !ids.is_empty() {
                    config.entry(key.into()).or_insert_with(|| ids.join("\n"));
                }
            }
        }
        let config: Vec<(String, String)> = config.into_iter().collect();
        if let Some((stored, _)) = &spec.junit {
            result.inputs.insert("junit".into(), stored.sha256.clone());
        }
        result
            .inputs
            .insert("base_revision".into(), spec.base.to_string());
        result
            .inputs
            .insert("patch".into(), sha256_hex(&trial.patch));
        result
            .inputs
            .insert("transcript".into(), spec.transcript.sha256.clone());
        result
            .inputs
            .insert("lock".into(), spec.lock.sha256.clone());
        result.inputs.insert(
            "config".into(),
            sha256_hex(&serde_json::to_vec(&config).unwrap_or_default()),
        );
        let limits = self.limits(p);

        let bytes = match self.artifact(&p.name, &p.plugin, Artifact::Plugin)? {
            Fetched::Found(b) => b,
            Fetched::Unavailable(msg) => return Ok(errored(result, msg)),
        };
        result.plugin_sha256 = sha256_hex(&bytes);
        let plugin: Arc<Plugin> = match spec.sandbox.load_with(&bytes, &limits) {
            Ok(pl) => pl,
            Err(refusal) => return Ok(errored(result, format!("plugin refused: {}", refusal.0))),
        };
        result.stubbed_imports = plugin.stubbed.clone();
        let trial_seed = seed(spec.run, &p.name, &trial.patch);

        if let Some(kb) = &p.known_bad {
            let kb_bytes = match self.artifact(&p.name, kb, Artifact::KnownBad)? {
                Fetched::Found(b) => b,
                Fetched::Unavailable(msg) => {
                    return Ok(errored(result, format!("known-bad patch: {msg}")));
                }
            };
            result
                .inputs
                .insert("known_bad".into(), sha256_hex(&kb_bytes));
            // Its randomness follows the patch it is shown, as the trial's
            // does: a plugin that knows how seeds are made must not be able
            // to tell the two runs apart by them.
            let scene = super::self_test::Scene {
                base_tree,
                mounts,
                scratch,
                unseen,
                limits: &limits,
                seed: seed(spec.run, &p.name, &kb_bytes),
            };
            match self.self_test(&plugin, p, &kb_bytes, &config, &scene)? {
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
            run_id: trial.run_id.clone(),
            base_revision: trial.base_revision.clone(),
            patch: trial.patch.clone(),
            changes: trial.changes.clone(),
            config,
        };
        let run = spec
            .sandbox
            .run(&plugin, &trial, mounts, &limits, trial_seed);
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(p.name.clone(), run.details.clone());
        result.outcome = run.outcome;
        result.findings = run.findings;
        result.error = run.error;
        result.fuel_used = run.fuel_used;
        result.stdout = run.stdout;
        result.stderr = run.stderr;
        result.completion_ids = run.completion_ids;
        Ok(result)
    }

    /// The property's own limits, else the configuration's `[limits]`, else
    /// the sandbox defaults.
    fn limits(&self, p: &PropertyConfig) -> Limits {
        let d = Limits::default();
        let l = &self.spec.config.config.limits;
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
            ..d
        }
    }
}

/// A result that holds until something says otherwise.
pub(super) fn host_result(name: &str) -> PropertyResult {
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
        completion_ids: Vec::new(),
        stubbed_imports: Vec::new(),
    }
}

fn errored(mut r: PropertyResult, msg: String) -> PropertyResult {
    r.outcome = Outcome::Error;
    r.error = Some(msg);
    r
}

/// The property's randomness: a function of the run, the property and the
/// patch, so a replay sees the same bytes.
fn seed(run: &RunId, name: &str, patch: &[u8]) -> [u8; 32] {
    let text = format!("{run}\0{name}\0{}", sha256_hex(patch));
    let digest = sha256_hex(text.as_bytes());
    let mut seed = [0u8; 32];
    hex::decode_to_slice(&digest, &mut seed).expect("sha256 hex is 32 bytes");
    seed
}
