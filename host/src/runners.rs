//! The test runners a repository uses and where their tests are, read the
//! way each runner reads its own configuration: pytest (`pytest.ini`,
//! `pyproject.toml`, `tox.ini`, `setup.cfg`: `testpaths`, `python_files`),
//! unittest, Django's `tests/runtests.py`, sympy's `bin/test`, mocha
//! (`.mocharc.*`, `package.json` `mocha`, the `test` script's arguments,
//! default `./test/*.{js,cjs,mjs}`), jest (`testMatch`, `roots`, defaults),
//! vitest (`include`, defaults), `node --test`, cargo and `go test`.
//! `init` writes what it finds; each runner names the files that told.

use std::collections::BTreeSet;

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
        globs.push("**/conftest.py".into());
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

/// The words of a shell command after the program `prog` (a word ending
/// in `prog`), up to the next `&&`, `;` or `|`.
fn args_after<'a>(script: &'a str, prog: &str) -> Option<Vec<&'a str>> {
    let words: Vec<&str> = script.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_matches(['\'', '"']).rsplit('/').next() == Some(prog))?;
    Some(
        words[at + 1..]
            .iter()
            .take_while(|w| !matches!(**w, "&&" | ";" | "|" | "||"))
            .map(|w| w.trim_matches(['\'', '"']))
            .collect(),
    )
}

/// A mocha spec (a file, a directory or a glob) as globs.
fn mocha_spec(spec: &str, recursive: bool, exts: &str) -> String {
    let s = spec.trim_start_matches("./").trim_end_matches('/');
    if s.contains('*') || s.contains('{') || s.rsplit('/').next().is_some_and(|n| n.contains('.')) {
        s.to_string()
    } else if recursive {
        format!("{s}/**/*.{exts}")
    } else {
        format!("{s}/*.{exts}")
    }
}

