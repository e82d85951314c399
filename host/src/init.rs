//! `init`: a first configuration for a repository that has never used
//! agent-ledger. It looks at the files the repository tracks, picks test
//! globs for the languages present and the fixture directories that exist,
//! and writes a commented `agent-ledger.toml` (never over an existing
//! file); with a CI system named, the pull-request gate of `examples/ci/`
//! (`github-pr-gate.yml`, `gitlab-pr-gate.yml`): capture the branch's
//! patch with `capture --git`, `check` it, report and fail on the verdict.

use crate::exit::{Error, Result};
use crate::git::Repo;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A language and the test files its runners collect.
struct Language {
    name: &'static str,
    extensions: &'static [&'static str],
    globs: &'static [&'static str],
}

const LANGUAGES: &[Language] = &[
    Language {
        name: "Python",
        extensions: &["py"],
        globs: &[
            "**/test_*.py",
            "**/*_test.py",
            "**/tests/**/*.py",
            "**/conftest.py",
        ],
    },
    Language {
        name: "Rust",
        extensions: &["rs"],
        globs: &["tests/**", "**/tests/**"],
    },
    Language {
        name: "Go",
        extensions: &["go"],
        globs: &["**/*_test.go"],
    },
    Language {
        name: "JavaScript/TypeScript",
        extensions: &["js", "jsx", "ts", "tsx", "mjs", "cjs"],
        globs: &[
            "**/*.test.{js,jsx,ts,tsx,mjs,cjs}",
            "**/*.spec.{js,jsx,ts,tsx,mjs,cjs}",
            "**/__tests__/**",
        ],
    },
    Language {
        name: "Java/Kotlin",
        extensions: &["java", "kt"],
        globs: &["**/src/test/**"],
    },
    Language {
        name: "Ruby",
        extensions: &["rb"],
        globs: &["spec/**", "test/**"],
    },
];

/// Directory names that hold fixtures, golden files or snapshots.
const FIXTURE_DIRS: &[&str] = &[
    "fixtures",
    "testdata",
    "__snapshots__",
    "snapshots",
    "golden",
    "test_data",
    "test-data",
    "testfiles",
    "__fixtures__",
    "cassettes",
    "goldens",
    "expected",
    "fixture",
    "__fixture__",
];

/// Names that hold test data only below a test directory (`tests/data`,
/// `src/test/resources`); elsewhere they are the program's own.
const TEST_DATA_DIRS: &[&str] = &["data", "resources", "files", "samples"];

/// Directory names of test suites.
const TEST_DIRS: &[&str] = &["test", "tests", "testing", "spec", "__tests__"];

/// What `init` found and wrote.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Initialised {
    pub config: PathBuf,
    pub languages: Vec<String>,
    /// The test runners found, each with its test globs, a suggested test
    /// command and the files that told.
    pub runners: Vec<crate::runners::Runner>,
    /// What could not be found, in plain words.
    pub not_found: Vec<String>,
    pub test_globs: Vec<String>,
    pub fixture_roots: Vec<String>,
    /// The CI file written, if one was asked for.
    pub ci: Option<PathBuf>,
}

/// The CI systems `init --ci` writes a workflow for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Ci {
    Github,
    Gitlab,
}

