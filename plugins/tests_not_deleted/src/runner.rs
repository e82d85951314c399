//! Test-runner configuration: files (or the sections of shared files) that
//! decide which tests a runner collects and how it judges them. A patch
//! that changes one can disable tests without touching a test file
//! (`addopts = "-k 'not slow'"`, `collect_ignore`, `testPathIgnorePatterns`,
//! a cargo `runner = "true"`).

/// How much of a file configures a test runner.
enum Part {
    /// All of it, for the named runner.
    Whole(&'static str),
    /// TOML keys under these dotted prefixes (`tool.pytest`).
    Toml(&'static [&'static str]),
    /// INI sections (`tool:pytest`; a trailing `*` matches any suffix).
    Ini(&'static [&'static str]),
    /// `package.json`: the runners' own keys and the `test` scripts.
    PackageJson,
}

const PYPROJECT: &[&str] = &["tool.pytest", "tool.tox", "project.entry-points"];
const CARGO: &[&str] = &[
    "package.autotests",
    "lib.test",
    "lib.harness",
    "lib.doctest",
    "bin.test",
    "bin.harness",
    "test",
];
const SETUP_CFG: &[&str] = &["tool:pytest", "options.entry_points"];
const TOX: &[&str] = &["pytest", "tox", "testenv*"];
/// `package.json` keys a JavaScript runner reads its configuration from.
const JS_RUNNER_KEYS: &[&str] = &["jest", "mocha", "ava", "vitest"];

fn part(path: &str) -> Option<Part> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let dirs = &path[..path.len() - name.len()];
    let prefixed = |prefixes: &[&str]| {
        prefixes
            .iter()
            .any(|p| name.strip_prefix(p).is_some_and(|r| r.starts_with('.')))
    };
    // Python runs `sitecustomize` and `usercustomize` at startup in
    // whatever form it finds them: a module, a package, bytecode, an
    // extension module.
    let startup = ["sitecustomize", "usercustomize"];
    let stem = name.split('.').next().unwrap_or(name);
    if startup.contains(&stem) || dirs.split('/').any(|d| startup.contains(&d)) {
        return Some(Part::Whole("Python's startup"));
    }
    // Bytecode and extension modules: Python imports an unchecked
    // hash-based `.pyc` (or a sourceless one) instead of the source beside
    // it, and an extension module (`X.so`, `X.cpython-311-….so`, `X.pyd`)
    // before an `X.py`. Neither can be read as a test; a patch has no need
    // to carry them.
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".pyc")
        || lower.ends_with(".pyo")
        || dirs
            .split('/')
            .any(|d| d.eq_ignore_ascii_case("__pycache__"))
    {
        return Some(Part::Whole(
            "Python's imports: bytecode is loaded instead of its source",
        ));
    }
    if lower.ends_with(".so") || lower.ends_with(".pyd") {
        return Some(Part::Whole(
            "Python's imports: an extension module is imported before a `.py` of its name",
        ));
    }
    // Package metadata on the path: its entry points load pytest plugins
    // (`pytest11`) that can rewrite every outcome. `importlib.metadata`
    // matches these suffixes in any case (`PKG-1.0.DIST-INFO`).
    if dirs.split('/').any(|d| {
        let d = d.to_ascii_lowercase();
        d.ends_with(".dist-info") || d.ends_with(".egg-info")
    }) || name.to_ascii_lowercase().ends_with(".egg-link")
    {
        return Some(Part::Whole(
            "Python package metadata (entry points such as pytest plugins)",
        ));
    }
    Some(match name {
        "pytest.ini" | ".pytest.ini" | "pytest.toml" | ".pytest.toml" => Part::Whole("pytest"),
        "conftest.py" => Part::Whole("pytest (conftest.py hooks and collect_ignore)"),
        _ if name.ends_with(".pth") => Part::Whole("Python's startup"),
        "pyproject.toml" => Part::Toml(PYPROJECT),
        "setup.cfg" => Part::Ini(SETUP_CFG),
        "tox.ini" => Part::Ini(TOX),
        "Cargo.toml" => Part::Toml(CARGO),
        "config" | "config.toml" if dirs.ends_with(".cargo/") || dirs == ".cargo/" => {
            Part::Whole("cargo (aliases, rustflags, target runners)")
        }
        "package.json" => Part::PackageJson,
        "jasmine.json" => Part::Whole("Jasmine"),
        _ if name.starts_with(".mocharc") => Part::Whole("Mocha"),
        _ if prefixed(&["jest.config"]) => Part::Whole("Jest"),
        _ if prefixed(&["vitest.config", "vitest.workspace", "vite.config"]) => {
            Part::Whole("Vitest")
        }
        _ if prefixed(&["playwright.config"]) => Part::Whole("Playwright"),
        _ if prefixed(&["ava.config"]) => Part::Whole("AVA"),
        _ if prefixed(&["karma.conf"]) => Part::Whole("Karma"),
        _ if prefixed(&["cypress.config"]) => Part::Whole("Cypress"),
        _ => return None,
    })
}

