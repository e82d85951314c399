//! Bindings for the `agent-ledger:property` world and small helpers shared
//! by the built-in properties. A property crate implements [`Guest`] and
//! exports it with `agent_ledger_guest::export!(MyProperty with_types_in agent_ledger_guest);`.

wit_bindgen::generate!({
    world: "plugin",
    path: "../../wit",
    pub_export_macro: true,
    // The world imports the WASI interfaces the host links (filesystem,
    // stdio, clocks, random); their bindings are generated here, and only
    // the ones a property calls end up imported by its component.
    generate_all,
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
pub fn disabled_by_rename(globs: &[&str], old: &str, new: &str) -> Option<String> {
    let is_test = |p: &str| globs.iter().any(|g| glob_match(g, p));
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
    use super::{disabled_by_rename, glob_match, runner_collects};

    #[test]
    fn globs() {
        assert!(glob_match("tests/**", "tests/a/b.py"));
        assert!(glob_match("**/test_*.py", "test_x.py"));
        assert!(glob_match("**/test_*.py", "a/b/test_x.py"));
        assert!(!glob_match("**/test_*.py", "a/b/x_test.py"));
        assert!(glob_match("**/*_test.go", "pkg/a_test.go"));
        assert!(!glob_match("src/*.rs", "src/a/b.rs"));
    }

    #[test]
    fn runners_collect_test_files_by_name() {
        for p in [
            "tests/test_x.py",
            "pkg/x_test.py",
            "pkg/foo_test.go",
            "src/a.test.ts",
            "src/a.spec.jsx",
            "src/__tests__/a.js",
            "test/a.mjs",
            "src/FooTest.java",
            "src/TestFoo.kt",
            "tests/cli.rs",
        ] {
            assert!(runner_collects(p), "{p}");
        }
        for p in [
            "tests/test_x.py.disabled",
            "tests/test_x.txt",
            "tests/helpers.py",
            "pkg/foo_test.go.bak",
            "pkg/foo.go",
            "src/a.ts",
            "src/Foo.java",
            "tests/README",
        ] {
            assert!(!runner_collects(p), "{p}");
        }
    }

    #[test]
    fn renames_that_disable_a_test() {
        let globs = ["tests/**", "**/test_*.py", "**/*_test.go"];
        for (old, new) in [
            ("tests/test_x.py", "tests/test_x.py.disabled"),
            ("tests/test_x.py", "tests/test_x.txt"),
            ("tests/test_x.py", "tests/x_check.py"),
            ("pkg/foo_test.go", "pkg/foo_test.go.bak"),
            ("tests/foo_test.go", "tests/foo_test.go.bak"),
            ("tests/test_x.py", "src/x.py"),
        ] {
            assert!(
                disabled_by_rename(&globs, old, new).is_some(),
                "{old} -> {new}"
            );
        }
        for (old, new) in [
            ("tests/test_x.py", "tests/test_y.py"),
            ("tests/test_x.py", "tests/unit/test_x.py"),
            ("tests/helpers.py", "tests/util/helpers.py"),
            ("tests/fixtures/a.json", "tests/fixtures/b.json"),
            ("src/x.py", "src/y.txt"),
        ] {
            assert_eq!(disabled_by_rename(&globs, old, new), None, "{old} -> {new}");
        }
    }
}
