//! Bindings for the `agent-ledger:property` world and small helpers shared
//! by the built-in properties. A property crate implements [`Guest`] and
//! exports it with `agent_ledger_guest::export!(MyProperty with_types_in agent_ledger_guest);`.

wit_bindgen::generate!({
    world: "plugin",
    path: "../../wit",
    pub_export_macro: true,
});

pub use agent_ledger::property::types::{ChangeKind, ChangedPath, Finding, Info, Outcome, Trial};
pub use exports::agent_ledger::property::property::Guest;

/// Looks a key up in the trial's configuration.
pub fn config<'a>(trial: &'a Trial, key: &str) -> Option<&'a str> {
    trial
        .config
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The `test_globs` configuration: one glob per line.
pub fn test_globs(trial: &Trial) -> Vec<&str> {
    config(trial, "test_globs")
        .map(|s| s.lines().map(str::trim).filter(|l| !l.is_empty()).collect())
        .unwrap_or_default()
}

/// A finding with no line.
pub fn finding(path: &str, line: Option<u32>, message: impl Into<String>) -> Finding {
    Finding {
        path: path.to_string(),
        line,
        message: message.into(),
        frozen: false,
    }
}

/// Matches a repository-relative path against a glob: `*` and `?` stay
/// inside one path segment, `**` spans any number of segments.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').collect();
    let segs: Vec<&str> = path.split('/').collect();
    match_segments(&pat, &segs)
}

fn match_segments(pat: &[&str], segs: &[&str]) -> bool {
    match pat.split_first() {
        None => segs.is_empty(),
        Some((&"**", rest)) => (0..=segs.len()).any(|i| match_segments(rest, &segs[i..])),
        Some((p, rest)) => match segs.split_first() {
            Some((s, srest)) => {
                match_segment(p.as_bytes(), s.as_bytes()) && match_segments(rest, srest)
            }
            None => false,
        },
    }
}

fn match_segment(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| match_segment(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && match_segment(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && match_segment(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("tests/**", "tests/a/b.py"));
        assert!(glob_match("**/test_*.py", "test_x.py"));
        assert!(glob_match("**/test_*.py", "a/b/test_x.py"));
        assert!(!glob_match("**/test_*.py", "a/b/x_test.py"));
        assert!(glob_match("**/*_test.go", "pkg/a_test.go"));
        assert!(!glob_match("src/*.rs", "src/a/b.rs"));
    }
}
