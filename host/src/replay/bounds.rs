//! Path bounds, judged as part of `patch_applies`: a patch may not name a
//! path outside the tree (absolute, `..`, `.git`), may not touch a protected
//! path (the configuration, `.gitattributes`, `.gitmodules`, the
//! flake-freeze file, the ledger, plugins and known-bad patches,
//! `[protect].paths`), and may not leave a symlink that
//! resolves out of the tree or into `.git`, through any chain of links.
//!
//! The patched tree is untrusted: it is read only through a cap-std [`Dir`],
//! which no `..` or link can walk out of, and links are followed one by one
//! inside it, never by the kernel.

use crate::config;
use crate::exit::{Error, Result};
use crate::git::{Checkout, Repo};
use crate::record::Finding;
use crate::sandbox::{Change, ChangeKind};
use cap_std::fs::Dir;
use globset::{GlobSet, GlobSetBuilder};
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

/// Programs that run the file named after them (their first word that is
/// not an option).
const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "bash", "sh",
    "dash", "zsh", "ksh", "fish", "ruby", "perl", "php", "lua", "Rscript", "julia", "tclsh",
];

/// Tools that read a file of a fixed name in the directory they run in.
const TASK_FILES: &[(&str, &[&str])] = &[
    ("make", &["GNUmakefile", "makefile", "Makefile"]),
    ("gmake", &["GNUmakefile", "makefile", "Makefile"]),
    ("just", &["justfile", "Justfile", ".justfile"]),
    ("nox", &["noxfile.py"]),
    ("invoke", &["tasks.py"]),
    ("inv", &["tasks.py"]),
    ("rake", &["Rakefile", "rakefile"]),
];

