//! The listing of a base commit (`git ls-tree -r` of it), kept for the next
//! `reconcile` against that commit: a commit id names its tree, so what
//! `ls-tree` printed for it once is what it prints every time. On a large
//! tree the listing costs as much as a `git status` (200,000 files: about
//! 0.1 s of `ls-tree`), and `git status` does not pay it only because it
//! trusts its own index, which the agent can write.
//!
//! The entry is `ls-tree`'s output and where each entry lies in it
//! (`Listing::encode`, so a large listing is not parsed twice; its entry
//! table is read where it lies while its tag is checked, and indexed only
//! once the tag holds), sealed
//! (`wasm::seal` under the cache key) over the commit id and the object
//! format, read only from a regular file within a bound; every offset is
//! checked to lie in the text. A forged or edited entry does not verify and
//! is listed again.

use super::StatCache;
use super::listing::{Listing, Table};
use crate::exit::{Error, Result};
use std::path::{Path, PathBuf};

const DOMAIN: &str = "agent-ledger base listing v2";
/// The largest listing kept (a tree of some ten million entries).
const CAP: u64 = 1 << 30;

fn entry(cache: &Path, id: &str) -> PathBuf {
    cache
        .join("listings")
        .join(&crate::digest::sha256_hex(id.as_bytes())[..32])
}

impl super::Repo {
    /// [`Repo::listing`](super::Repo::listing) of `commit`, from `cache`
    /// when an authentic entry is there, else listed now (and kept). Only a
    /// full commit id is looked up: a name (`HEAD`, a branch) can move.
    pub fn listing_of_commit(&self, commit: &str, cache: Option<&Path>) -> Result<Listing> {
        let sha256 = self.empty_tree == super::EMPTY_TREE_SHA256;
        let full = commit.len() == if sha256 { 64 } else { 40 }
            && commit
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let Some(cache) = cache.filter(|_| full) else {
            return self.listing(commit);
        };
        let id = format!("{commit}\0{}", if sha256 { "sha256" } else { "sha1" });
        let path = entry(cache, &id);
        if let Some(sealed) = crate::wasm::read_cache_entry(&path, CAP) {
            // The entry table is read (one linear pass) while the tag is
            // checked; the entries are indexed only once it holds.
            let (authentic, table) = rayon::join(
                || crate::wasm::sealed_body(DOMAIN, &id, &sealed),
                || Table::read(&sealed, crate::wasm::SEALED_AT),
            );
            if authentic {
                return table
                    .and_then(|t| t.index(&sealed, sha256))
                    .map(|p| p.listing(sealed))
                    .map_err(|e| {
                        Error::Internal(format!(
                            "a sealed listing did not parse (report this): {e}"
                        ))
                    });
            }
        }
        let listing = self.listing(commit)?;
        if let Some(sealed) = crate::wasm::seal(DOMAIN, &id, &listing.encode()) {
            let _ = crate::wasm::write_cache_entry(&path, &sealed);
        }
        Ok(listing)
    }

    /// [`Repo::listing_of_commit`] and, with `walked`, what the last walk
    /// of this working tree against `commit` learnt ([`StatCache`]), read
    /// side by side: on a large tree each is megabytes to read and
    /// authenticate.
    pub fn base_of(
        &self,
        commit: &str,
        cache: Option<&Path>,
        walked: bool,
    ) -> Result<(Listing, Option<StatCache>)> {
        let (listing, stat) = rayon::join(
            || self.listing_of_commit(commit, cache),
            || {
                cache
                    .filter(|_| walked)
                    .and_then(|c| StatCache::load(c, &self.root, commit))
            },
        );
        let listing = listing?;
        let stat = stat.map(|mut s| {
            s.fit(listing.len());
            s
        });
        Ok((listing, stat))
    }
}
