//! The self-test: a property configured with a known-bad patch runs on it
//! first, and must miss there. One that holds is `vacuous` ("a check that
//! cannot fail is not a property"); one that cannot run is an `error`.

use super::{Session, changes_of, write_file, write_modes};
use crate::config::PropertyConfig;
use crate::exit::{Error, Result};
use crate::git::{Applied, Checkout};
use crate::record::Outcome;
use crate::wasm::{Limits, Mounts, Plugin, TrialInput};
use std::path::{Path, PathBuf};

pub(super) enum SelfTest {
    Missed,
    Vacuous(String),
    Failed(String),
}

/// Where the self-test runs: the base tree it copies, the trial's mounts
/// (whose `/base` and `/inputs` it shares), a scratch directory of its own,
/// and the property's limits and seed.
pub(super) struct Scene<'a> {
    pub base_tree: &'a Checkout,
    pub mounts: &'a Mounts<'a>,
    pub scratch: &'a Path,
    /// Paths not shown to plugins (`unseen`).
    pub unseen: &'a [PathBuf],
    pub limits: &'a Limits,
    pub seed: [u8; 32],
}

impl Session<'_, '_> {
    /// The self-test's own `/inputs`: the trial's, with `patch.diff` the
    /// known-bad patch and `transcript.json` a view whose `body` names it
    /// (and whose strip level is the one the self-test applies with), so
    /// a plugin comparing its inputs with the patch it is handed cannot tell
    /// the self-test from the trial.
    fn inputs_for(&self, known_bad: &[u8], trial_inputs: &Path, dir: &Path) -> Result<PathBuf> {
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
        for entry in std::fs::read_dir(trial_inputs).map_err(|e| Error::read(trial_inputs, e))? {
            let entry = entry.map_err(|e| Error::read(trial_inputs, e))?;
            let to = dir.join(entry.file_name());
            std::fs::copy(entry.path(), &to).map_err(|e| Error::write(&to, e))?;
        }
        write_file(&dir.join("patch.diff"), known_bad)?;
        let view = super::unseen::transcript_view(&self.spec.transcript.record, Some(known_bad));
        write_file(
            &dir.join("transcript.json"),
            &crate::ledger::to_bytes(&view),
        )?;
        Ok(dir.to_path_buf())
    }

    pub(super) fn self_test(
        &self,
        plugin: &Plugin,
        p: &PropertyConfig,
        known_bad: &[u8],
        config: &[(String, String)],
        scene: &Scene<'_>,
    ) -> Result<SelfTest> {
        let spec = self.spec;
        let scratch = scene.scratch;
        let kb_path = scratch.join("known-bad.diff");
        std::fs::create_dir_all(scratch).map_err(|e| Error::write(scratch, e))?;
        write_file(&kb_path, known_bad)?;
        let kb = p.known_bad.as_deref().unwrap_or("");
        let co = scene.base_tree.link_copy(scratch)?;
        if let Applied::Refused(msg) = co.apply(&kb_path, 1)? {
            return Ok(SelfTest::Failed(format!(
                "known-bad patch `{kb}` does not apply to the base revision: {msg}"
            )));
        }
        let changes = changes_of(&co, spec.base)?;
        let inputs = self.inputs_for(known_bad, scene.mounts.inputs, &scratch.join("inputs"))?;
        write_modes(&inputs, &co, spec.base)?;
        super::unseen::hide(&co.tree, scene.unseen)?;
        let kb_mounts = Mounts {
            patched: &co.tree,
            base: scene.mounts.base,
            inputs: &inputs,
        };
        let trial = TrialInput {
            run_id: spec.run.to_string(),
            base_revision: spec.base.to_string(),
            patch: known_bad.to_vec(),
            changes,
            config: config.to_vec(),
        };
        let run = spec
            .sandbox
            .run(plugin, &trial, &kb_mounts, scene.limits, scene.seed);
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
}