/// `dir/word` made plain (`.` and `..` resolved), or `None` when it leaves
/// the tree or is absolute.
fn inside(dir: &Path, word: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in dir.join(word).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Whether `name` is one of [`INTERPRETERS`], maybe with a version
/// (`python3.11`).
fn interpreter(name: &str) -> bool {
    INTERPRETERS.iter().any(|i| {
        name.strip_prefix(i)
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

/// Whether `option` of interpreter `name` takes the next word as its
/// argument (`python3 -W ignore x.py`); `-O` or `-I` take none in Python.
fn takes_argument(name: &str, option: &str) -> bool {
    let family = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let options: &[&str] = match family {
        "python" | "pypy" => &["-W", "-X", "-Q"],
        "node" | "nodejs" | "deno" | "bun" => &[
            "-r",
            "--require",
            "--import",
            "--loader",
            "-C",
            "--conditions",
        ],
        "perl" => &["-I"],
        "ruby" => &["-I", "-r"],
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "fish" => {
            &["-o", "-O", "+o", "+O", "--rcfile", "--init-file"]
        }
        _ => &[],
    };
    options.contains(&option)
}

/// Python modules that run the script named after them (`python3 -m
/// cProfile x.py`, `python3 -m coverage run x.py`).
const SCRIPT_RUNNING_MODULES: &[&str] =
    &["cProfile", "profile", "coverage", "trace", "pdb", "runpy"];

/// Options after which an interpreter runs code from the command line,
/// not a file (a shell's `-c` is read as a command of its own instead).
const INLINE_CODE: &[&str] = &["-c", "-e", "--eval", "-p", "--print"];

/// Programs that run the rest of their words as a command, after their
/// options (and, for some, one word of their own: a duration, a CPU mask).
const WRAPPERS: &[(&str, usize)] = &[
    ("env", 0),
    ("timeout", 1),
    ("nice", 0),
    ("ionice", 0),
    ("nohup", 0),
    ("stdbuf", 0),
    ("time", 0),
    ("command", 0),
    ("exec", 0),
    ("setsid", 0),
    ("taskset", 1),
    ("xargs", 0),
    ("xvfb-run", 0),
    ("catchsegv", 0),
    ("chronic", 0),
];

/// Tools whose `run` subcommand runs the rest (`uv run pytest`).
const RUNNERS_OF_RUN: &[&str] = &["uv", "poetry", "pipenv", "pdm", "hatch", "rye", "uvx"];

/// The words a wrapper runs (`timeout 600 python3 x.py` runs `python3
/// x.py`), or `None` when `name` wraps nothing.
fn unwrapped<'a, 'w>(name: &str, args: &'a [&'w str]) -> Option<&'a [&'w str]> {
    let skip_own = |own: usize| {
        let mut i = 0;
        let mut left = own;
        while i < args.len() {
            let w = args[i];
            if w.starts_with('-') {
                // `nice -n 5`, `timeout -s KILL 60`, `env -u NAME`.
                if matches!(w, "-n" | "-s" | "-k" | "-u" | "-c" | "-C" | "-p") {
                    i += 1;
                }
            } else if w.contains('=') && name == "env" {
            } else if left > 0 {
                left -= 1;
            } else {
                break;
            }
            i += 1;
        }
        &args[i.min(args.len())..]
    };
    if let Some((_, own)) = WRAPPERS.iter().find(|(w, _)| *w == name) {
        return Some(skip_own(*own));
    }
    if RUNNERS_OF_RUN.contains(&name) {
        let at = args.iter().position(|w| *w == "run")?;
        let rest = &args[at + 1..];
        let start = rest
            .iter()
            .position(|w| !w.starts_with('-'))
            .unwrap_or(rest.len());
        return Some(&rest[start..]);
    }
    None
}

/// What a segment of a test command runs, besides its program: the script
/// after an interpreter (or `-m module`, and the script after a module
/// that runs one), the file a task runner reads; and, for a shell's `-c`
/// (also within combined flags: `-ec`), the words of the command it runs.
fn ran_by<'a, 'w>(
    name: &str,
    args: &'a [&'w str],
    cwd: &Path,
    modules: &mut Vec<(PathBuf, String)>,
) -> (Vec<PathBuf>, Option<&'a [&'w str]>) {
    let mut ran = Vec::new();
    if interpreter(name) {
        let shell = matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh" | "fish");
        let mut i = 0;
        while i < args.len() {
            let w = args[i];
            if shell && w.starts_with('-') && !w.starts_with("--") && w.contains('c') {
                return (ran, Some(&args[i + 1..]));
            }
            if INLINE_CODE.contains(&w) {
                break;
            }
            if w == "-m" {
                let Some(module) = args.get(i + 1) else {
                    break;
                };
                let file = module.replace('.', "/");
                for f in [format!("{file}.py"), format!("{file}/__main__.py")] {
                    ran.extend(inside(cwd, &f));
                }
                if let Some(path) = inside(cwd, &file) {
                    let top = module.split('.').next().unwrap_or(module);
                    modules.push((path, top.to_string()));
                }
                if SCRIPT_RUNNING_MODULES.contains(module) {
                    // Its first word that is neither an option nor
                    // `run` (`coverage run x.py`) is the script it runs.
                    ran.extend(
                        args[i + 2..]
                            .iter()
                            .find(|w| !w.starts_with('-') && **w != "run")
                            .and_then(|w| inside(cwd, w)),
                    );
                }
                break;
            }
            if takes_argument(name, w) {
                i += 2;
                continue;
            }
            if !w.starts_with('-') {
                ran.extend(inside(cwd, w));
                break;
            }
            i += 1;
        }
    }
    if let Some((_, files)) = TASK_FILES.iter().find(|(tool, _)| *tool == name) {
        let mut dir = cwd.to_path_buf();
        let mut rest = args.iter();
        while let Some(w) = rest.next() {
            match *w {
                "-C" | "--directory" => {
                    dir = rest.next().and_then(|d| inside(cwd, d)).unwrap_or_default();
                }
                "-f" | "--file" | "--makefile" | "--justfile" => {
                    ran.extend(rest.next().and_then(|f| inside(cwd, f)));
                }
                _ => {}
            }
        }
        for f in *files {
            ran.extend(inside(&dir, f));
        }
    }
    (ran, None)
}

/// The files of the base tree a test command runs or reads: its runner,
/// which writes the report `tests_pass` judges, so a patch that changes it
/// could make the report claim anything (a fifth review changed
/// `run_tests.py` to write passes for tests it left out). Counted: the
/// file a segment runs (`./ci/test.sh`, the script after an interpreter,
/// `-m module` for Python), the file a task runner reads (`Makefile` for
/// `make`, `justfile`, `noxfile.py`, `tasks.py`, `Rakefile`), and any other
/// file the command names that is not a test file (`pytest.ini`; test
/// files are judged by the test properties, and a patch may change them).
/// Words are split on white space and shell operators, quotes trimmed;
/// `cd DIR` moves where later words are read from. A symlink counts with
/// its target in the tree.
pub(super) fn runner_files(command: &str, base: &Path, tests: &[String]) -> Result<Runners> {
    let mut scan = Scan {
        base,
        real_base: std::fs::canonicalize(base).map_err(|e| Error::read(base, e))?,
        tests: glob_set(tests, "test glob")?,
        out: std::collections::BTreeSet::new(),
        modules: std::collections::BTreeSet::new(),
        module_names: std::collections::BTreeSet::new(),
        followed: std::collections::BTreeSet::new(),
    };
    scan.command(command, &mut PathBuf::new(), 0);
    Ok(Runners {
        files: scan.out.into_iter().collect(),
        modules: scan.modules.into_iter().collect(),
        module_names: scan.module_names.into_iter().collect(),
    })
}