fn javascript(m: &mut Model, files: &[String], read: &dyn Fn(&str) -> Option<String>) {
    let Some(pkg) =
        read("package.json").and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        m.missing
            .push("package.json does not parse: no JavaScript runner read".into());
        return;
    };
    let script = pkg["scripts"]["test"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let dep = |n: &str| {
        ["dependencies", "devDependencies"]
            .iter()
            .any(|k| pkg[*k].get(n).is_some())
    };
    let file_like = |prefix: &str| {
        files
            .iter()
            .find(|f| !f.contains('/') && f.starts_with(prefix))
    };
    // mocha
    let mocharc = file_like(".mocharc");
    if mocharc.is_some() || pkg.get("mocha").is_some() || dep("mocha") || script.contains("mocha") {
        let mut specs: Vec<String> = Vec::new();
        let mut recursive = false;
        let mut exts = JS_EXTS.to_string();
        let mut from = Vec::new();
        if let Some(rc) = mocharc
            && let Some(text) = read(rc)
        {
            from.push(rc.clone());
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                recursive |= v["recursive"].as_bool() == Some(true);
                match &v["spec"] {
                    serde_json::Value::String(s) => specs.push(s.clone()),
                    serde_json::Value::Array(a) => {
                        specs.extend(a.iter().filter_map(|x| x.as_str().map(str::to_string)))
                    }
                    _ => {}
                }
            } else {
                // YAML: `spec: x` or a `spec:` list.
                let mut in_spec = false;
                for line in text.lines() {
                    let t = line.trim();
                    if let Some(v) = t.strip_prefix("spec:") {
                        let v = v.trim().trim_matches(['\'', '"']);
                        if v.is_empty() {
                            in_spec = true;
                        } else {
                            specs.extend(
                                v.trim_matches(['[', ']'])
                                    .split(',')
                                    .map(|s| s.trim().trim_matches(['\'', '"']).to_string())
                                    .filter(|s| !s.is_empty()),
                            );
                        }
                        continue;
                    }
                    if in_spec && let Some(item) = t.strip_prefix('-') {
                        specs.push(item.trim().trim_matches(['\'', '"']).to_string());
                        continue;
                    }
                    in_spec = false;
                    if t.starts_with("recursive:") && t.contains("true") {
                        recursive = true;
                    }
                }
            }
        }
        if let Some(s) = pkg["mocha"]["spec"].as_str() {
            specs.push(s.to_string());
            from.push("package.json `mocha`".into());
        }
        if let Some(args) = args_after(&script, "mocha") {
            from.push("package.json `scripts.test`".into());
            // Options that take a value (their value is not a spec).
            const VALUED: &[&str] = &[
                "-r",
                "--require",
                "-R",
                "--reporter",
                "-O",
                "--reporter-option",
                "--reporter-options",
                "-u",
                "--ui",
                "-t",
                "--timeout",
                "-s",
                "--slow",
                "-g",
                "--grep",
                "-f",
                "--fgrep",
                "--file",
                "--config",
                "--package",
                "--ignore",
                "--exclude",
                "-j",
                "--jobs",
                "--retries",
                "--extension",
                "--watch-files",
                "--watch-ignore",
                "--node-option",
                "-n",
            ];
            let mut i = 0;
            while i < args.len() {
                let a = args[i];
                if a == "--recursive" {
                    recursive = true;
                } else if a == "--extension"
                    && let Some(e) = args.get(i + 1)
                {
                    exts = format!("{{js,cjs,mjs,{e}}}");
                }
                if VALUED.contains(&a) {
                    i += 2;
                    continue;
                }
                if !a.starts_with('-') && !a.contains('=') {
                    specs.push(a.to_string());
                }
                i += 1;
            }
        }
        if specs.is_empty() {
            specs.push("./test".into());
            from.push("defaults".into());
        }
        let mut globs: Vec<String> = specs
            .iter()
            .map(|s| mocha_spec(s, recursive, &exts))
            .collect();
        globs.dedup();
        m.runners.push(Runner {
            name: "mocha".into(),
            globs,
            command: "npx mocha --reporter xunit --reporter-option output=\"$AGENT_LEDGER_JUNIT\""
                .into(),
            from: from.join(", "),
        });
    }
    // jest
    let jest_config = files
        .iter()
        .find(|f| !f.contains('/') && f.starts_with("jest.config"));
    if jest_config.is_some() || pkg.get("jest").is_some() || dep("jest") || script.contains("jest")
    {
        let mut globs: Vec<String> = Vec::new();
        let mut from = "defaults".to_string();
        if let Some(a) = pkg["jest"]["testMatch"].as_array() {
            let listed: Vec<String> = a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect();
            // Extended globs (`?(…)`, `+(…)`) have no equivalent here.
            if listed.iter().all(|g| {
                !g.contains("?(") && !g.contains("+(") && !g.contains("@(") && !g.contains("!(")
            }) {
                globs = listed
                    .iter()
                    .map(|g| g.trim_start_matches("<rootDir>/").to_string())
                    .collect();
                from = "package.json `jest.testMatch`".into();
            } else {
                m.missing.push("jest `testMatch` uses extended globs: its defaults are used instead; check `[tests] globs`".into());
            }
        } else if let Some(c) = jest_config {
            m.missing.push(format!(
                "`{c}` is code, not read: jest's default testMatch is used; check `[tests] globs`"
            ));
        }
        if globs.is_empty() {
            globs = JEST_DEFAULT.iter().map(|s| s.to_string()).collect();
            if let Some(roots) = pkg["jest"]["roots"].as_array() {
                let roots: Vec<&str> = roots.iter().filter_map(|r| r.as_str()).collect();
                globs = roots
                    .iter()
                    .flat_map(|r| {
                        let r = r.trim_start_matches("<rootDir>").trim_matches('/');
                        JEST_DEFAULT.iter().map(move |g| {
                            if r.is_empty() {
                                g.to_string()
                            } else {
                                format!("{r}/{g}")
                            }
                        })
                    })
                    .collect();
                from = "package.json `jest.roots`".into();
            }
        }
        m.runners.push(Runner {
            name: "jest".into(),
            globs,
            command: "npx jest --ci --reporters=default --reporters=jest-junit (JEST_JUNIT_OUTPUT_FILE=\"$AGENT_LEDGER_JUNIT\")".into(),
            from,
        });
    }
    // vitest
    let vitest_config = files.iter().find(|f| {
        !f.contains('/') && (f.starts_with("vitest.config") || f.starts_with("vite.config"))
    });
    if dep("vitest")
        || script.contains("vitest")
        || files
            .iter()
            .any(|f| !f.contains('/') && f.starts_with("vitest.config"))
    {
        let mut globs = Vec::new();
        let mut from = "defaults".to_string();
        if let Some(c) = vitest_config
            && let Some(text) = read(c)
            && let Some(at) = text.find("include:")
        {
            let rest = &text[at + "include:".len()..];
            if let (Some(open), Some(close)) = (rest.find('['), rest.find(']'))
                && open < close
            {
                for part in rest[open + 1..close].split(',') {
                    let g = part.trim().trim_matches(['\'', '"', '`']);
                    if !g.is_empty() {
                        globs.push(g.trim_start_matches("./").to_string());
                    }
                }
                from = format!("`{c}` `include`");
            }
        }
        if globs.is_empty() {
            globs.push(VITEST_DEFAULT.into());
        }
        m.runners.push(Runner {
            name: "vitest".into(),
            globs,
            command: "npx vitest run --reporter=junit --outputFile=\"$AGENT_LEDGER_JUNIT\"".into(),
            from,
        });
    }
    if script.contains("node --test") {
        m.runners.push(Runner {
            name: "node --test".into(),
            globs: [
                "**/*.test.{js,cjs,mjs}",
                "**/*-test.{js,cjs,mjs}",
                "**/*_test.{js,cjs,mjs}",
                "**/test-*.{js,cjs,mjs}",
                "**/test.{js,cjs,mjs}",
                "**/test/**/*.{js,cjs,mjs}",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            command: "node --test --test-reporter=junit --test-reporter-destination=\"$AGENT_LEDGER_JUNIT\"".into(),
            from: "package.json `scripts.test`".into(),
        });
    }
    if !m
        .runners
        .iter()
        .any(|r| matches!(r.name.as_str(), "mocha" | "jest" | "vitest" | "node --test"))
    {
        m.missing.push(format!(
            "package.json names no test runner agent-ledger reads (scripts.test: `{}`): list the test globs by hand",
            script
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(files: &[(&str, &str)]) -> Model {
        let names: Vec<String> = files.iter().map(|(n, _)| n.to_string()).collect();
        let read = |p: &str| {
            files
                .iter()
                .find(|(n, _)| *n == p)
                .map(|(_, t)| t.to_string())
        };
        detect(&names, &read)
    }

    #[test]
    fn mocha_reads_the_test_scripts_directories() {
        let m = model(&[
            (
                "package.json",
                r#"{"scripts":{"test":"mocha --require test/support/env --reporter spec --bail --check-leaks test/ test/acceptance/"},"devDependencies":{"mocha":"10"}}"#,
            ),
            ("test/app.js", ""),
            ("test/acceptance/a.js", ""),
        ]);
        assert_eq!(
            m.globs(),
            ["test/*.{js,cjs,mjs}", "test/acceptance/*.{js,cjs,mjs}"]
        );
        let m = model(&[
            ("package.json", r#"{"devDependencies":{"mocha":"10"}}"#),
            (
                ".mocharc.yml",
                "spec:\n  - 'spec/**/*.spec.js'\nrecursive: true\n",
            ),
        ]);
        assert_eq!(m.globs(), ["spec/**/*.spec.js"]);
        let m = model(&[("package.json", r#"{"devDependencies":{"mocha":"10"}}"#)]);
        assert_eq!(m.globs(), ["test/*.{js,cjs,mjs}"]);
    }

    #[test]
    fn pytest_reads_testpaths_and_python_files() {
        let m = model(&[
            (
                "pyproject.toml",
                "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\npython_files = [\"check_*.py\"]\n",
            ),
            ("src/a.py", ""),
        ]);
        assert_eq!(m.runners[0].name, "pytest");
        assert_eq!(m.globs(), ["tests/**/check_*.py", "**/conftest.py"]);
        let m = model(&[
            (
                "setup.cfg",
                "[tool:pytest]\ntestpaths =\n    tests\n    docs\n",
            ),
            ("a.py", ""),
        ]);
        assert_eq!(m.globs()[..2], ["tests/**/test_*.py", "tests/**/*_test.py"]);
        let m = model(&[("a.py", ""), ("tests/test_a.py", "")]);
        assert_eq!(m.runners[0].name, "unittest");
    }

    #[test]
    fn jest_vitest_cargo_and_go_have_their_defaults() {
        let m = model(&[
            ("package.json", r#"{"devDependencies":{"vitest":"3"}}"#),
            (
                "vitest.config.ts",
                "export default { test: { include: ['test/**/*.test.ts'] } }",
            ),
        ]);
        assert_eq!(m.globs(), ["test/**/*.test.ts"]);
        let m = model(&[("package.json", r#"{"jest":{"roots":["<rootDir>/src"]}}"#)]);
        assert!(
            m.globs()[0].starts_with("src/**/__tests__"),
            "{:?}",
            m.globs()
        );
        let m = model(&[("Cargo.toml", ""), ("go.mod", "")]);
        assert_eq!(m.runners.len(), 2);
        let m = model(&[("package.json", r#"{"scripts":{"test":"tap"}}"#)]);
        assert!(!m.missing.is_empty());
    }
}