/// Whether `path` holds (or may hold, in a section) test-runner
/// configuration.
pub fn configures(path: &str) -> bool {
    part(path).is_some()
}

/// What changed in the runner configuration `path` holds, between the
/// base's text and the patched text (`None`: the file is absent there).
/// Each entry names a file or a section; empty when nothing that
/// configures a runner changed.
pub fn changed(path: &str, before: Option<&str>, after: Option<&str>) -> Vec<String> {
    let Some(part) = part(path) else {
        return Vec::new();
    };
    if before == after {
        return Vec::new();
    }
    let (b, a) = (before.unwrap_or_default(), after.unwrap_or_default());
    let differing = |b: Vec<(String, String)>, a: Vec<(String, String)>| {
        let mut labels: Vec<String> = b.iter().chain(&a).map(|(label, _)| label.clone()).collect();
        labels.sort();
        labels.dedup();
        labels.retain(|l| {
            let of = |v: &[(String, String)]| {
                v.iter()
                    .filter(|(x, _)| x == l)
                    .map(|(_, line)| line.clone())
                    .collect::<Vec<_>>()
            };
            of(&b) != of(&a)
        });
        labels
    };
    match part {
        Part::Whole(runner) => {
            let what = match (before, after) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "changed",
            };
            vec![format!("`{path}` {what} (it configures {runner})")]
        }
        Part::Toml(prefixes) => differing(toml(b, prefixes), toml(a, prefixes)),
        Part::Ini(sections) => differing(ini(b, sections), ini(a, sections)),
        Part::PackageJson => match (package_json(b, before), package_json(a, after)) {
            (Some(b), Some(a)) => differing(b, a),
            _ => vec![format!(
                "`{path}`, which cannot be read as JSON (its `jest`, `mocha` and `scripts.test` keys configure the runners)"
            )],
        },
    }
}

/// A TOML line without its comment (a `#` outside a string).
fn toml_code(line: &str) -> &str {
    let mut quote = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

/// A dotted TOML key with its spaces and quotes removed.
fn toml_key(key: &str) -> String {
    key.chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .collect()
}

/// Whether the dotted key `full` is, holds, or lies under one of `prefixes`.
fn under(full: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| {
        full == *p
            || full.strip_prefix(p).is_some_and(|r| r.starts_with('.'))
            || p.strip_prefix(full).is_some_and(|r| r.starts_with('.'))
    })
}

/// The lines of a TOML file that set a key under `prefixes`, each labelled
/// with its table (`[tool.pytest.ini_options]`) or, at the top, its key.
/// The lines of a multi-line array, inline table or string belong to the
/// key that opened it.
fn toml(text: &str, prefixes: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut table = String::new();
    let mut key = String::new();
    // Open brackets of the current value, and an open `"""`/`'''` string.
    let mut depth = 0i64;
    let mut long_string = false;
    for line in text.lines() {
        let code = if long_string {
            line.trim()
        } else {
            toml_code(line).trim()
        };
        if code.is_empty() {
            continue;
        }
        let continued = depth > 0 || long_string;
        if !continued && code.starts_with('[') && code.ends_with(']') {
            table = toml_key(code.trim_matches(|c| c == '[' || c == ']'));
            key.clear();
            continue;
        }
        if !continued && let Some((k, _)) = code.split_once('=') {
            let k = toml_key(k);
            key = if table.is_empty() {
                k
            } else {
                format!("{table}.{k}")
            };
        }
        let (opened, toggles) = brackets(code);
        depth = (depth + opened).max(0);
        long_string ^= toggles;
        let full = if key.is_empty() {
            table.as_str()
        } else {
            key.as_str()
        };
        if under(full, prefixes) {
            let label = if table.is_empty() {
                format!("`{}`", full.split('.').next().unwrap_or(full))
            } else {
                format!("`[{table}]`")
            };
            out.push((label, code.to_string()));
        }
    }
    out
}