/// What a test command runs from its tree.
#[derive(Debug, Default)]
pub(super) struct Runners {
    /// Files of the base it runs or reads ([`runner_files`]).
    pub files: Vec<String>,
    /// Modules it runs with `python -m` (`pytest`, `pkg/sub`), whether the
    /// base has them or not: a patch that adds a module of that name in the
    /// tree (`pytest.py`, `pytest/`, `pytest.so`, bytecode) would run
    /// instead of the installed one.
    pub modules: Vec<String>,
    /// Their top-level package names (`pytest` for `-m pytest`, `pkg`
    /// for `-m pkg.sub`): one added anywhere in the tree can shadow them.
    pub module_names: Vec<String>,
}

/// How deep [`Scan`] follows files that run commands (a Makefile's recipe
/// that runs a script that runs the runner is three).
const FOLLOW_DEPTH: usize = 4;

/// The largest file [`Scan`] reads to follow the commands in it.
const FOLLOW_CAP: u64 = 256 * 1024;

/// One reading of a test command for [`runner_files`].
struct Scan<'b> {
    base: &'b Path,
    real_base: PathBuf,
    tests: GlobSet,
    out: std::collections::BTreeSet<String>,
    /// Modules run with `-m`, tree-relative.
    modules: std::collections::BTreeSet<String>,
    /// Their top-level package names.
    module_names: std::collections::BTreeSet<String>,
    /// Files whose commands were read already.
    followed: std::collections::BTreeSet<PathBuf>,
}

