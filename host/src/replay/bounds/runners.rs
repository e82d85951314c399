//! The test command's runner files: what in the base tree the command runs
//! or reads (its script, a task runner's file, `-m` modules), which a patch
//! may not change.

use super::*;

/// Programs that run the file named after them (their first word that is
/// not an option).
pub(super) const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "bash", "sh",
    "dash", "zsh", "ksh", "fish", "ruby", "perl", "php", "lua", "Rscript", "julia", "tclsh",
];

/// Tools that read a file of a fixed name in the directory they run in.
pub(super) const TASK_FILES: &[(&str, &[&str])] = &[
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
pub(super) fn inside(dir: &Path, word: &str) -> Option<PathBuf> {
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
pub(super) fn interpreter(name: &str) -> bool {
    INTERPRETERS.iter().any(|i| {
        name.strip_prefix(i)
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

/// Whether `option` of interpreter `name` takes the next word as its
/// argument (`python3 -W ignore x.py`); `-O` or `-I` take none in Python.
pub(super) fn takes_argument(name: &str, option: &str) -> bool {
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
pub(super) const SCRIPT_RUNNING_MODULES: &[&str] =
    &["cProfile", "profile", "coverage", "trace", "pdb", "runpy"];

/// Options after which an interpreter runs code from the command line,
/// not a file (a shell's `-c` is read as a command of its own instead).
pub(super) const INLINE_CODE: &[&str] = &["-c", "-e", "--eval", "-p", "--print"];

/// Programs that run the rest of their words as a command, after their
/// options (and, for some, one word of their own: a duration, a CPU mask).
pub(super) const WRAPPERS: &[(&str, usize)] = &[
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
pub(super) const RUNNERS_OF_RUN: &[&str] =
    &["uv", "poetry", "pipenv", "pdm", "hatch", "rye", "uvx"];

/// The words a wrapper runs (`timeout 600 python3 x.py` runs `python3
/// x.py`), or `None` when `name` wraps nothing.
pub(super) fn unwrapped<'a, 'w>(name: &str, args: &'a [&'w str]) -> Option<&'a [&'w str]> {
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
pub(super) fn ran_by<'a, 'w>(
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
/// could make the report claim anything (a patch changed `run_tests.py` to
/// write passes for tests it left out: `tests/all/test_baseline.rs`,
/// `a_runner_script_the_test_command_names_is_protected`). Counted: the
/// file a segment runs (`./ci/test.sh`, the script after an interpreter,
/// `-m module` for Python), the file a task runner reads (`Makefile` for
/// `make`, `justfile`, `noxfile.py`, `tasks.py`, `Rakefile`), and any other
/// file the command names that is not a test file (`pytest.ini`; test
/// files are judged by the test properties, and a patch may change them).
/// Words are split on white space and shell operators, quotes trimmed;
/// `cd DIR` moves where later words are read from. A symlink counts with
/// its target in the tree.
pub(crate) fn runner_files(command: &str, base: &Path, tests: &[String]) -> Result<Runners> {
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
pub(crate) struct Runners {
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
pub(super) const FOLLOW_DEPTH: usize = 4;

/// The largest file [`Scan`] reads to follow the commands in it.
pub(super) const FOLLOW_CAP: u64 = 256 * 1024;

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
    /// recipes, a script's lines (`make test` and `./ci/test.sh` ran a
    /// runner that was not protected: `host/src/replay/bounds/tests.rs`,
    /// `what_a_makefile_a_script_or_a_package_script_runs_is_the_runner_too`).
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