/// Brackets a TOML line opens (`[`, `{`) less those it closes, outside
/// strings, and whether it opens or closes a multi-line string.
fn brackets(code: &str) -> (i64, bool) {
    let toggles = (code.matches("\"\"\"").count() + code.matches("'''").count()) % 2 == 1;
    let mut n = 0;
    let mut quote = None;
    let mut escaped = false;
    for c in code.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '[' | '{' => n += 1,
                ']' | '}' => n -= 1,
                _ => {}
            },
        }
    }
    (n, toggles)
}

/// The lines of an INI file in `sections` (a trailing `*` matches any
/// suffix), each labelled with its section.
fn ini(text: &str, sections: &[&str]) -> Vec<(String, String)> {
    let wanted = |s: &str| {
        sections.iter().any(|w| match w.strip_suffix('*') {
            Some(prefix) => s.starts_with(prefix),
            None => s == *w,
        })
    };
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let code = line.trim();
        if code.is_empty() || code.starts_with('#') || code.starts_with(';') {
            continue;
        }
        if code.starts_with('[') && code.ends_with(']') && !line.starts_with(char::is_whitespace) {
            section = code[1..code.len() - 1].trim().to_string();
            continue;
        }
        if wanted(&section) {
            out.push((format!("`[{section}]`"), code.to_string()));
        }
    }
    out
}

/// The runner keys of a `package.json` (`jest`, `mocha`, …) and its
/// `test` scripts (`scripts.test`, `scripts.pretest`, `scripts.test:unit`),
/// each with its value written out canonically. An absent file has none;
/// `None` when the text is not JSON.
fn package_json(text: &str, present: Option<&str>) -> Option<Vec<(String, String)>> {
    if present.is_none() {
        return Some(Vec::new());
    }
    let Json::Obj(top) = json::parse(text)? else {
        return None;
    };
    let mut out = Vec::new();
    for (k, v) in &top {
        if JS_RUNNER_KEYS.contains(&k.as_str()) {
            out.push((format!("`{k}`"), v.canonical()));
        }
        if k == "scripts"
            && let Json::Obj(scripts) = v
        {
            for (name, v) in scripts {
                let bare = name
                    .strip_prefix("pre")
                    .or_else(|| name.strip_prefix("post"))
                    .unwrap_or(name);
                if bare.starts_with("test") {
                    out.push((format!("`scripts.{name}`"), v.canonical()));
                }
            }
        }
    }
    Some(out)
}

use json::Json;

mod json {
    //! Just enough JSON for `package.json`: a value tree, depth-bounded.

    #[derive(Debug, Clone, PartialEq)]
    pub enum Json {
        Obj(Vec<(String, Json)>),
        Arr(Vec<Json>),
        Str(String),
        /// A number, `true`, `false` or `null`, as written.
        Lit(String),
    }

    impl Json {
        pub fn canonical(&self) -> String {
            match self {
                Json::Obj(m) => format!(
                    "{{{}}}",
                    m.iter()
                        .map(|(k, v)| format!("{k:?}:{}", v.canonical()))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                Json::Arr(a) => format!(
                    "[{}]",
                    a.iter().map(Json::canonical).collect::<Vec<_>>().join(",")
                ),
                Json::Str(s) => format!("{s:?}"),
                Json::Lit(l) => l.clone(),
            }
        }
    }

    const MAX_DEPTH: usize = 128;

    pub fn parse(text: &str) -> Option<Json> {
        let b = text.as_bytes();
        let mut i = 0;
        let v = value(b, &mut i, 0)?;
        ws(b, &mut i);
        (i == b.len()).then_some(v)
    }

    fn ws(b: &[u8], i: &mut usize) {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    }