impl Scan<'_> {
    /// Protects `path` if it is a file of the base: always when the command
    /// runs it (`ran`), else only when it is not a test file. Returns the
    /// files protected (a symlink and its in-tree target).
    fn protect(&mut self, path: &Path, ran: bool) -> Vec<PathBuf> {
        let Ok(meta) = std::fs::symlink_metadata(self.base.join(path)) else {
            return Vec::new();
        };
        if !ran && self.tests.is_match(path) {
            return Vec::new();
        }
        let mut found = Vec::new();
        if meta.file_type().is_symlink() {
            self.out.insert(path.to_string_lossy().into_owned());
            if let Ok(target) = std::fs::canonicalize(self.base.join(path))
                && let Ok(rel) = target.strip_prefix(&self.real_base)
                && target.is_file()
            {
                self.out.insert(rel.to_string_lossy().into_owned());
                found.push(rel.to_path_buf());
            }
        } else if meta.is_file() {
            self.out.insert(path.to_string_lossy().into_owned());
            found.push(path.to_path_buf());
        }
        found
    }

    /// Reads the commands in a file the command runs: a Makefile's
    /// recipes, a script's lines (a fourth review had `make test` and
    /// `./ci/test.sh` run a runner that was not protected).
    fn follow(&mut self, file: &Path, cwd: &Path, depth: usize) {
        if depth >= FOLLOW_DEPTH || !self.followed.insert(file.to_path_buf()) {
            return;
        }
        let full = self.base.join(file);
        let Ok(bytes) = crate::input::read_file(&full, FOLLOW_CAP) else {
            return;
        };
        let text = String::from_utf8_lossy(&bytes);
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let makefile =
            TASK_FILES.iter().any(|(_, files)| files.contains(&name)) || name.ends_with(".mk");
        // Only shell scripts and Makefiles hold commands; a Python runner's
        // lines are code (what it imports is a stated limit).
        let shebang = text.lines().next().unwrap_or("");
        let shell = name.ends_with(".sh")
            || name.ends_with(".bash")
            || (shebang.starts_with("#!")
                && ["sh", "bash", "dash", "zsh", "ksh"]
                    .iter()
                    .any(|sh| shebang.split(['/', ' ']).any(|w| w == *sh)));
        if !makefile && !shell {
            return;
        }
        for line in text.lines() {
            let line = if makefile {
                // Recipe lines start with a tab; `@`, `-`, `+` prefix them.
                match line.strip_prefix('\t') {
                    Some(recipe) => recipe.trim_start_matches(['@', '-', '+']),
                    None => continue,
                }
            } else {
                line
            };
            if line.trim_start().starts_with('#') {
                continue;
            }
            self.command(line, &mut cwd.to_path_buf(), depth + 1);
        }
    }

    /// The commands of a `package.json` script (`npm test`, `npm run X`,
    /// `yarn X`, `pnpm X`), its `pre` and `post` scripts with it.
    fn package_script(&mut self, tool: &str, args: &[&str], cwd: &Path, depth: usize) {
        let script = match args {
            ["test" | "t", ..] => "test",
            ["run" | "run-script", name, ..] => name,
            [name, ..] if tool != "npm" && !name.starts_with('-') => name,
            _ => return,
        };
        let Some(manifest) = inside(cwd, "package.json") else {
            return;
        };
        self.protect(&manifest, true);
        let Ok(bytes) = crate::input::read_file(&self.base.join(&manifest), FOLLOW_CAP) else {
            return;
        };
        let Ok(json) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return;
        };
        for key in [
            format!("pre{script}"),
            script.to_string(),
            format!("post{script}"),
        ] {
            if let Some(cmd) = json["scripts"][key.as_str()].as_str() {
                self.command(cmd, &mut cwd.to_path_buf(), depth + 1);
            }
        }
    }

    /// Reads one command line (`cwd`: where it runs, moved by `cd`).
    fn command(&mut self, command: &str, cwd: &mut PathBuf, depth: usize) {
        if depth > FOLLOW_DEPTH {
            return;
        }
        for segment in command.split(['\n', ';', '&', '|', '(', ')', '`']) {
            let words: Vec<&str> = segment
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
                .filter(|w| !w.is_empty())
                .collect();
            let mut words: &[&str] = &words;
            // Each round reads one program: a wrapper's or a shell's `-c`
            // command is read as a program of its own.
            for _ in 0..8 {
                // Leading `NAME=value` assignments are not words of the
                // program.
                let start = words
                    .iter()
                    .position(|w| !w.contains('=') || w.starts_with('-'))
                    .unwrap_or(words.len());
                let Some((&program, args)) = words[start..].split_first() else {
                    break;
                };
                if program == "cd" {
                    *cwd = args
                        .first()
                        .and_then(|d| inside(cwd, d))
                        .unwrap_or_default();
                    break;
                }
                let name = Path::new(program)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // A bare program name is looked up in `PATH`, not in the
                // tree.
                let mut ran: Vec<PathBuf> = inside(cwd, program)
                    .filter(|_| program.contains('/'))
                    .into_iter()
                    .collect();
                let mut modules = Vec::new();
                let (by, inner) = ran_by(&name, args, cwd, &mut modules);
                for (path, top) in modules {
                    self.modules.insert(path.to_string_lossy().into_owned());
                    self.module_names.insert(top);
                }
                ran.extend(by);
                if matches!(name.as_str(), "npm" | "yarn" | "pnpm") {
                    self.package_script(&name, args, cwd, depth);
                }
                for path in &ran {
                    for file in self.protect(path, true) {
                        self.follow(&file, cwd, depth);
                    }
                }
                for w in args
                    .iter()
                    .filter(|w| !w.starts_with('-') && !w.contains('='))
                {
                    if let Some(path) = inside(cwd, w) {
                        self.protect(&path, false);
                    }
                }
                match inner.or_else(|| unwrapped(&name, args)) {
                    Some(next) => words = next,
                    None => break,
                }
            }
        }
    }
}

/// Every importable form, at any depth, of the top-level package of each
/// module the command runs with `-m`.
fn module_shadows(runners: &Runners) -> Result<GlobSet> {
    let mut patterns = Vec::new();
    for top in &runners.module_names {
        let name = globset::escape(top);
        for form in ["py", "pyc", "pyo", "so", "*.so", "pyd", "*.pyd", "pth"] {
            patterns.push(format!("**/{name}.{form}"));
        }
        patterns.push(format!("**/{name}/__init__.*"));
        patterns.push(format!("**/{name}/__main__.*"));
        patterns.push(format!("**/__pycache__/{name}.*"));
    }
    glob_set(&patterns, "runner module")
}

