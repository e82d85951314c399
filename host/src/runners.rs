//! The test runners a repository uses and where their tests are, read the
//! way each runner reads its own configuration: pytest (`pytest.ini`,
//! `pyproject.toml`, `tox.ini`, `setup.cfg`: `testpaths`, `python_files`),
//! unittest, Django's `tests/runtests.py`, sympy's `bin/test`, mocha
//! (`.mocharc.*`, `package.json` `mocha`, the `test` script's arguments,
//! default `./test/*.{js,cjs,mjs}`), jest (`testMatch`, `roots`, defaults),
//! vitest (`include`, defaults), `node --test`, cargo and `go test`.
//! `init` writes what it finds; each runner names the files that told.

use std::collections::BTreeSet;

mod js;
use js::javascript;

/// One runner and the test files it collects.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Runner {
    /// `pytest`, `unittest`, `django`, `sympy`, `mocha`, `jest`, `vitest`,
    /// `node --test`, `cargo`, `go test`.
    pub name: String,
    /// Globs of its test files, repository-relative.
    pub globs: Vec<String>,
    /// A command that runs it with a JUnit report at `$AGENT_LEDGER_JUNIT`
    /// (or a log parser), for `--test-cmd`.
    pub command: String,
    /// What told: the files read, or `defaults`.
    pub from: String,
}

/// What was found, and what could not be.
#[derive(Debug, Default)]
pub struct Model {
    pub runners: Vec<Runner>,
    /// Plain sentences: what is unknown and why.
    pub missing: Vec<String>,
}

impl Model {
    /// Every runner's globs, once each, in order.
    pub fn globs(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.runners
            .iter()
            .flat_map(|r| r.globs.iter())
            .filter(|g| seen.insert((*g).clone()))
            .cloned()
            .collect()
    }
}

const PY_DEFAULT_FILES: &[&str] = &["test_*.py", "*_test.py"];
const JS_EXTS: &str = "{js,cjs,mjs}";
const JEST_DEFAULT: &[&str] = &[
    "**/__tests__/**/*.{js,jsx,ts,tsx,mjs,cjs}",
    "**/*.{spec,test}.{js,jsx,ts,tsx,mjs,cjs}",
];
const VITEST_DEFAULT: &str = "**/*.{test,spec}.{js,mjs,cjs,ts,mts,cts,jsx,tsx}";

/// The test globs the properties use at `base`: the configuration's when
/// it names its own; with the built-in defaults, those and every glob of
/// the runners detected in the base tree (the way `init` finds them), so
/// a mocha project's `test/*.js` is protected without a `[tests]` table.
pub fn effective_globs(
    repo: &crate::git::Repo,
    base: &str,
    configured: &[String],
) -> crate::exit::Result<Vec<String>> {
    if configured != crate::config::Tests::default().globs.as_slice() {
        return Ok(configured.to_vec());
    }
    let files = repo.tracked_at(base)?;
    let read = |p: &str| -> Option<String> {
        let bytes = repo.read_at(base, p).ok()??;
        (bytes.len() <= 1 << 20).then(|| String::from_utf8(bytes).ok())?
    };
    let mut globs = configured.to_vec();
    for g in detect(&files, &read).globs() {
        if !globs.contains(&g) {
            globs.push(g);
        }
    }
    Ok(globs)
}

/// Detects the runners of a repository whose tracked files are `files`;
/// `read` gives a file's text.
pub fn detect(files: &[String], read: &dyn Fn(&str) -> Option<String>) -> Model {
    let mut m = Model::default();
    let has = |p: &str| files.iter().any(|f| f == p);
    let ext = |e: &str| files.iter().any(|f| f.ends_with(e));
    if ext(".py") {
        python(&mut m, files, read, &has);
    }
    if has("package.json") {
        javascript(&mut m, files, read);
    } else if ext(".js") || ext(".ts") {
        m.missing.push(
            "JavaScript/TypeScript files but no top-level package.json: no runner read; list the test globs by hand"
                .into(),
        );
    }
    if has("Cargo.toml") || files.iter().any(|f| f.ends_with("/Cargo.toml")) {
        m.runners.push(Runner {
            name: "cargo".into(),
            globs: vec!["tests/**".into(), "**/tests/**".into()],
            command: "cargo test".into(),
            from: "Cargo.toml (integration tests in tests/; #[test] in src/ is found by assertions_not_weakened)".into(),
        });
    }
    if has("go.mod") || files.iter().any(|f| f.ends_with("/go.mod")) {
        m.runners.push(Runner {
            name: "go test".into(),
            globs: vec!["**/*_test.go".into()],
            command: "go test ./...".into(),
            from: "go.mod".into(),
        });
    }
    m
}

