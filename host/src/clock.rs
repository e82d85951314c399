//! Time: the one "now" helper, and the RFC 3339 forms every record and flag
//! uses. Records carry whole seconds in UTC.

use crate::exit::{Error, Result};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The current instant, UTC, whole seconds.
pub fn now() -> OffsetDateTime {
    let t = OffsetDateTime::now_utc();
    t.replace_nanosecond(0).unwrap_or(t)
}

/// The current instant as trace lines record it: RFC 3339 UTC with the
/// clock's full precision, so the spans of quick tool calls stay apart.
pub fn timestamp() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// Parses an RFC 3339 date-time or a bare date (its start, UTC).
pub fn parse_time(s: &str) -> std::result::Result<OffsetDateTime, String> {
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Ok(t);
    }
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(s, &format)
        .map(|d| d.midnight().assume_utc())
        .map_err(|_| format!("`{s}` is not an RFC 3339 date or date-time (`2026-10-02` or `2026-10-02T00:00:00Z`)"))
}

/// RFC 3339 in UTC.
pub fn format_time(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// A time given on the command line as `flag` (`--now`, `--expires`): a
/// usage error naming the flag when it does not parse.
pub fn parse_flag(flag: &str, value: &str) -> Result<OffsetDateTime> {
    parse_time(value).map_err(|e| Error::Usage(format!("`{flag}`: {e}")))
}