/// Paths no patch may touch; `runners`: the test command's own files
/// ([`runner_files`]), taken literally, and every form of a module it runs.
pub(super) fn protected(
    loaded: &config::Loaded,
    repo: &Repo,
    ledger_root: &Path,
    runners: &Runners,
) -> Result<GlobSet> {
    let c = &loaded.config;
    let mut patterns = vec![
        config::FILE_NAME.to_string(),
        // Git reads these from the tree: attributes select filters and
        // drivers, and submodules name repositories to fetch.
        "**/.gitattributes".to_string(),
        ".gitmodules".to_string(),
        c.flakes.file.clone(),
        c.ledger.clone(),
    ];
    patterns.extend(c.protect.paths.iter().cloned());
    patterns.extend(runners.files.iter().map(|r| globset::escape(r)));
    for m in &runners.modules {
        let (dir, name) = m.rsplit_once('/').map_or(("", m.as_str()), |(d, n)| (d, n));
        let dir = if dir.is_empty() {
            String::new()
        } else {
            format!("{}/", globset::escape(dir))
        };
        let name = globset::escape(name);
        // What Python imports for a module name: source, bytecode, an
        // extension module, a package (not `pytest.ini`, configuration).
        for form in ["py", "pyc", "pyo", "so", "*.so", "pyd", "*.pyd"] {
            patterns.push(format!("{dir}{name}.{form}"));
        }
        patterns.push(format!("{dir}{name}/**"));
        patterns.push(format!("{dir}__pycache__/{name}.*"));
    }
    if let Some(rel) = crate::paths::relative_to(&repo.root, ledger_root)
        && !rel.as_os_str().is_empty()
    {
        patterns.push(rel.to_string_lossy().replace('\\', "/"));
    }
    for p in &c.properties {
        if !p.plugin.starts_with("builtin:") && !Path::new(&p.plugin).is_absolute() {
            patterns.push(p.plugin.clone());
        }
        patterns.extend(
            p.known_bad
                .iter()
                .filter(|k| !Path::new(k).is_absolute())
                .cloned(),
        );
    }
    glob_set(&patterns, "protected path")
}

fn glob_set(patterns: &[String], what: &str) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim_end_matches('/');
        let glob = |s: &str| {
            globset::GlobBuilder::new(s)
                .literal_separator(true)
                .build()
                .map_err(|e| Error::Usage(format!("invalid {what} pattern `{s}`: {e}")))
        };
        b.add(glob(p)?);
        // A plain directory name protects everything under it.
        b.add(glob(&format!("{p}/**"))?);
    }
    b.build()
        .map_err(|e| Error::Usage(format!("invalid {what} patterns: {e}")))
}

/// Header paths that leave the tree or touch protected paths.
/// The most components a path the patch writes may have. Every walk of a
/// trial tree (copies, the lock scan, the symlink bounds, removal) holds a
/// descriptor or more per level, so a patch of 1500 nested directories
/// made `check` fail with "too many open files" instead of judging it.
pub const MAX_DEPTH: usize = 100;

pub(super) fn before_apply(patch: &[u8], strip: u32, protected: &GlobSet) -> Vec<Finding> {
    let mut findings = Vec::new();
    for raw in crate::diff::header_paths(patch, strip) {
        let path = String::from_utf8_lossy(&raw).into_owned();
        let depth = raw.split(|&b| b == b'/').count();
        if escapes(&raw) {
            findings.push(finding(
                &path,
                "path escapes the repository (absolute, `..` or `.git`)",
            ));
        } else if depth > MAX_DEPTH {
            findings.push(finding(
                &path,
                &format!(
                    "path is {depth} components deep, past the {MAX_DEPTH} a trial tree may have (every walk of the tree holds a descriptor per level)"
                ),
            ));
        } else if std::str::from_utf8(&raw).is_err() {
            // Plugins see paths as text (WIT strings): a file of this name
            // would reach them under another name, so no property could
            // read what the patch does to it (a test weakened under a
            // Latin-1 name passed).
            findings.push(finding(
                &path,
                "path is not UTF-8: properties read paths as text, so what the patch does to this file could not be judged",
            ));
        } else if protected.is_match(&path) {
            findings.push(finding(&path, "patch touches a protected path"));
        }
    }
    findings
}

/// After applying: protected paths as git sees them, and every symlink in
/// the patched tree, judged by where it finally points. A link the trusted
/// base already has, ending at the same place there, is the base's own and
/// not the patch's doing (a patch can still redirect it, and is then named).
pub(super) fn after_apply(
    co: &Checkout,
    base: &Checkout,
    changes: &[Change],
    protected: &GlobSet,
    runners: &Runners,
) -> Result<Vec<Finding>> {
    let mut findings = Vec::new();
    for c in changes {
        for p in std::iter::once(&c.path).chain(c.old_path.iter()) {
            if protected.is_match(p) {
                findings.push(finding(p, "patch touches a protected path"));
            }
        }
    }
    // A module of a name the command runs with `-m`, added anywhere: a
    // directory on `sys.path` before site-packages (`PYTHONPATH=src`, an
    // editable install) would run it instead of the installed runner.
    // Changing one the base has is the code under test's business.
    let shadows = module_shadows(runners)?;
    for c in changes.iter().filter(|c| {
        matches!(
            c.kind,
            ChangeKind::Added | ChangeKind::Renamed | ChangeKind::Copied | ChangeKind::TypeChanged
        )
    }) {
        if shadows.is_match(&c.path) {
            findings.push(finding(
                &c.path,
                "patch adds a module named like the one the test command runs with `-m`: imported from the tree, it would run instead of the runner",
            ));
        }
    }
    let patched = open_tree(&co.tree)?;
    let mut links = Vec::new();
    symlinks(&patched, &co.tree, PathBuf::new(), &mut links)?;
    if !links.is_empty() {
        let base_dir = open_tree(&base.tree)?;
        for link in links {
            let end = resolve(&patched, &link);
            if end == Resolution::Inside || resolve(&base_dir, &link) == end {
                continue;
            }
            let target = patched
                .read_link_contents(&link)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            findings.push(finding(
                &link.to_string_lossy(),
                &format!("symlink to `{target}` {}", end.describe()),
            ));
        }
    }
    findings.dedup();
    Ok(findings)
}