/// `key = value` lines of an INI section (`[name]`), continuation lines
/// (indented) joined to their key's value.
fn ini_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut inside = false;
    let mut found = false;
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            inside = t[1..t.len() - 1].trim() == name;
            found |= inside;
            continue;
        }
        if !inside || t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(t);
            }
            continue;
        }
        if let Some((k, v)) = t.split_once(['=', ':']) {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    found.then_some(out)
}

/// pytest's own configuration, in the order pytest looks: `pytest.ini`,
/// `pyproject.toml`, `tox.ini`, `setup.cfg`. Returns the file and its
/// `testpaths` and `python_files`.
fn pytest_config(
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, Vec<String>, Vec<String>)> {
    let words = |v: &str| -> Vec<String> { v.split_whitespace().map(str::to_string).collect() };
    for (file, section) in [(".pytest.ini", "pytest"), ("pytest.ini", "pytest")] {
        if let Some(text) = read(file) {
            let s = ini_section(&text, section).unwrap_or_default();
            let get = |k: &str| s.iter().find(|(x, _)| x == k).map(|(_, v)| words(v));
            return Some((
                file.into(),
                get("testpaths").unwrap_or_default(),
                get("python_files").unwrap_or_default(),
            ));
        }
    }
    if let Some(text) = read("pyproject.toml")
        && let Ok(doc) = text.parse::<toml::Table>()
    {
        let tool = doc.get("tool").and_then(|t| t.get("pytest"));
        let opts = tool.and_then(|p| p.get("ini_options").or(Some(p)));
        if let Some(opts) = opts {
            let list = |k: &str| -> Vec<String> {
                match opts.get(k) {
                    Some(toml::Value::Array(a)) => a
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                    Some(toml::Value::String(s)) => words(s),
                    _ => Vec::new(),
                }
            };
            return Some((
                "pyproject.toml".into(),
                list("testpaths"),
                list("python_files"),
            ));
        }
    }
    for (file, section) in [("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")] {
        if let Some(text) = read(file)
            && let Some(s) = ini_section(&text, section)
        {
            let get = |k: &str| s.iter().find(|(x, _)| x == k).map(|(_, v)| words(v));
            return Some((
                file.into(),
                get("testpaths").unwrap_or_default(),
                get("python_files").unwrap_or_default(),
            ));
        }
    }
    None
}

fn python(
    m: &mut Model,
    files: &[String],
    read: &dyn Fn(&str) -> Option<String>,
    has: &dyn Fn(&str) -> bool,
) {
    if has("tests/runtests.py") {
        m.runners.push(Runner {
            name: "django".into(),
            globs: vec!["tests/**/*.py".into()],
            command: "python tests/runtests.py --parallel 1 (its log: --test-log-parser django)"
                .into(),
            from: "tests/runtests.py".into(),
        });
    }
    if has("bin/test") {
        m.runners.push(Runner {
            name: "sympy".into(),
            globs: vec!["**/tests/test_*.py".into()],
            command: "bin/test (its log: --test-log-parser sympy)".into(),
            from: "bin/test".into(),
        });
    }
    let mentions_pytest = [
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "requirements.txt",
        "requirements-dev.txt",
        "setup.py",
    ]
    .iter()
    .any(|f| read(f).is_some_and(|t| t.contains("pytest")));
    let config = pytest_config(read);
    let conftest = files
        .iter()
        .any(|f| f == "conftest.py" || f.ends_with("/conftest.py"));
    if config.is_some() || conftest || mentions_pytest {
        let (from, paths, patterns) =
            config.unwrap_or_else(|| ("defaults".into(), Vec::new(), Vec::new()));
        let patterns: Vec<String> = if patterns.is_empty() {
            PY_DEFAULT_FILES.iter().map(|s| s.to_string()).collect()
        } else {
            patterns
        };
        let mut globs = Vec::new();
        let paths = if paths.is_empty() {
            vec![String::new()]
        } else {
            paths
        };
        for p in &paths {
            let p = p.trim_start_matches("./").trim_end_matches('/');
            for pat in &patterns {
                globs.push(if p.is_empty() {
                    format!("**/{pat}")
                } else if p.ends_with(".py") {
                    p.to_string()
                } else {
                    format!("{p}/**/{pat}")
                });
            }
        }
        if conftest {
            globs.push("**/conftest.py".into());
        }
        m.runners.push(Runner {
            name: "pytest".into(),
            globs,
            command: "python -m pytest -q -p no:cacheprovider --junitxml \"$AGENT_LEDGER_JUNIT\""
                .into(),
            from,
        });
    } else if m.runners.is_empty() {
        m.runners.push(Runner {
            name: "unittest".into(),
            globs: vec!["**/test*.py".into()],
            command: "python -m pytest -q -p no:cacheprovider --junitxml \"$AGENT_LEDGER_JUNIT\" (pytest runs unittest tests too)".into(),
            from: "defaults (no pytest configuration or mention found)".into(),
        });
    }
}

#[cfg(test)]
mod tests;
