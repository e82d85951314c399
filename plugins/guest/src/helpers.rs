//! Helpers for agent-ledger properties: configuration, findings, test-file
//! names and globs. Shared by the built-in properties (`agent-ledger-guest`)
//! and vendored byte for byte into the projects `agent-ledger plugin new
//! --lang rust` writes, so it uses nothing but `crate::{Finding, Trial}`
//! (the bindings' types, in scope at the crate root), std and `globset`
//! (the matcher the host reads globs with, so a glob means the same in
//! both).
#![allow(dead_code)] // a property uses only some of them

use crate::{Finding, Trial};

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

/// The language of a source file, by its extension; the languages whose
/// test files the built-ins understand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Python,
    JavaScript,
    Go,
    Java,
}

impl Lang {
    pub fn of(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.').map(|(_, e)| e)?;
        Some(match ext {
            "rs" => Lang::Rust,
            "py" => Lang::Python,
            "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => Lang::JavaScript,
            "go" => Lang::Go,
            "java" | "kt" => Lang::Java,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::JavaScript => "JavaScript/TypeScript",
            Lang::Go => "Go",
            Lang::Java => "Java",
        }
    }
}

/// Whether the usual test runners of the file's language collect `path` as
/// a test file by its name with their default settings: pytest and unittest
/// (`test*.py`, `*_test.py`), `go test` (`*_test.go`), Jest, Vitest, Mocha
/// and node's runner (`*.test.*`, `*.spec.*`, `*-test.*`, `*_test.*`,
/// `test-*.*`, `test.*`, anything under `__tests__/` or `test/`), Maven
/// Surefire (`Test*`, `*Test`, `*Tests`, `*TestCase`). Cargo compiles every
/// `.rs` file it is given, so any Rust file counts. A file in no known
/// language is never collected.
pub fn runner_collects(path: &str) -> bool {
    let Some(lang) = Lang::of(path) else {
        return false;
    };
    let (dirs, name) = path.rsplit_once('/').unwrap_or(("", path));
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    match lang {
        Lang::Rust => true,
        Lang::Python => stem.starts_with("test") || stem.ends_with("_test"),
        Lang::Go => stem.ends_with("_test"),
        Lang::JavaScript => {
            [".test", ".spec", "-test", "_test"]
                .iter()
                .any(|s| stem.ends_with(s))
                || stem.starts_with("test-")
                || stem == "test"
                || dirs.split('/').any(|d| d == "__tests__" || d == "test")
        }
        Lang::Java => {
            stem.starts_with("Test")
                || ["Test", "Tests", "TestCase"]
                    .iter()
                    .any(|s| stem.ends_with(s))
        }
    }
}

/// Why a test file at `old` is no longer run as one at `new`, if it is not:
/// it left the test globs, its language changed (`test_x.py` to
/// `test_x.py.disabled` or `.txt`), or its runner no longer collects it by
/// name (`foo_test.go` to `foo.go`).
pub fn disabled_by_rename(globs: &Globs, old: &str, new: &str) -> Option<String> {
    let is_test = |p: &str| globs.is_match(p);
    if !is_test(old) {
        return None;
    }
    if !is_test(new) {
        return Some(format!("test file moved out of the test globs to `{new}`"));
    }
    if let Some(lang) = Lang::of(old)
        && Lang::of(new) != Some(lang)
    {
        return Some(format!(
            "test file renamed to `{new}`, which is not a {} file: its runner will not collect it",
            lang.name()
        ));
    }
    if runner_collects(old) && !runner_collects(new) {
        return Some(format!(
            "test file renamed to `{new}`, a name its runner does not collect"
        ));
    }
    None
}

/// Globs as the host reads them (`globset`, with `*` and `?` inside one
/// path segment, `**` across any number of segments, `{a,b}`
/// alternatives and `[...]` classes), matched against repository-relative
/// paths.
pub struct Globs(globset::GlobSet);

impl Globs {
    /// An error names the pattern that is not a glob.
    pub fn new(patterns: &[&str]) -> Result<Globs, String> {
        let mut set = globset::GlobSetBuilder::new();
        for p in patterns {
            let glob = globset::GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("`{p}` is not a glob: {e}"))?;
            set.add(glob);
        }
        set.build()
            .map(Globs)
            .map_err(|e| format!("the globs do not build: {e}"))
    }

    pub fn is_match(&self, path: &str) -> bool {
        self.0.is_match(path)
    }
}

/// Whether `path` matches the one glob `pattern` (an invalid pattern
/// matches nothing).
pub fn glob_match(pattern: &str, path: &str) -> bool {
    Globs::new(&[pattern]).is_ok_and(|g| g.is_match(path))
}