fn open_tree(tree: &Path) -> Result<Dir> {
    Dir::open_ambient_dir(tree, cap_std::ambient_authority()).map_err(|e| Error::read(tree, e))
}

/// Every symlink under `dir` (at `rel` in the tree at `tree`), found without
/// following any: a linked directory is judged as a link, never walked.
fn symlinks(dir: &Dir, tree: &Path, rel: PathBuf, out: &mut Vec<PathBuf>) -> Result<()> {
    let at = tree.join(&rel);
    for entry in dir.entries().map_err(|e| Error::read(&at, e))? {
        let entry = entry.map_err(|e| Error::read(&at, e))?;
        let path = rel.join(entry.file_name());
        let ft = entry
            .file_type()
            .map_err(|e| Error::read(&tree.join(&path), e))?;
        if ft.is_symlink() {
            out.push(path);
        } else if ft.is_dir() {
            let sub = entry
                .open_dir()
                .map_err(|e| Error::read(&tree.join(&path), e))?;
            symlinks(&sub, tree, path, out)?;
        }
    }
    Ok(())
}

/// Links followed before a chain counts as cyclic (Linux's own limit).
const MAX_HOPS: usize = 40;

/// Where a path in the tree finally leads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolution {
    Inside,
    /// Out of the tree; the path from the point it left (`/...` or `../...`).
    Outside(String),
    /// Through the repository's metadata; the path from the tree's root.
    IntoGit(String),
    /// More than [`MAX_HOPS`] links: a cycle, or a chain too long to judge.
    TooDeep,
    /// The tree refused a look-up (the error, as text).
    Unreadable(String),
}

impl Resolution {
    fn describe(&self) -> String {
        match self {
            Resolution::Inside => "stays in the repository".into(),
            Resolution::Outside(to) => format!("resolves outside the repository (`{to}`)"),
            Resolution::IntoGit(to) => format!("resolves into `.git` (`{to}`)"),
            Resolution::TooDeep => {
                format!("is part of a cycle or a chain of more than {MAX_HOPS} links")
            }
            Resolution::Unreadable(e) => format!("cannot be resolved in the tree: {e}"),
        }
    }
}

/// One step of a path still to resolve.
enum Part {
    Root,
    Up,
    Name(OsString),
}

fn parts(path: &Path) -> impl DoubleEndedIterator<Item = Part> + '_ {
    path.components().filter_map(|c| match c {
        Component::RootDir | Component::Prefix(_) => Some(Part::Root),
        Component::ParentDir => Some(Part::Up),
        Component::Normal(n) => Some(Part::Name(n.to_owned())),
        Component::CurDir => None,
    })
}

fn render(lead: &[&OsStr], rest: &VecDeque<Part>) -> String {
    let mut out: Vec<String> = lead.iter().map(|s| s.to_string_lossy().into()).collect();
    for p in rest {
        out.push(match p {
            Part::Root => String::new(),
            Part::Up => "..".into(),
            Part::Name(n) => n.to_string_lossy().into(),
        });
    }
    out.join("/")
}

