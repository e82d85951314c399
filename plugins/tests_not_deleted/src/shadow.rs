//! Modules a patch may not add where Python looks before the standard
//! library and the test runner: `python -m pytest` puts the working
//! directory first on `sys.path`, `python tests/runtests.py` the script's
//! directory, so a `_pytest/` or a `tests/unittest.py` the patch adds runs
//! instead of the runner. Any directory without an `__init__.py` can be
//! such a path entry; a module or regular package added there under a name
//! of the standard library (Python 3.11's `sys.stdlib_module_names`, and
//! later versions' additions) or of pytest's own distributions shadows it.

/// Python 3.11's `sys.stdlib_module_names`, and names later versions add.
/// Left out: `test` (the regression-test package, a common directory name)
/// and `__main__`.
const STDLIB: &[&str] = &[
    "__future__",
    "_abc",
    "_aix_support",
    "_ast",
    "_asyncio",
    "_bisect",
    "_blake2",
    "_bootsubprocess",
    "_bz2",
    "_codecs",
    "_codecs_cn",
    "_codecs_hk",
    "_codecs_iso2022",
    "_codecs_jp",
    "_codecs_kr",
    "_codecs_tw",
    "_collections",
    "_collections_abc",
    "_compat_pickle",
    "_compression",
    "_contextvars",
    "_crypt",
    "_csv",
    "_ctypes",
    "_curses",
    "_curses_panel",
    "_datetime",
    "_dbm",
    "_decimal",
    "_elementtree",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "_functools",
    "_gdbm",
    "_hashlib",
    "_heapq",
    "_imp",
    "_io",
    "_json",
    "_locale",
    "_lsprof",
    "_lzma",
    "_markupbase",
    "_md5",
    "_msi",
    "_multibytecodec",
    "_multiprocessing",
    "_opcode",
    "_operator",
    "_osx_support",
    "_overlapped",
    "_pickle",
    "_posixshmem",
    "_posixsubprocess",
    "_py_abc",
    "_pydecimal",
    "_pyio",
    "_queue",
    "_random",
    "_scproxy",
    "_sha1",
    "_sha256",
    "_sha3",
    "_sha512",
    "_signal",
    "_sitebuiltins",
    "_socket",
    "_sqlite3",
    "_sre",
    "_ssl",
    "_stat",
    "_statistics",
    "_string",
    "_strptime",
    "_struct",
    "_symtable",
    "_thread",
    "_threading_local",
    "_tkinter",
    "_tokenize",
    "_tracemalloc",
    "_typing",
    "_uuid",
    "_warnings",
    "_weakref",
    "_weakrefset",
    "_winapi",
    "_zoneinfo",
    "abc",
    "aifc",
    "antigravity",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
    // Added by 3.12 to 3.14.
    "_colorize",
    "_interpchannels",
    "_interpqueues",
    "_interpreters",
    "_pyrepl",
    "_suggestions",
    "_sysconfig",
    "annotationlib",
    "compression",
];

/// pytest and what it imports at startup, and the other runners' packages.
const RUNNERS: &[&str] = &[
    "pytest",
    "_pytest",
    "py",
    "pluggy",
    "iniconfig",
    "exceptiongroup",
    "tomli",
    "packaging",
    "nose",
    "nose2",
    "coverage",
    "xdist",
    "execnet",
    "hypothesis",
    "_hypothesis_pytestplugin",
];

/// Whether a module of this name shadows one Python or its runner needs.
fn protected(name: &str) -> bool {
    name != "test"
        && name != "__main__"
        && (STDLIB.contains(&name) || RUNNERS.contains(&name) || name.starts_with("pytest_"))
}

/// The module a file makes importable from its directory: `X` for `X.py`,
/// bytecode, an extension module (`X.so`, `X.cpython-311-….so`, `X.pyd`),
/// or a regular package's `X/__init__.*`. Returns (directory, module).
fn module_of(path: &str) -> Option<(&str, &str)> {
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    if name.starts_with("__init__.") {
        let (parent, package) = dir.rsplit_once('/').unwrap_or(("", dir));
        return (!package.is_empty()).then_some((parent, package));
    }
    // A name with no suffix: a directory's or a symlink's (`pytest ->
    // evil/`, a package by another path).
    let Some((module, ext)) = name.split_once('.') else {
        return (!name.is_empty()).then_some((dir, name));
    };
    let ext = ext.to_ascii_lowercase();
    let importable = matches!(ext.as_str(), "py" | "pyc" | "pyo" | "pyw" | "so" | "pyd")
        || ((ext.ends_with(".so") || ext.ends_with(".pyd")) && !ext.contains('/'));
    (importable && !module.is_empty()).then_some((dir, module))
}

/// Why an added `path` shadows the standard library or the runner, when
/// it does; `has_init(dir)` tells whether `dir` held an `__init__.py` at
/// the base (then it is a package the base already had, whose modules are
/// its own). An `__init__.py` the patch adds proves nothing (Python puts
/// the working directory or a script's directory first either way), and
/// the top of the tree is never exempt.
pub fn shadows(path: &str, has_init: impl Fn(&str) -> bool) -> Option<String> {
    let (dir, module) = module_of(path)?;
    if !protected(module) || (!dir.is_empty() && has_init(dir)) {
        return None;
    }
    let shown = if dir.is_empty() {
        "the tree's top"
    } else {
        dir
    };
    Some(format!(
        "adds a module `{module}` in `{shown}`, which can be first on \
         Python's path (`python -m …` puts the working directory there, a script its own \
         directory): it would be imported instead of the standard library's or the test \
         runner's `{module}`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_and_stdlib_modules_added_on_a_path_entry_shadow() {
        let no_init = |_: &str| false;
        for path in [
            "_pytest/__init__.py",
            "_pytest/__init__.pyc",
            "pluggy.py",
            "tests/unittest.py",
            "tests/json/__init__.py",
            "pytest_cov.py",
            "tests/unittest.cpython-311-x86_64-linux-gnu.so",
            "py.py",
        ] {
            assert!(shadows(path, no_init).is_some(), "{path}");
        }
    }

    #[test]
    fn submodules_of_a_package_and_other_names_do_not_shadow() {
        let init = |d: &str| d == "pkg/serializers" || d == "pkg";
        assert!(shadows("pkg/serializers/json.py", init).is_none());
        assert!(shadows("pkg/json/__init__.py", init).is_none());
        // The top of the tree is a path entry whatever it holds.
        assert!(shadows("pytest.py", init).is_some() || shadows("pytest.py", |_| true).is_some());
        assert!(shadows("pytest.py", |_| true).is_some());
        // A link or a directory named like the runner's package.
        assert!(shadows("pytest", |_| false).is_some());
        assert!(shadows("tests/unittest", |_| false).is_some());
        let no_init = |_: &str| false;
        for path in [
            "tests/test_json.py",
            "test/__init__.py",
            "src/app.py",
            "json.txt",
            "docs/json.md",
        ] {
            assert!(shadows(path, no_init).is_none(), "{path}");
        }
    }
}
