//! The trees a trial works on: the base revision checked out once and
//! shared ([`BaseTree`], with the base's test-command runs and `.git` pack),
//! and a trial's own scratch directory on it ([`TrialTrees`]).

use super::{pack_cache, tempdir};
use crate::exit::{Error, Result};
use crate::git::{Checkout, Repo};
use crate::record::TestRun;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The base revision checked out once, read-only from then on: the lock
/// is taken from it and every trial's patched tree is a hard-linked copy
/// of it, so trials on one base (a `batch`) can share it. Removed when the
/// last holder drops it.
pub struct BaseTree {
    _dir: crate::scratch::ScratchDir,
    pub checkout: Checkout,
    /// The test command's runs on this base, by
    /// [`TestCommand::baseline_key`]: the trials of a batch on one base
    /// run the base's suite once.
    pub baselines: Mutex<BTreeMap<String, Baseline>>,
    /// The base commit.
    pub base: String,
    /// A pack of the base commit's objects (`Checkout::pack_snapshot`),
    /// made on first use: every test tree's `.git` gets a copy.
    pack: Mutex<Option<PathBuf>>,
}

/// The test command's run on a base revision and the report it wrote.
pub type Baseline = (TestRun, Option<Vec<u8>>);

impl BaseTree {
    pub fn new(repo: &Repo, base: &str) -> Result<std::sync::Arc<BaseTree>> {
        let dir = tempdir()?;
        let checkout = repo.checkout(base, &dir.path().join("base"))?;
        Ok(std::sync::Arc::new(BaseTree {
            _dir: dir,
            checkout,
            baselines: Mutex::new(BTreeMap::new()),
            base: base.to_string(),
            pack: Mutex::new(None),
        }))
    }

    /// The directory holding the pack of the base commit's objects, made
    /// once per base tree (trials of a batch share it), or taken from
    /// `cache` (the compile cache's directory), where earlier processes
    /// keep it (`pack_cache`).
    pub fn snapshot_pack(&self, cache: Option<&Path>) -> Result<PathBuf> {
        let mut pack = self.pack.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = &*pack {
            return Ok(dir.clone());
        }
        let dir = self._dir.path().join("pack");
        std::fs::create_dir(&dir).map_err(|e| Error::write(&dir, e))?;
        if !cache.is_some_and(|c| pack_cache::load(c, &self.base, &dir)) {
            self.checkout.pack_snapshot(&self.base, &dir)?;
            if let Some(c) = cache {
                pack_cache::store(c, &self.base, &dir);
            }
        }
        *pack = Some(dir.clone());
        Ok(dir)
    }
}

/// One trial's temporary directory (its inputs, patched and self-test
/// trees) and the base tree it builds on. The directory is removed when
/// this is dropped, also on error.
pub struct TrialTrees {
    pub tmp: crate::scratch::ScratchDir,
    shared: std::sync::Arc<BaseTree>,
}

impl TrialTrees {
    /// A trial on a base of its own.
    pub fn new(repo: &Repo, base: &str) -> Result<TrialTrees> {
        TrialTrees::on(BaseTree::new(repo, base)?)
    }

    /// A trial on a base tree other trials may share.
    pub fn on(shared: std::sync::Arc<BaseTree>) -> Result<TrialTrees> {
        Ok(TrialTrees {
            tmp: tempdir()?,
            shared,
        })
    }

    /// The base revision's tree.
    pub fn base(&self) -> &Checkout {
        &self.shared.checkout
    }

    /// The base tree other trials may share.
    pub fn shared(&self) -> &BaseTree {
        &self.shared
    }
}