/// Writes the configuration (and the CI file) for `repo`.
pub fn init(repo: &Repo, ci: Option<Ci>) -> Result<Initialised> {
    let config = repo.root.join("agent-ledger.toml");
    let ci_file = ci.map(|c| match c {
        Ci::Github => repo.root.join(".github/workflows/agent-ledger.yml"),
        Ci::Gitlab => repo.root.join("ci/agent-ledger.gitlab-ci.yml"),
    });
    // A directory on the way that is a symlink (a tracked `.github` or
    // `ci` link) would take the write out of the repository.
    if let Some(path) = &ci_file {
        let rel = path.strip_prefix(&repo.root).unwrap_or(path);
        let mut at = repo.root.clone();
        for part in rel.parent().into_iter().flat_map(Path::components) {
            at.push(part);
            if at
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(Error::Refused(format!(
                    "`{}` is a symlink: init writes the CI file only inside the repository, through real directories",
                    at.display()
                )));
            }
        }
    }
    // Nothing the user has is overwritten: check every target first.
    for path in std::iter::once(&config).chain(ci_file.iter()) {
        if path.symlink_metadata().is_ok() {
            return Err(Error::Exists {
                path: path.clone(),
                hint: "init never overwrites a file; edit it, or move it away first".into(),
            });
        }
    }
    let files = tracked(repo)?;
    let mut languages = Vec::new();
    let mut globs = Vec::new();
    for lang in LANGUAGES {
        let present = files.iter().any(|f| {
            Path::new(f)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| lang.extensions.contains(&e))
        });
        if present {
            languages.push(lang.name.to_string());
            for g in lang.globs {
                if !globs.contains(&g.to_string()) {
                    globs.push(g.to_string());
                }
            }
        }
    }
    // The runners' own configuration, where it can be read, names the
    // tests better than the per-language guesses: those stay for the
    // languages no runner was found for.
    let read = |p: &str| -> Option<String> {
        let path = repo.root.join(p);
        let meta = path.symlink_metadata().ok()?;
        if !meta.is_file() || meta.len() > 1 << 20 {
            return None;
        }
        std::fs::read_to_string(path).ok()
    };
    let model = crate::runners::detect(&files, &read);
    if !model.runners.is_empty() {
        let mut found = model.globs();
        for lang in LANGUAGES {
            let covered = match lang.name {
                "Python" => model
                    .runners
                    .iter()
                    .any(|r| matches!(r.name.as_str(), "pytest" | "unittest" | "django" | "sympy")),
                "Rust" => model.runners.iter().any(|r| r.name == "cargo"),
                "Go" => model.runners.iter().any(|r| r.name == "go test"),
                "JavaScript/TypeScript" => model.runners.iter().any(|r| {
                    matches!(r.name.as_str(), "mocha" | "jest" | "vitest" | "node --test")
                }),
                _ => false,
            };
            if languages.iter().any(|l| l == lang.name) && !covered {
                found.extend(lang.globs.iter().map(|g| g.to_string()));
            }
        }
        globs = found;
    }
    // A glob that matches no tracked file protects nothing, and beside
    // others it would only be a note: it is left out, and said so.
    let mut model = model;
    globs.retain(|g| {
        let matches =
            crate::config::test_glob(g).is_ok_and(|m| files.iter().any(|f| m.is_match(f)));
        if !matches {
            model
                .missing
                .push(format!("test glob `{g}` matches no tracked file: left out"));
        }
        matches
    });
    let roots = fixture_roots(&files);
    let text = render(&languages, &globs, &roots, &model);
    // What is written must be a configuration `check` accepts.
    crate::config::Config::parse(text.as_bytes(), &config)?;
    crate::ledger::write_new(&config, text.as_bytes())?;
    if let (Some(path), Some(ci)) = (&ci_file, ci) {
        let workflow = match ci {
            Ci::Github => include_str!("../ci/github-pr-gate.yml"),
            Ci::Gitlab => include_str!("../ci/gitlab-pr-gate.yml"),
        };
        crate::ledger::write_new(path, workflow.as_bytes())?;
    }
    Ok(Initialised {
        config,
        languages,
        runners: model.runners,
        not_found: model.missing,
        test_globs: globs,
        fixture_roots: roots,
        ci: ci_file,
    })
}

/// The files of HEAD (or, in a repository with no commit yet, the index).
fn tracked(repo: &Repo) -> Result<Vec<String>> {
    let out = crate::git::run(
        repo.command().args(["ls-files", "-z", "--cached"]),
        "ls-files",
    )?;
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// The shallowest directories named like fixture directories that hold
/// tracked files (one under another is covered by it).
fn fixture_roots(files: &[String]) -> Vec<String> {
    let mut dirs = BTreeSet::new();
    for f in files {
        let parts: Vec<&str> = f.split('/').collect();
        for (i, part) in parts.iter().enumerate().take(parts.len().saturating_sub(1)) {
            let under_tests = parts[..i].iter().any(|p| TEST_DIRS.contains(p));
            if FIXTURE_DIRS.contains(part) || (under_tests && TEST_DATA_DIRS.contains(part)) {
                dirs.insert(parts[..=i].join("/"));
                break;
            }
        }
    }
    let all: Vec<String> = dirs.into_iter().collect();
    all.iter()
        .filter(|d| {
            !all.iter()
                .any(|o| o != *d && d.starts_with(&format!("{o}/")))
        })
        .cloned()
        .collect()
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| toml::Value::String(s.clone()).to_string())
        .collect();
    format!("[{}]", quoted.join(", "))
}

