//! Flake freezes: rows that say a test is known to be nondeterministic, made
//! only from evidence (reports of one revision in which it both passed and
//! failed), and ignored once expired.
//!
//! File format (TOML, `[flakes].file`, default `flakes.toml`):
//!
//! ```toml
//! schema = 1
//! [[flake]]
//! test = "tests.test_queue.TestRetry::test_retry_window"   # classname::name
//! revision = "<full commit id>"       # the revision the flake was observed at
//! reason = "races the retry timer"
//! expires = "2026-12-15T00:00:00Z"    # ignored from this instant on (now == expires is expired)
//! observed_at = "2026-11-30T10:00:00Z"
//! reports = ["<sha256>", "<sha256>"]  # the JUnit reports that showed the flip
//! runs = ["run-007"]                  # ledger runs those reports belong to, when known
//! ```

use crate::exit::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use time::OffsetDateTime;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreezeFile {
    pub schema: u32,
    #[serde(default, rename = "flake")]
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub test: String,
    pub revision: String,
    pub reason: String,
    pub expires: String,
    pub observed_at: String,
    pub reports: Vec<String>,
    #[serde(default)]
    pub runs: Vec<String>,
}

pub use crate::clock::{format_time, parse_time};

impl Row {
    /// Active while `now` is before the expiry; `now == expires` is expired.
    pub fn active(&self, now: OffsetDateTime) -> bool {
        parse_time(&self.expires).is_ok_and(|e| now < e)
    }
}

impl FreezeFile {
    pub fn parse(bytes: &[u8], path: &Path) -> Result<FreezeFile> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Error::data(path, "freeze file is not UTF-8"))?;
        let file: FreezeFile = toml::from_str(text).map_err(|e| {
            Error::data(
                path,
                format!("invalid freeze file: {}", e.to_string().trim()),
            )
        })?;
        if file.schema != SCHEMA {
            return Err(Error::data(
                path,
                format!(
                    "field `schema` is {}; this build reads freeze schema {SCHEMA}",
                    file.schema
                ),
            ));
        }
        for (i, row) in file.rows.iter().enumerate() {
            parse_time(&row.expires)
                .map_err(|e| Error::data(path, format!("`flake[{i}].expires`: {e}")))?;
        }
        Ok(file)
    }

    /// Reads the file; a file that does not exist is an empty freeze.
    pub fn load(path: &Path) -> Result<FreezeFile> {
        match std::fs::read(path) {
            Ok(bytes) => Self::parse(&bytes, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FreezeFile {
                schema: SCHEMA,
                rows: Vec::new(),
            }),
            Err(e) => Err(Error::read(path, e)),
        }
    }

    /// Replaces the file atomically (temp file, fsync, rename), so a crash
    /// leaves the old file or the new one, never half of either.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = toml::to_string_pretty(self)
            .map_err(|e| Error::Internal(format!("cannot encode the freeze file: {e}")))?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::write(dir, e))?;
        std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| Error::write(path, e))?;
        // Keep the file's mode: a temp file starts as 0600.
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::os::unix::fs::PermissionsExt::from_mode(0o644));
        tmp.as_file()
            .set_permissions(mode)
            .map_err(|e| Error::write(path, e))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::write(path, e))?;
        tmp.persist(path).map_err(|e| Error::write(path, e.error))?;
        Ok(())
    }

    /// Test ids with an active row at `now`.
    pub fn active_tests(&self, now: OffsetDateTime) -> Vec<String> {
        let mut ids: Vec<String> = self
            .rows
            .iter()
            .filter(|r| r.active(now))
            .map(|r| r.test.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}
