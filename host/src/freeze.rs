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

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FreezeFile {
    pub schema: u32,
    #[serde(default, rename = "flake")]
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
        match crate::input::read_optional(path, crate::input::CONFIG_CAP)? {
            Some(bytes) => Self::parse(&bytes, path),
            None => Ok(FreezeFile {
                schema: SCHEMA,
                rows: Vec::new(),
            }),
        }
    }

    /// Replaces the file atomically (temp file, fsync, rename), so a crash
    /// leaves the old file or the new one, never half of either.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = toml::to_string_pretty(self)
            .map_err(|e| Error::Internal(format!("cannot encode the freeze file: {e}")))?;
        // The file's mode is kept.
        crate::atomic::write(
            path,
            text.as_bytes(),
            crate::atomic::Access::Keep,
            crate::atomic::Clobber::Replace,
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn row(test: &str, expires: &str) -> Row {
        Row {
            test: test.into(),
            revision: "0".repeat(40),
            reason: "races the retry timer".into(),
            expires: expires.into(),
            observed_at: "2026-09-01T00:00:00Z".into(),
            reports: vec!["a".repeat(64)],
            runs: vec![],
        }
    }

    const ROW: &str = r#"
[[flake]]
test = "tests.test_queue.TestRetry::test_retry_window"
revision = "0000000000000000000000000000000000000000"
reason = "races the retry timer"
expires = "2026-12-15T00:00:00Z"
observed_at = "2026-11-30T10:00:00Z"
reports = ["aa", "bb"]
"#;

    #[test]
    fn parse_time_bare_date_is_its_start_in_utc() {
        let t = parse_time("2026-10-02").unwrap();
        assert_eq!(t, datetime!(2026-10-02 00:00:00 UTC));
        assert_eq!(t.offset(), time::UtcOffset::UTC);
        assert_eq!(format_time(t), "2026-10-02T00:00:00Z");
    }

    #[test]
    fn parse_time_rfc3339_with_offset_is_the_same_instant() {
        let t = parse_time("2026-10-02T02:30:00+02:00").unwrap();
        assert_eq!(t, datetime!(2026-10-02 00:30:00 UTC));
        assert_eq!(format_time(t), "2026-10-02T00:30:00Z");
        assert_eq!(
            parse_time("2026-10-02T00:00:00Z").unwrap(),
            parse_time("2026-10-02").unwrap()
        );
    }

    #[test]
    fn parse_time_refuses_and_names_the_value() {
        for bad in ["next tuesday", "2026-13-01", "2026-10-02 00:00:00", ""] {
            let err = parse_time(bad).unwrap_err();
            assert!(
                err.starts_with(&format!("`{bad}` is not an RFC 3339 date")),
                "{err}"
            );
        }
    }

    #[test]
    fn row_is_expired_at_now_equal_to_expires() {
        let r = row("t::a", "2026-10-02T00:00:00Z");
        let expires = datetime!(2026-10-02 00:00:00 UTC);
        assert!(!r.active(expires), "now == expires is already expired");
        assert!(r.active(expires - time::Duration::seconds(1)));
        assert!(!r.active(expires + time::Duration::seconds(1)));
    }

    #[test]
    fn row_with_bare_date_expires_at_midnight_utc() {
        let r = row("t::a", "2026-10-02");
        assert!(r.active(datetime!(2026-10-01 23:59:59 UTC)));
        assert!(!r.active(datetime!(2026-10-02 00:00:00 UTC)));
        // 01:00 at +02:00 is 23:00 UTC the day before: still active.
        assert!(r.active(datetime!(2026-10-02 01:00:00 +02:00)));
    }

    #[test]
    fn row_with_unparseable_expiry_is_never_active() {
        assert!(!row("t::a", "soon").active(datetime!(2000-01-01 00:00:00 UTC)));
    }

    #[test]
    fn expired_row_is_not_in_active_tests() {
        let file = FreezeFile {
            schema: SCHEMA,
            rows: vec![
                row("t::b", "2026-10-03"),
                row("t::expired", "2026-10-02T00:00:00Z"),
                row("t::a", "2026-11-01"),
                row("t::b", "2026-12-01"),
            ],
        };
        let now = datetime!(2026-10-02 00:00:00 UTC);
        assert_eq!(file.active_tests(now), ["t::a", "t::b"]);
        assert!(
            file.active_tests(datetime!(2026-12-01 00:00:00 UTC))
                .is_empty()
        );
    }

    #[test]
    fn parse_reads_the_documented_format() {
        let file = FreezeFile::parse(
            format!("schema = 1\n{ROW}").as_bytes(),
            Path::new("flakes.toml"),
        )
        .unwrap();
        assert_eq!(file.rows.len(), 1);
        assert_eq!(
            file.rows[0].test,
            "tests.test_queue.TestRetry::test_retry_window"
        );
        assert!(file.rows[0].runs.is_empty());
    }

    #[test]
    fn parse_refuses_an_unknown_key_naming_the_file_and_key() {
        let text = format!("schema = 1\n{ROW}ticket = \"JIRA-1\"\n");
        let err = FreezeFile::parse(text.as_bytes(), Path::new("ci/flakes.toml")).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::Sysexit::Data);
        let msg = err.to_string();
        assert!(
            msg.starts_with("`ci/flakes.toml`: invalid freeze file"),
            "{msg}"
        );
        assert!(msg.contains("ticket"), "{msg}");
    }

    #[test]
    fn parse_refuses_an_unknown_top_level_key() {
        let err = FreezeFile::parse(b"schema = 1\nowner = \"me\"\n", Path::new("flakes.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("`flakes.toml`: invalid freeze file"),
            "{err}"
        );
        assert!(err.contains("owner"), "{err}");
    }

    #[test]
    fn parse_refuses_a_newer_schema_naming_the_file() {
        let err = FreezeFile::parse(
            format!("schema = 2\n{ROW}").as_bytes(),
            Path::new("ci/flakes.toml"),
        )
        .unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::Sysexit::Data);
        assert_eq!(
            err.to_string(),
            "`ci/flakes.toml`: field `schema` is 2; this build reads freeze schema 1"
        );
    }

    #[test]
    fn parse_refuses_a_bad_expiry_naming_the_row() {
        let text = format!("schema = 1\n{ROW}").replace("2026-12-15T00:00:00Z", "Dec 15");
        let err = FreezeFile::parse(text.as_bytes(), Path::new("flakes.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("`flakes.toml`: `flake[0].expires`: `Dec 15` is not an RFC 3339"),
            "{err}"
        );
    }

    #[test]
    fn load_of_a_missing_file_is_an_empty_freeze() {
        let dir = tempfile::tempdir().unwrap();
        let file = FreezeFile::load(&dir.path().join("flakes.toml")).unwrap();
        assert_eq!(file.schema, SCHEMA);
        assert!(file.rows.is_empty());
    }
}
