//! Where a plugin's or known-bad patch's bytes come from: built in, the base
//! revision, or an absolute path outside the repository (`Source::Live`); or
//! the ledger's objects, by the digest a stored record names
//! (`Source::Archive`). Every artifact read is remembered for the archive.

use super::{Session, Source};
use crate::exit::Result;
use crate::ledger::{Fetched, read_object};
use std::path::Path;

#[derive(Clone, Copy)]
pub(super) enum Artifact {
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

impl Session<'_, '_> {
    /// The bytes of property `name`'s artifact `spec` (`Unavailable` is a
    /// per-property error, not a failure of the whole replay).
    pub(super) fn artifact(&self, name: &str, spec: &str, what: Artifact) -> Result<Fetched> {
        let found =
            match &self.spec.source {
                Source::Live => self.live(spec)?,
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
                        None => Fetched::Unavailable(format!(
                            "the archived record names no {} for property `{name}`",
                            what.noun()
                        )),
                    }
                }
            };
        if let Fetched::Found(bytes) = &found {
            self.used
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(crate::digest::sha256_hex(bytes), bytes.clone());
        }
        Ok(found)
    }

    fn live(&self, spec: &str) -> Result<Fetched> {
        if let Some(name) = spec.strip_prefix("builtin:") {
            return Ok(match crate::plugins::builtin(name) {
                Some(b) => Fetched::Found(b.component.to_vec()),
                None => Fetched::Unavailable(format!("no built-in property `{name}`")),
            });
        }
        let repo = self.spec.repo;
        let path = Path::new(spec);
        if path.is_absolute() {
            if crate::paths::is_inside(&repo.root, path) {
                return Ok(Fetched::Unavailable(format!(
                    "`{spec}` is inside the repository; name it relative to the repository so it is read from the base revision"
                )));
            }
            return Ok(
                match crate::input::read_file(path, crate::input::OBJECT_CAP) {
                    Ok(bytes) => Fetched::Found(bytes),
                    Err(e) => Fetched::Unavailable(format!("cannot read `{spec}`: {e}")),
                },
            );
        }
        Ok(match repo.read_at(self.spec.base, spec)? {
            Some(bytes) => Fetched::Found(bytes),
            None => Fetched::Unavailable(format!("`{spec}` does not exist at the base revision")),
        })
    }
}