fn render(
    languages: &[String],
    globs: &[String],
    roots: &[String],
    model: &crate::runners::Model,
) -> String {
    let langs = if languages.is_empty() {
        "none recognised".to_string()
    } else {
        languages.join(", ")
    };
    let globs_line = if globs.is_empty() {
        "# No test files recognised: the built-in defaults apply. List yours:\n# globs = [\"tests/**\"]\n".to_string()
    } else {
        format!("globs = {}\n", toml_list(globs))
    };
    let roots_line = if roots.is_empty() {
        "# No fixture directory found (none of fixtures, testdata, golden,\n# snapshots... holds a tracked file). If the tests read data files, list\n# their directories instead (the patch may then not change them):\n# roots = [\"tests/fixtures\"]\nnone = \"agent-ledger init found no fixture directory\"\n".to_string()
    } else {
        format!("roots = {}\n", toml_list(roots))
    };
    let mut runners = String::new();
    for r in &model.runners {
        runners.push_str(&format!(
            "#   {} (from {}): {}\n#     test command: {}\n",
            r.name,
            r.from,
            r.globs.join(" "),
            r.command
        ));
    }
    if runners.is_empty() {
        runners.push_str("#   none found\n");
    }
    for m in &model.missing {
        runners.push_str(&format!("#   not found: {m}\n"));
    }
    format!(
        r#"# agent-ledger configuration, written by `agent-ledger init`.
# Languages found: {langs}. Test runners found:
{runners}# Review every line, then commit this file:
# `check` reads it from the base revision, so the patch cannot change it.
schema = 1

# Where records are kept, relative to the repository's top level.
ledger = ".agent-ledger"

# Files the checks read and the patch must not change: hashed into a lock
# from the base revision, compared with the patched tree.
[fixtures]
{roots_line}
# Test files: deleting, renaming away or weakening them is a `reject`.
[tests]
{globs_line}
# Paths a patch may not touch at all (this file is always protected when
# it is the configuration in use).
[protect]
paths = ["agent-ledger.toml", "flakes.toml"]

# Flake freezes (`agent-ledger flake observe`) live here, at most this long.
[flakes]
file = "flakes.toml"
max_days = 30

# Without [[property]] tables the built-in properties run. Add your own:
# [[property]]
# name = "my_rule"
# plugin = "plugins/my_rule.wasm"      # committed to the base revision
# known_bad = "plugins/known-bad/my_rule.diff"
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_roots_are_the_shallowest_named_directories() {
        let files = [
            "tests/fixtures/a.json",
            "tests/fixtures/nested/fixtures/b.json",
            "tests/data/golden.txt",
            "src/test/resources/x.json",
            "data/users.csv",
            "pkg/testdata/c.txt",
            "src/lib.rs",
            "fixtures.py",
        ]
        .map(String::from);
        assert_eq!(
            fixture_roots(&files),
            [
                "pkg/testdata",
                "src/test/resources",
                "tests/data",
                "tests/fixtures"
            ]
        );
    }

    #[test]
    fn the_rendered_configuration_parses() {
        let text = render(
            &["Python".into()],
            &["**/test_*.py".into()],
            &["tests/fixtures".into(), "dir \"quoted\"".into()],
            &crate::runners::Model::default(),
        );
        let c = crate::config::Config::parse(text.as_bytes(), Path::new("x.toml")).unwrap();
        assert_eq!(c.fixtures.roots, ["tests/fixtures", "dir \"quoted\""]);
        let empty = render(&[], &[], &[], &crate::runners::Model::default());
        let c = crate::config::Config::parse(empty.as_bytes(), Path::new("x.toml")).unwrap();
        // No test recognised: the comment promises the built-in defaults.
        assert_eq!(c.tests.globs, crate::config::Tests::default().globs);
        // No fixture directory: `none`, with its reason, never an empty
        // lock that makes every clean branch `fixture_mismatch`.
        assert!(c.fixtures.roots.is_empty());
        assert!(c.fixtures.none.is_some());
    }
}