/// Resolves `path` (relative to the tree `root`) as the kernel would,
/// following each link in the tree as it is met, with every look-up made
/// through `root` so that nothing outside the tree is ever read. Below a
/// missing component or a file, resolution goes on lexically (`..` pops), so
/// a dangling link is judged by where it would lead.
fn resolve(root: &Dir, path: &Path) -> Resolution {
    let mut at: Vec<OsString> = Vec::new();
    let mut todo: VecDeque<Part> = parts(path).collect();
    let mut hops = 0;
    // The depth of the first component that is not a directory, if any:
    // nothing at or below it can be looked up.
    let mut lexical_from: Option<usize> = None;
    while let Some(part) = todo.pop_front() {
        match part {
            Part::Root => return Resolution::Outside(format!("/{}", render(&[], &todo))),
            Part::Up => {
                if at.pop().is_none() {
                    return Resolution::Outside(render(&[OsStr::new("..")], &todo));
                }
                if lexical_from.is_some_and(|d| at.len() <= d) {
                    lexical_from = None;
                }
            }
            Part::Name(name) => {
                let is_git = name.eq_ignore_ascii_case(".git");
                at.push(name);
                if is_git {
                    let lead: Vec<&OsStr> = at.iter().map(OsString::as_os_str).collect();
                    return Resolution::IntoGit(render(&lead, &todo));
                }
                if lexical_from.is_some() {
                    continue;
                }
                let here: PathBuf = at.iter().collect();
                match root.symlink_metadata(&here) {
                    Ok(m) if m.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_HOPS {
                            return Resolution::TooDeep;
                        }
                        let target = match root.read_link_contents(&here) {
                            Ok(t) => t,
                            Err(e) => return Resolution::Unreadable(e.to_string()),
                        };
                        at.pop();
                        for p in parts(&target).rev() {
                            todo.push_front(p);
                        }
                    }
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => lexical_from = Some(at.len() - 1),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                        ) =>
                    {
                        lexical_from = Some(at.len() - 1)
                    }
                    Err(e) => return Resolution::Unreadable(e.to_string()),
                }
            }
        }
    }
    Resolution::Inside
}

fn finding(path: &str, message: &str) -> Finding {
    Finding {
        path: path.to_string(),
        line: None,
        message: message.to_string(),
        frozen: false,
    }
}

