//! The evaluator's inputs of a trial (DESIGN section 5): a test patch
//! applied after the agent's (SWE-bench's `test_patch`) and the tests that
//! decide. They are trusted, recorded in the chain (the lock holds the test
//! patch's files as it leaves them on the base; the property record names
//! its stored bytes and the required tests) and never judged as the agent's
//! change: properties see the agent's patch only, and only the trees the
//! test command runs in get the evaluator's patch.
//!
//! In such a tree the paths the evaluator's patch touches, and every path
//! under the test globs the agent's patch changed (its test data, a
//! `conftest.py`, a test it added), are first reset to the base revision,
//! then the patch is applied strictly; the evaluator's files must be
//! exactly what the lock holds. The harness resets only the test patch's
//! files (`git checkout BASE -- FILES`); an agent that rewrote a data file
//! the evaluator's new test reads is then tested against its own data.

use crate::digest::sha256_hex;
use crate::exit::{Error, Result};
use crate::git::{Applied, Checkout};
use crate::record::{LockEntry, LockedEvaluation, RequiredTests};
use std::path::Path;

/// The evaluator's inputs, as read from flags or a manifest.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub patch: Option<TestPatch>,
    pub required: RequiredTests,
}

impl Inputs {
    pub fn is_empty(&self) -> bool {
        self.patch.is_none() && self.required.is_empty()
    }
}

/// The evaluator's test patch.
#[derive(Debug, Clone)]
pub struct TestPatch {
    pub bytes: Vec<u8>,
    /// `git apply -p` level, from the diff's own headers.
    pub strip: u32,
    pub sha256: String,
    /// Where it came from, for errors (a file, or a manifest line).
    pub source: String,
}

impl TestPatch {
    /// Reads an evaluator's patch: it must be a complete unified diff (an
    /// evaluator's input that is cut or malformed is an error, never a
    /// trial verdict).
    pub fn new(bytes: Vec<u8>, source: impl Into<String>) -> Result<TestPatch> {
        let source = source.into();
        let analysis = crate::diff::analyze(&bytes);
        if let Some(r) = analysis.reasons.first() {
            return Err(Error::data(
                Path::new(&source),
                format!(
                    "the evaluator's test patch is not a complete diff: {} ({})",
                    r.message, r.code
                ),
            ));
        }
        if analysis.summary.files == 0 {
            return Err(Error::data(
                Path::new(&source),
                "the evaluator's test patch changes no file",
            ));
        }
        Ok(TestPatch {
            sha256: sha256_hex(&bytes),
            strip: analysis.strip,
            bytes,
            source,
        })
    }

    fn apply(&self, co: &Checkout, scratch: &Path) -> Result<()> {
        let file = scratch.join("eval.patch");
        std::fs::write(&file, &self.bytes).map_err(|e| Error::write(&file, e))?;
        match co.apply(&file, self.strip)? {
            Applied::Clean => Ok(()),
            Applied::Refused(msg) => Err(Error::Refused(format!(
                "the evaluator's test patch ({}) does not apply: {msg}",
                self.source
            ))),
        }
    }
}

/// The test patch applied alone on a copy of the base tree: the exact paths
/// it touches (as git reads them) and their entries, for the lock.
pub fn lock(
    base: &Checkout,
    base_rev: &str,
    patch: &TestPatch,
    test_globs: &[String],
    scratch: &Path,
) -> Result<LockedEvaluation> {
    let copy = base.link_copy(&scratch.join("eval-base"))?;
    patch.apply(&copy, scratch)?;
    let mut paths: Vec<String> = copy
        .changes_since(base_rev)?
        .into_iter()
        .flat_map(|c| std::iter::once(c.path).chain(c.old_path))
        .collect();
    paths.sort();
    paths.dedup();
    let files = crate::lock::scan(&copy.tree, &paths)?.entries;
    Ok(LockedEvaluation {
        patch_sha256: patch.sha256.clone(),
        files,
        paths,
        test_globs: reset_globs(test_globs),
    })
}

/// Test directories at any depth, reset in every evaluation besides the
/// configuration's globs: SWE-bench repositories keep tests and their data
/// inside the package (`astropy/io/fits/tests/data/`), where the default
/// `tests/**` does not reach. Not `testing/`: `numpy/testing/` is code.
pub const TEST_DIRS: &[&str] = &["**/tests/**", "**/test/**"];

/// The globs an evaluation resets: the configuration's and [`TEST_DIRS`].
fn reset_globs(config: &[String]) -> Vec<String> {
    let mut globs = config.to_vec();
    for dir in TEST_DIRS {
        if !globs.iter().any(|g| g == dir) {
            globs.push((*dir).to_string());
        }
    }
    globs
}

/// The paths of `changed` (repository-relative) under `globs`, sorted.
pub fn under_test_globs<'a>(
    globs: &[String],
    changed: impl IntoIterator<Item = &'a String>,
) -> Result<Vec<String>> {
    let globs = globs
        .iter()
        .map(|g| crate::config::test_glob(g).map_err(Error::Usage))
        .collect::<Result<Vec<_>>>()?;
    let mut out: Vec<String> = changed
        .into_iter()
        .filter(|p| globs.iter().any(|g| g.is_match(p.as_str())))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Puts the evaluator's files into a tree the test command will run in:
/// every locked path, and every path under the locked test globs that
/// differs from the base, reset to the base revision, then the test patch
/// applied; the evaluator's files must then be exactly the locked ones.
pub fn install(
    co: &Checkout,
    base_rev: &str,
    patch: &TestPatch,
    locked: &LockedEvaluation,
    scratch: &Path,
) -> Result<()> {
    if locked.patch_sha256 != patch.sha256 {
        return Err(Error::Refused(format!(
            "the evaluator's test patch ({}) is not the one the fixture lock holds (sha256 {}): a lock is trusted only for the inputs it was taken with",
            patch.source, locked.patch_sha256
        )));
    }
    let changed: Vec<String> = co
        .changes_since(base_rev)?
        .into_iter()
        .flat_map(|c| std::iter::once(c.path).chain(c.old_path))
        .collect();
    let mut reset = under_test_globs(&locked.test_globs, &changed)?;
    reset.extend(locked.paths.iter().cloned());
    reset.sort();
    reset.dedup();
    co.reset_paths(base_rev, &reset)?;
    patch.apply(co, scratch)?;
    let now: Vec<LockEntry> = crate::lock::scan(&co.tree, &locked.paths)?.entries;
    let drift = crate::lock::compare(&locked.files, &now);
    if !drift.is_empty() {
        return Err(Error::Refused(format!(
            "the evaluator's files differ from the lock after the test patch was applied (added {:?}, removed {:?}, changed {:?})",
            drift.added, drift.removed, drift.changed
        )));
    }
    Ok(())
}