    fn value(b: &[u8], i: &mut usize, depth: usize) -> Option<Json> {
        if depth > MAX_DEPTH {
            return None;
        }
        ws(b, i);
        match *b.get(*i)? {
            b'{' => {
                *i += 1;
                let mut m = Vec::new();
                ws(b, i);
                if b.get(*i) == Some(&b'}') {
                    *i += 1;
                    return Some(Json::Obj(m));
                }
                loop {
                    ws(b, i);
                    let k = string(b, i)?;
                    ws(b, i);
                    (b.get(*i) == Some(&b':')).then_some(())?;
                    *i += 1;
                    m.push((k, value(b, i, depth + 1)?));
                    ws(b, i);
                    match b.get(*i)? {
                        b',' => *i += 1,
                        b'}' => {
                            *i += 1;
                            return Some(Json::Obj(m));
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                *i += 1;
                let mut a = Vec::new();
                ws(b, i);
                if b.get(*i) == Some(&b']') {
                    *i += 1;
                    return Some(Json::Arr(a));
                }
                loop {
                    a.push(value(b, i, depth + 1)?);
                    ws(b, i);
                    match b.get(*i)? {
                        b',' => *i += 1,
                        b']' => {
                            *i += 1;
                            return Some(Json::Arr(a));
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => string(b, i).map(Json::Str),
            _ => {
                let start = *i;
                while *i < b.len() && (b[*i].is_ascii_alphanumeric() || b"+-.".contains(&b[*i])) {
                    *i += 1;
                }
                let lit = std::str::from_utf8(&b[start..*i]).ok()?;
                (!lit.is_empty()).then(|| Json::Lit(lit.to_string()))
            }
        }
    }

    /// A string at `i`, its escapes kept as written (two spellings of one
    /// string compare unequal: a false change, never a missed one).
    fn string(b: &[u8], i: &mut usize) -> Option<String> {
        (b.get(*i) == Some(&b'"')).then_some(())?;
        let start = *i + 1;
        let mut j = start;
        while j < b.len() {
            match b[j] {
                b'\\' => j += 2,
                b'"' => {
                    *i = j + 1;
                    return Some(String::from_utf8_lossy(&b[start..j]).into_owned());
                }
                _ => j += 1,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::changed;

    const PYPROJECT: &str = "[project]\nname = \"x\"\ndependencies = [\n    \"requests\",\n]\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\n[tool.black]\nline-length = 88\n";

    #[track_caller]
    fn finds(path: &str, before: Option<&str>, after: Option<&str>, needle: &str) {
        let found = changed(path, before, after);
        assert!(
            found.iter().any(|f| f.contains(needle)),
            "`{needle}` not in {found:?}"
        );
    }

    #[test]
    fn pyproject_pytest_sections_but_not_dependencies() {
        let p = "pyproject.toml";
        let addopts = PYPROJECT.replace(
            "testpaths = [\"tests\"]\n",
            "testpaths = [\"tests\"]\naddopts = \"-k 'not slow'\"\n",
        );
        finds(
            p,
            Some(PYPROJECT),
            Some(&addopts),
            "`[tool.pytest.ini_options]`",
        );
        let removed = PYPROJECT.replace("[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n", "");
        finds(
            p,
            Some(PYPROJECT),
            Some(&removed),
            "`[tool.pytest.ini_options]`",
        );
        let norecurse = PYPROJECT.replace("testpaths", "norecursedirs");
        finds(
            p,
            Some(PYPROJECT),
            Some(&norecurse),
            "`[tool.pytest.ini_options]`",
        );
        let dotted = format!("{PYPROJECT}\n[tool]\npytest.ini_options.python_files = [\"x.py\"]\n");
        finds(p, Some(PYPROJECT), Some(&dotted), "`[tool]`");
        let inline = format!("tool.pytest.ini_options = {{ addopts = \"-k x\" }}\n{PYPROJECT}");
        finds(p, Some(PYPROJECT), Some(&inline), "`tool`");
        let native = format!("{PYPROJECT}\n[tool.pytest]\naddopts = [\"-k\", \"x\"]\n");
        finds(p, Some(PYPROJECT), Some(&native), "`[tool.pytest]`");
        finds(p, None, Some(PYPROJECT), "`[tool.pytest.ini_options]`");
        // Dependencies, other tools and comments are not the runner's.
        for honest in [
            PYPROJECT.replace(
                "    \"requests\",\n",
                "    \"requests\",\n    \"urllib3\",\n",
            ),
            PYPROJECT.replace("88", "100"),
            PYPROJECT.replace("name = \"x\"", "name = \"y\"  # [tool.pytest.ini_options]"),
            format!("{PYPROJECT}# addopts = \"-k x\"\n"),
        ] {
            assert_eq!(
                changed(p, Some(PYPROJECT), Some(&honest)),
                Vec::<String>::new(),
                "{honest}"
            );
        }
        let no_pytest = "[project]\nname = \"x\"\n";
        assert!(changed(p, None, Some(no_pytest)).is_empty());
    }

    #[test]
    fn ini_files() {
        let cfg = "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\n";
        let addopts = format!("{cfg}addopts = -k 'not slow'\n");
        finds("setup.cfg", Some(cfg), Some(&addopts), "`[tool:pytest]`");
        let honest = cfg.replace("name = x", "name = y");
        assert!(changed("setup.cfg", Some(cfg), Some(&honest)).is_empty());
        let tox = "[tox]\nenvlist = py3\n\n[testenv]\ncommands = pytest\n\n[flake8]\nmax-line-length = 100\n";
        let k = tox.replace("commands = pytest", "commands = pytest -k 'not slow'");
        finds("tox.ini", Some(tox), Some(&k), "`[testenv]`");
        let pytest = format!("{tox}\n[pytest]\naddopts = -k x\n");
        finds("tox.ini", Some(tox), Some(&pytest), "`[pytest]`");
        let flake = tox.replace("100", "120");
        assert!(changed("tox.ini", Some(tox), Some(&flake)).is_empty());
    }

    #[test]
    fn whole_files() {
        for path in [
            "pytest.ini",
            "tests/conftest.py",
            "conftest.py",
            "jest.config.js",
            "web/vitest.config.ts",
            "vite.config.mjs",
            ".mocharc.yml",
            "spec/support/jasmine.json",
            ".cargo/config.toml",
            "site/sitecustomize.py",
            "src/sitecustomize/__init__.py",
            "src/sitecustomize.pyc",
            "src/__pycache__/usercustomize.cpython-311.pyc",
            "lib/sitecustomize.cpython-311-x86_64-linux-gnu.so",
            "src/flask_compat-0.1.dist-info/entry_points.txt",
            "src/pkg-1.0.DIST-INFO/entry_points.txt",
            "tests/__pycache__/test_x.cpython-311.pyc",
            "tests/__PYCACHE__/notes.txt",
            "tests/test_x.pyc",
            "tests/test_x.PYO",
            "src/pkg/_speedups.cpython-311-x86_64-linux-gnu.so",
            "tests/test_x.so",
            "tests/test_x.pyd",
            "src/pkg-1.0.Egg-Info/entry_points.txt",
            "src/flask_compat.egg-info/entry_points.txt",
            "pytest.toml",
            "lib/evil.pth",
        ] {
            finds(path, Some("a"), Some("b"), "changed");
            finds(path, None, Some("b"), "added");
            finds(path, Some("a"), None, "removed");
            assert!(changed(path, Some("a"), Some("a")).is_empty());
        }
        for path in [
            "src/config.py",
            "tests/test_conftest.py",
            "jest.configure.md",
            "config.toml",
        ] {
            assert!(changed(path, Some("a"), Some("b")).is_empty(), "{path}");
        }
    }

    #[test]
    fn package_json_runner_keys_and_test_scripts() {
        let p = "package.json";
        let base = r#"{"name": "x", "dependencies": {"a": "1"}, "scripts": {"test": "jest", "build": "tsc"}, "jest": {"testPathIgnorePatterns": []}}"#;
        let ignore = base.replace("[]", r#"["tests/"]"#);
        finds(p, Some(base), Some(&ignore), "`jest`");
        let script = base.replace(r#""test": "jest""#, r#""test": "jest -t none""#);
        finds(p, Some(base), Some(&script), "`scripts.test`");
        let pretest = base.replace(r#""build""#, r#""pretest": "true", "build""#);
        finds(p, Some(base), Some(&pretest), "`scripts.pretest`");
        finds(p, Some(base), Some("{not json"), "cannot be read as JSON");
        for honest in [
            base.replace(r#""a": "1""#, r#""a": "2", "b": "3""#),
            base.replace("tsc", "tsc -p ."),
            base.replace(", ", ",\n  "),
        ] {
            assert!(changed(p, Some(base), Some(&honest)).is_empty(), "{honest}");
        }
        // Deep nesting is refused, not a stack overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        finds(p, Some(base), Some(&deep), "cannot be read as JSON");
    }

    #[test]
    fn cargo_test_targets() {
        let base =
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\n\n[dependencies]\nserde = \"1\"\n";
        let autotests = base.replace("version", "autotests = false\nversion");
        finds("Cargo.toml", Some(base), Some(&autotests), "`[package]`");
        let harness = format!("{base}\n[[test]]\nname = \"cli\"\nharness = false\n");
        finds("Cargo.toml", Some(base), Some(&harness), "`[test]`");
        let lib = format!("{base}\n[lib]\ntest = false\n");
        finds("crates/a/Cargo.toml", Some(base), Some(&lib), "`[lib]`");
        let deps = base.replace("serde = \"1\"", "serde = \"1\"\nrand = \"0.9\"");
        assert!(changed("Cargo.toml", Some(base), Some(&deps)).is_empty());
    }
}