/// An absolute path, a `..` component, or a `.git` component.
fn escapes(path: &[u8]) -> bool {
    path.starts_with(b"/")
        || path
            .split(|&b| b == b'/')
            .any(|c| c == b".." || c.eq_ignore_ascii_case(b".git"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_a_test_command_runs_are_its_runner_unless_they_are_tests() {
        let base = tempfile::tempdir().unwrap();
        for f in [
            "run_tests.py",
            "pytest.ini",
            "scripts/t.sh",
            "scripts/Makefile",
            "tests/test_x.py",
            "tests/runner.py",
            "make",
            "Makefile",
        ] {
            let p = base.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let globs = ["tests/**".to_string()];
        let runners = |cmd: &str| runner_files(cmd, base.path(), &globs).unwrap().files;
        assert_eq!(runners("python3 run_tests.py"), ["run_tests.py"]);
        assert_eq!(runners("pytest -c 'pytest.ini' tests/"), ["pytest.ini"]);
        assert_eq!(runners("pytest tests/test_x.py"), Vec::<String>::new());
        assert_eq!(
            runners("FOO=1 ./scripts/t.sh&&make"),
            ["Makefile", "scripts/t.sh"]
        );
        assert_eq!(
            runners("sh ../run_tests.py /tmp/run_tests.py --x=run_tests.py"),
            Vec::<String>::new()
        );
        // Round 2 of the fifth review: each of these left the runner open.
        assert_eq!(runners("python3 -m run_tests"), ["run_tests.py"]);
        assert_eq!(
            runners("python3.11 -u tests/runner.py"),
            ["tests/runner.py"]
        );
        assert_eq!(runners("cd scripts && sh t.sh"), ["scripts/t.sh"]);
        assert_eq!(runners("make -C scripts test"), ["scripts/Makefile"]);
        std::os::unix::fs::symlink("scripts/t.sh", base.path().join("run.sh")).unwrap();
        assert_eq!(runners("bash run.sh"), ["run.sh", "scripts/t.sh"]);
        // Round 3: wrappers, a shell's `-c`, interpreter options that take
        // an argument.
        for cmd in [
            "timeout 600 python3 tests/runner.py",
            "env PYTHONDONTWRITEBYTECODE=1 python3 tests/runner.py",
            "bash -c 'python3 tests/runner.py'",
            "nice -n 5 python3 tests/runner.py",
            "python3 -W ignore tests/runner.py",
            "python3 -X dev tests/runner.py",
            "uv run --frozen python tests/runner.py",
            "timeout -s KILL 60 nice bash -c \"cd tests && python3 runner.py\"",
        ] {
            assert_eq!(runners(cmd), ["tests/runner.py"], "{cmd}");
        }
        assert_eq!(
            runners("python3 -c 'import x' tests/test_x.py"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn what_a_makefile_a_script_or_a_package_script_runs_is_the_runner_too() {
        // Round 4 of the fifth review: each of these ran a runner under
        // the test globs that no rule named.
        let base = tempfile::tempdir().unwrap();
        let file = |rel: &str, text: &str| {
            let p = base.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        file("tests/runner.py", "import os\nopen('README.md')\n");
        file("README.md", "");
        file("Makefile", "test:\n\t@python3 tests/runner.py\n");
        file(
            "ci/test.sh",
            "#!/bin/sh\nset -e\nexec python3 tests/runner.py\n",
        );
        file(
            "package.json",
            r#"{"scripts": {"test": "python3 tests/runner.py"}}"#,
        );
        let globs = ["tests/**".to_string()];
        let runners = |cmd: &str| runner_files(cmd, base.path(), &globs).unwrap().files;
        assert_eq!(runners("make test"), ["Makefile", "tests/runner.py"]);
        assert_eq!(runners("./ci/test.sh"), ["ci/test.sh", "tests/runner.py"]);
        assert_eq!(runners("npm test"), ["package.json", "tests/runner.py"]);
        for cmd in [
            "python3 -O tests/runner.py",
            "python3 -I tests/runner.py",
            "bash -ec 'python3 tests/runner.py'",
            "python3 -m cProfile tests/runner.py",
            "python3 -m coverage run tests/runner.py",
        ] {
            assert_eq!(runners(cmd), ["tests/runner.py"], "{cmd}");
        }
    }

    /// A tree of links, `(path, target)`, beside a file `f` and a dir `d`.
    fn tree(links: &[(&str, &str)]) -> (tempfile::TempDir, Dir) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("f"), "").unwrap();
        for (path, target) in links {
            let at = dir.path().join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target, at).unwrap();
        }
        let root = open_tree(dir.path()).unwrap();
        (dir, root)
    }

    fn outside(to: &str) -> Resolution {
        Resolution::Outside(to.into())
    }

    #[test]
    fn a_link_is_resolved_through_the_links_it_meets() {
        let (_dir, root) = tree(&[
            ("a", ".."),
            ("b", "a/a/a/../../../etc/passwd"),
            ("d/up", ".."),
            ("d/b", "up/d/up/../../../etc/passwd"),
            ("d/in", "up/d/up/f"),
            ("dot", "."),
            ("c", "dot/dot/dot/../../../x"),
            ("abs", "/etc"),
            ("via-abs", "abs/passwd"),
        ]);
        let r = |p: &str| resolve(&root, Path::new(p));
        assert_eq!(r("a"), outside(".."));
        assert_eq!(r("b"), outside("../a/a/../../../etc/passwd"));
        assert_eq!(r("d/b"), outside("../../../etc/passwd"));
        assert_eq!(r("d/in"), Resolution::Inside);
        assert_eq!(r("c"), outside("../../../x"));
        assert_eq!(r("abs"), outside("/etc"));
        assert_eq!(r("via-abs"), outside("/etc/passwd"));
    }

    #[test]
    fn a_link_into_git_or_in_a_cycle_is_judged() {
        let (_dir, root) = tree(&[
            ("g", ".git/config"),
            ("d/g", "../d/../.GIT"),
            ("x", "y"),
            ("y", "x"),
            ("self", "self"),
            ("deep", "d/../self"),
        ]);
        let r = |p: &str| resolve(&root, Path::new(p));
        assert_eq!(r("g"), Resolution::IntoGit(".git/config".into()));
        assert_eq!(r("d/g"), Resolution::IntoGit(".GIT".into()));
        for p in ["x", "y", "self", "deep"] {
            assert_eq!(r(p), Resolution::TooDeep, "{p}");
        }
    }

    #[test]
    fn a_dangling_link_is_judged_by_where_it_would_lead() {
        let (_dir, root) = tree(&[
            ("in", "missing/x"),
            ("out", "missing/../../x"),
            ("file-then-up", "f/../../x"),
            ("back", "missing/../d/../../x"),
        ]);
        let r = |p: &str| resolve(&root, Path::new(p));
        assert_eq!(r("in"), Resolution::Inside);
        assert_eq!(r("out"), outside("../x"));
        assert_eq!(r("file-then-up"), outside("../x"));
        assert_eq!(r("back"), outside("../x"));
    }

    #[test]
    fn escaping_paths() {
        assert!(escapes(b"/etc/passwd"));
        assert!(escapes(b"a/../../b"));
        assert!(escapes(b".git/hooks/pre-commit"));
        assert!(escapes(b"sub/.GIT/config"));
        assert!(!escapes(b"src/..foo/x"));
    }
}
