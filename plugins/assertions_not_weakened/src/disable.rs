//! Tests disabled without deleting them: skip and focus markers, statements
//! that take a test out of its module or rebind an assertion to something
//! else, and the count of tests a file defines. Read from the code only
//! (comments and strings blanked by [`strip`]), token by token.

use crate::count::{Lang, strip};

/// One disabling marker or statement in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// What it is, as the finding names it: `pytest.mark.skip`, `it.only`,
    /// `#[ignore]`, `del TestX`, `assertEqual`.
    pub what: String,
    /// `added`, or `rebound`/`redefined` for an assertion given a new body.
    pub verb: &'static str,
    /// What it does to the tests.
    pub why: &'static str,
    /// 1-based line in the source.
    pub line: u32,
    /// The source line, trimmed: with `what`, how a marker is matched with
    /// one the base already had (so a changed skip condition is new).
    pub text: String,
    /// Whether it disables tests beyond its own file's (focusing one test,
    /// rebinding an assertion): such markers count in any changed source
    /// file, not only in a test file the base already had.
    pub global: bool,
}

/// What a file holds: its markers and the number of tests it defines.
#[derive(Debug, Default)]
pub struct Scan {
    pub markers: Vec<Marker>,
    pub tests: usize,
}

const SKIPS: &str = "skips the test";
const XFAIL: &str = "expects the test to fail, so a failure passes";
const FOCUS: &str = "focuses the run, so the other tests do not run";
const CFG: &str = "compiles the item only under a condition";
const BUILD: &str = "a build constraint: `go test` may not compile the file";
const REMOVES: &str = "removes a test from its module, so it is not collected";
const REBINDS: &str = "an assertion given another body can no longer fail";
const UNCOLLECTS: &str = "turns off the collection of tests";
const NO_RUN: &str = "a `TestMain` that never calls `m.Run()` runs no test of its package";
const PLUGINS: &str =
    "loads pytest plugins (`-p` by another spelling), which can turn every failure into a pass";

#[derive(Debug, Clone, Copy)]
struct Tok<'a> {
    text: &'a str,
    line: u32,
}

fn tokens(code: &str) -> Vec<Tok<'_>> {
    let b = code.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    let mut v = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if word(c) {
            let start = i;
            while i < b.len() && word(b[i]) {
                i += 1;
            }
            v.push(Tok {
                text: &code[start..i],
                line,
            });
        } else {
            let len = code[i..].chars().next().map_or(1, char::len_utf8);
            v.push(Tok {
                text: &code[i..i + len],
                line,
            });
            i += len;
        }
    }
    v
}

fn is_ident(s: &str) -> bool {
    s.bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
}

/// Tokens with helpers to look around one of them.
struct Toks<'a> {
    t: Vec<Tok<'a>>,
}

impl<'a> Toks<'a> {
    fn at(&self, i: isize) -> &'a str {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.t.get(i))
            .map_or("", |t| t.text)
    }
    fn prev(&self, i: usize) -> &'a str {
        self.at(i as isize - 1)
    }
    fn next(&self, i: usize) -> &'a str {
        self.at(i as isize + 1)
    }
    /// Whether the token after `i` is an assignment `=` (not `==`, `=>`,
    /// nor the `=` of `<=`, `>=`, `!=`), or Go's `:=`.
    fn assigned(&self, i: usize) -> bool {
        let (n1, n2) = (self.next(i), self.at(i as isize + 2));
        (n1 == "=" && !matches!(n2, "=" | ">")) || (n1 == ":" && n2 == "=")
    }
    /// The first token index of the dotted chain (`a.b.c`) ending at `i`.
    fn chain_start(&self, i: usize) -> usize {
        let mut k = i;
        while k >= 2 && self.t[k - 1].text == "." && is_ident(self.t[k - 2].text) {
            k -= 2;
        }
        k
    }
    fn chain(&self, i: usize) -> String {
        let k = self.chain_start(i);
        self.t[k..=i].iter().map(|t| t.text).collect()
    }
    /// Whether `i` begins a statement: first on its line, or after `;`.
    fn starts_statement(&self, i: usize) -> bool {
        i == 0 || self.t[i - 1].line < self.t[i].line || self.t[i - 1].text == ";"
    }
}

fn test_like(name: &str) -> bool {
    name.starts_with("test") || name.starts_with("Test")
}

/// Whether `name` reads as an assertion of `lang`'s libraries.
fn assertion_name(lang: Lang, name: &str) -> bool {
    // `assertEqual`, `assert_called`, `failUnless`; not `assertions`.
    let camel = |prefix: &str| {
        name.strip_prefix(prefix).is_some_and(|r| {
            r.is_empty() || r.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
        })
    };
    match lang {
        Lang::Python => camel("assert") || camel("fail"),
        Lang::JavaScript => matches!(name, "expect" | "assert"),
        Lang::Go => matches!(name, "assert" | "require"),
        Lang::Rust => camel("assert") || camel("debug_assert") || camel("prop_assert"),
        Lang::Java => camel("assert"),
    }
}

/// `unittest.TestCase`'s assertions (and their old aliases): a test case
/// defining a method of one of these names overrides it. A helper of
/// another name (`assertValidResponse`) is a new assertion, not a finding.
const UNITTEST_ASSERTIONS: &[&str] = &[
    "assertEqual",
    "assertEquals",
    "assertNotEqual",
    "assertNotEquals",
    "assertTrue",
    "assertFalse",
    "assertIs",
    "assertIsNot",
    "assertIsNone",
    "assertIsNotNone",
    "assertIn",
    "assertNotIn",
    "assertIsInstance",
    "assertNotIsInstance",
    "assertRaises",
    "assertRaisesRegex",
    "assertRaisesRegexp",
    "assertWarns",
    "assertWarnsRegex",
    "assertLogs",
    "assertNoLogs",
    "assertAlmostEqual",
    "assertAlmostEquals",
    "assertNotAlmostEqual",
    "assertGreater",
    "assertGreaterEqual",
    "assertLess",
    "assertLessEqual",
    "assertRegex",
    "assertRegexpMatches",
    "assertNotRegex",
    "assertCountEqual",
    "assertMultiLineEqual",
    "assertSequenceEqual",
    "assertListEqual",
    "assertTupleEqual",
    "assertSetEqual",
    "assertDictEqual",
    "assertDictContainsSubset",
    "assert_",
    "fail",
    "failUnless",
    "failIf",
    "failUnlessEqual",
    "failIfEqual",
    "failUnlessRaises",
    "failUnlessAlmostEqual",
    "failIfAlmostEqual",
];

/// JUnit's and Hamcrest's static assertions: a test class declaring a
/// method of one of these names shadows the static import.
const JUNIT_ASSERTIONS: &[&str] = &[
    "assertEquals",
    "assertNotEquals",
    "assertTrue",
    "assertFalse",
    "assertNull",
    "assertNotNull",
    "assertSame",
    "assertNotSame",
    "assertArrayEquals",
    "assertIterableEquals",
    "assertLinesMatch",
    "assertThrows",
    "assertThrowsExactly",
    "assertDoesNotThrow",
    "assertAll",
    "assertTimeout",
    "assertTimeoutPreemptively",
    "assertInstanceOf",
    "assertThat",
    "fail",
];

/// Whether a source line names an assertion in a string (`"assertEqual"`).
fn names_assertion(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len()).any(|i| {
        matches!(b[i], b'"' | b'\'')
            && ["assert", "fail"].iter().any(|p| {
                b[i + 1..].starts_with(p.as_bytes())
                    && b.get(i + 1 + p.len())
                        .is_none_or(|&c| c.is_ascii_uppercase() || matches!(c, b'_' | b'"' | b'\''))
            })
    })
}

/// Scans `src` as `lang`: every disabling marker and the tests defined.
pub fn scan(lang: Lang, src: &str) -> Scan {
    let code = strip(lang, src);
    let lines: Vec<&str> = src.lines().collect();
    let toks = Toks { t: tokens(&code) };
    let mut out = Scan::default();
    let mut push = |what: String, verb: &'static str, why: &'static str, line: u32, global| {
        let text = lines
            .get(line as usize - 1)
            .map_or(String::new(), |l| l.trim().to_string());
        out.markers.push(Marker {
            what,
            verb,
            why,
            line,
            text,
            global,
        });
    };
    let mut tests = 0;
    // Names a Python file defines with `class` or `def`.
    let defined: Vec<&str> = (0..toks.t.len())
        .filter(|&i| matches!(toks.t[i].text, "class" | "def"))
        .map(|i| toks.next(i))
        .filter(|n| is_ident(n))
        .collect();
    let mut i = 0;
    while i < toks.t.len() {
        let id = toks.t[i].text;
        let line = toks.t[i].line;
        let (prev, next) = (toks.prev(i), toks.next(i));
        if !is_ident(id) {
            // Rust and Java attributes and annotations.
            if lang == Lang::Rust && id == "#" {
                let open = if next == "!" { i + 2 } else { i + 1 };
                if toks.at(open as isize) == "[" {
                    let close = matching(&toks, open);
                    let attr = &toks.t[open + 1..close.min(toks.t.len())];
                    rust_attribute(attr, line, &mut push, &mut tests);
                    i = close + 1;
                    continue;
                }
            }
            if lang == Lang::Java && id == "@" && is_ident(next) {
                // The annotation's simple name, after any package.
                let mut k = i + 1;
                while toks.next(k) == "." && is_ident(toks.at(k as isize + 2)) {
                    k += 2;
                }
                let name = toks.t[k].text;
                if matches!(
                    name,
                    "Test" | "ParameterizedTest" | "RepeatedTest" | "TestFactory" | "TestTemplate"
                ) {
                    tests += 1;
                } else if name == "Ignore"
                    || name.starts_with("Disabled")
                    || name.starts_with("Enabled")
                {
                    push(format!("@{name}"), "added", SKIPS, line, false);
                }
                i = k + 1;
                continue;
            }
            i += 1;
            continue;
        }
        let dotted = prev == ".";
        // An assertion assigned a new value (`X.assertEqual = …`,
        // `expect = …`) or imported under its name (`… as assert_eq`).
        if assertion_name(lang, id)
            && ((toks.assigned(i) && !matches!(prev, "(" | ","))
                || (prev == "as" && lang != Lang::Go))
        {
            // `import * as assert`, `{ strict as assert }`, `expect as expect`.
            let js_alias = prev == "as"
                && (matches!(toks.at(i as isize - 2), "*" | "strict")
                    || toks.at(i as isize - 2) == id);
            let allowed = lang == Lang::JavaScript
                && !dotted
                && (js_alias || (prev != "as" && js_import(&toks, i, id)));
            let go_field = lang == Lang::Go && dotted;
            if !allowed && !go_field {
                push(id.to_string(), "rebound", REBINDS, line, true);
            }
        } else if dotted
            && toks.assigned(i)
            && lang == Lang::JavaScript
            && matches!(toks.t[toks.chain_start(i)].text, "assert" | "expect")
        {
            push(toks.chain(i), "rebound", REBINDS, line, true);
        }
        match lang {
            Lang::Python => {
                python(&toks, i, &defined, &lines, &mut push, &mut tests);
            }
            Lang::JavaScript => {
                let root = toks.t[toks.chain_start(i)].text;
                let test_fn = matches!(
                    root,
                    "it" | "test" | "describe" | "context" | "suite" | "specify" | "bench"
                );
                if dotted && test_fn && i >= 2 {
                    match id {
                        "only" => push(toks.chain(i), "added", FOCUS, line, true),
                        "skip" | "skipIf" | "runIf" | "todo" | "fixme" => {
                            push(toks.chain(i), "added", SKIPS, line, false)
                        }
                        "fails" | "failing" => push(toks.chain(i), "added", XFAIL, line, false),
                        _ => {}
                    }
                } else if dotted
                    && matches!(root, "this" | "t" | "ctx" | "context")
                    && matches!(id, "skip" | "todo")
                    && next == "("
                {
                    push(toks.chain(i), "added", SKIPS, line, false);
                } else if !dotted {
                    match id {
                        "xit" | "xtest" | "xdescribe" | "xcontext" | "xspecify" | "xsuite"
                            if matches!(next, "(" | ".") =>
                        {
                            push(id.to_string(), "added", SKIPS, line, false)
                        }
                        "fit" | "fdescribe" | "ftest" if matches!(next, "(" | ".") => {
                            push(id.to_string(), "added", FOCUS, line, true)
                        }
                        "pending" if next == "(" => {
                            push(id.to_string(), "added", SKIPS, line, false)
                        }
                        // A test's options: `test('x', { skip: true }, …)`.
                        "skip" | "todo" | "only" if next == ":" && matches!(prev, "{" | ",") => {
                            let why = if id == "only" { FOCUS } else { SKIPS };
                            push(format!("{id}:"), "added", why, line, id == "only")
                        }
                        "it" | "test" if next == "(" => tests += 1,
                        "function" if assertion_name(lang, next) => {
                            push(next.to_string(), "redefined", REBINDS, line, false)
                        }
                        _ => {}
                    }
                }
            }
            Lang::Go => {
                if dotted && matches!(id, "Skip" | "Skipf" | "SkipNow") && next == "(" {
                    push(toks.chain(i), "added", SKIPS, line, false);
                }
                if id == "func" && next == "TestMain" && !code.contains(".Run()") {
                    push("TestMain".into(), "added", NO_RUN, line, true);
                }
                if id == "func" {
                    // `func TestX(` or a suite method `func (s *S) TestX(`.
                    let mut k = i + 1;
                    if toks.at(k as isize) == "(" {
                        k = matching(&toks, k) + 1;
                    }
                    let name = toks.at(k as isize);
                    if name.starts_with("Test") && toks.next(k) == "(" {
                        tests += 1;
                    }
                }
            }
            Lang::Java => {
                if id.starts_with("assume") && next == "(" {
                    push(toks.chain(i), "added", SKIPS, line, false);
                }
                if matches!(id, "void" | "fun") && JUNIT_ASSERTIONS.contains(&next) {
                    push(next.to_string(), "redefined", REBINDS, line, false);
                }
            }
            Lang::Rust => {
                if id == "macro_rules"
                    && next == "!"
                    && assertion_name(lang, toks.at(i as isize + 2))
                {
                    let name = toks.at(i as isize + 2);
                    push(format!("{name}!"), "redefined", REBINDS, line, true);
                }
            }
        }
        i += 1;
    }
    if lang == Lang::Go {
        // Build constraints are comments, so they are read from the source.
        for (n, l) in lines.iter().enumerate() {
            let l = l.trim();
            if l.starts_with("//go:build") || l.starts_with("// +build") {
                push(l.to_string(), "added", BUILD, n as u32 + 1, false);
            }
        }
    }
    out.tests = tests;
    out
}

/// The index of the bracket closing the one at `open` (past the last token
/// when none does).
fn matching(toks: &Toks<'_>, open: usize) -> usize {
    let (o, c) = match toks.t[open].text {
        "(" => ("(", ")"),
        "{" => ("{", "}"),
        _ => ("[", "]"),
    };
    let mut depth = 0;
    for k in open..toks.t.len() {
        if toks.t[k].text == o {
            depth += 1;
        } else if toks.t[k].text == c {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    toks.t.len()
}

/// `const assert = require('assert')` or `const expect = chai.expect`: the
/// library bound to its own name, not a replacement.
fn js_import(toks: &Toks<'_>, i: usize, id: &str) -> bool {
    let rhs = i + 2;
    if toks.at(rhs as isize) == "require" || toks.at(rhs as isize) == "await" {
        return true;
    }
    // A dotted chain ending in the same name, and nothing after it.
    let mut k = rhs;
    while is_ident(toks.at(k as isize)) && toks.next(k) == "." {
        k += 2;
    }
    k > rhs
        && toks.at(k as isize) == id
        && (matches!(toks.next(k), ";" | "," | "")
            || toks.t.get(k + 1).is_some_and(|t| t.line > toks.t[k].line))
}

type Push<'p> = dyn FnMut(String, &'static str, &'static str, u32, bool) + 'p;

fn rust_attribute(attr: &[Tok<'_>], line: u32, push: &mut Push<'_>, tests: &mut usize) {
    let texts: Vec<&str> = attr.iter().map(|t| t.text).collect();
    if texts.contains(&"ignore") {
        push("#[ignore]".into(), "added", SKIPS, line, false);
    }
    if texts.first() == Some(&"cfg") && texts != ["cfg", "(", "test", ")"] {
        push("#[cfg(…)]".into(), "added", CFG, line, false);
    }
    // The attribute's path: `test`, `tokio::test`, `rstest`, `test_case`.
    let mut k = 0;
    while texts.get(k + 1) == Some(&":") && texts.get(k + 2) == Some(&":") {
        k += 3;
    }
    if let Some(name) = texts.get(k)
        && matches!(*name, "test" | "rstest" | "test_case" | "quickcheck")
        && matches!(texts.get(k + 1), None | Some(&"("))
    {
        *tests += 1;
    }
}

fn python(
    toks: &Toks<'_>,
    i: usize,
    defined: &[&str],
    lines: &[&str],
    push: &mut Push<'_>,
    tests: &mut usize,
) {
    let id = toks.t[i].text;
    let line = toks.t[i].line;
    let (prev, next) = (toks.prev(i), toks.next(i));
    let dotted = prev == ".";
    let parent = if dotted { toks.at(i as isize - 2) } else { "" };
    match id {
        "skip"
            if (dotted && matches!(parent, "mark" | "unittest" | "pytest"))
                || (!dotted && (prev == "@" || (next == "(" && prev != "def"))) =>
        {
            push(toks.chain(i), "added", SKIPS, line, false)
        }
        "skipif" | "skipIf" | "skipUnless" | "skipTest" | "SkipTest" | "importorskip"
        | "__unittest_skip__"
            if prev != "def" =>
        {
            push(toks.chain(i), "added", SKIPS, line, false)
        }
        "xfail" | "expectedFailure" if prev != "def" => {
            push(toks.chain(i), "added", XFAIL, line, false)
        }
        "__test__" => push(id.into(), "added", UNCOLLECTS, line, false),
        // In any module pytest imports, for the whole session.
        "pytest_plugins" => push(id.into(), "added", PLUGINS, line, true),
        "collect_ignore"
        | "collect_ignore_glob"
        | "pytest_collection_modifyitems"
        | "pytest_ignore_collect"
        | "load_tests" => push(id.into(), "added", UNCOLLECTS, line, false),
        "del" if toks.starts_statement(i) => {
            // Each target: `del TestX, test_y`, `del globals()[…]`.
            let mut k = i + 1;
            let mut first = true;
            while k < toks.t.len() && toks.t[k].line == line && toks.t[k].text != ";" {
                let t = toks.t[k].text;
                if first
                    && (test_like(t)
                        || defined.contains(&t)
                        || matches!(t, "globals" | "locals" | "vars" | "sys"))
                {
                    push(format!("del {t}"), "added", REMOVES, line, false);
                }
                first = t == ",";
                k += 1;
            }
        }
        "delattr" if next == "(" => push(id.into(), "added", REMOVES, line, false),
        // `setattr(unittest.TestCase, "assertEqual", …)`, `monkeypatch.setattr`:
        // the name is a string, so the source line is read.
        "setattr" if next == "(" => {
            let text = lines.get(line as usize - 1).copied().unwrap_or("");
            if names_assertion(text) {
                push("setattr".into(), "added", REBINDS, line, true);
            }
        }
        // A test rebound: `TestX = None`, `TestX.test_y = None`.
        _ if test_like(id) && toks.assigned(i) && !matches!(prev, "(" | ",") => {
            let start = toks.chain_start(i);
            let root = toks.t[start].text;
            if toks.starts_statement(start)
                && (start == i || defined.contains(&root))
                && (defined.contains(&id) || start < i)
            {
                push(toks.chain(i), "rebound", REMOVES, line, false);
            }
        }
        // `def assertEqual(self, …)` in a test case overrides the assertion.
        "def" if UNITTEST_ASSERTIONS.contains(&next) => {
            push(next.into(), "redefined", REBINDS, line, false)
        }
        "def" if next.starts_with("test") => *tests += 1,
        "class" if next.starts_with("Test") => *tests += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whats(lang: Lang, src: &str) -> Vec<String> {
        scan(lang, src)
            .markers
            .into_iter()
            .map(|m| format!("{} {}", m.what, m.verb))
            .collect()
    }

    #[track_caller]
    fn one(lang: Lang, src: &str, what: &str) {
        let found = whats(lang, src);
        assert!(
            found.iter().any(|w| w == what),
            "`{what}` not found in {src:?}: {found:?}"
        );
    }

    #[track_caller]
    fn none(lang: Lang, src: &str) {
        assert_eq!(whats(lang, src), Vec::<String>::new(), "{src:?}");
    }

    #[test]
    fn python_skip_markers() {
        let py = Lang::Python;
        one(
            py,
            "@pytest.mark.skip\ndef test_a(): pass\n",
            "pytest.mark.skip added",
        );
        one(
            py,
            "@pytest.mark.skip(reason='x')\ndef test_a(): pass\n",
            "pytest.mark.skip added",
        );
        one(
            py,
            "@pytest.mark.skipif(sys.platform == 'linux', reason='x')\n",
            "pytest.mark.skipif added",
        );
        one(
            py,
            "@pytest.mark.xfail\ndef test_a(): pass\n",
            "pytest.mark.xfail added",
        );
        one(
            py,
            "from pytest import mark\n@mark.skip\ndef test_a(): pass\n",
            "mark.skip added",
        );
        one(
            py,
            "@unittest.skip('x')\nclass TestA: pass\n",
            "unittest.skip added",
        );
        one(py, "@unittest.skipIf(True, 'x')\n", "unittest.skipIf added");
        one(
            py,
            "@unittest.skipUnless(False, 'x')\n",
            "unittest.skipUnless added",
        );
        one(
            py,
            "@unittest.expectedFailure\n",
            "unittest.expectedFailure added",
        );
        one(
            py,
            "from unittest import skip\n@skip('x')\ndef test_a(): pass\n",
            "skip added",
        );
        one(
            py,
            "def test_a():\n    pytest.skip('x')\n",
            "pytest.skip added",
        );
        one(
            py,
            "def test_a():\n    pytest.xfail('x')\n",
            "pytest.xfail added",
        );
        one(
            py,
            "def test_a(self):\n    self.skipTest('x')\n",
            "self.skipTest added",
        );
        one(
            py,
            "def test_a(self):\n    raise unittest.SkipTest('x')\n",
            "unittest.SkipTest added",
        );
        one(
            py,
            "def test_a(self):\n    raise SkipTest\n",
            "SkipTest added",
        );
        one(
            py,
            "pytestmark = pytest.mark.skip\n",
            "pytest.mark.skip added",
        );
        one(
            py,
            "pytestmark = [pytest.mark.skip(reason='x')]\n",
            "pytest.mark.skip added",
        );
        one(
            py,
            "pytest.importorskip('nope')\n",
            "pytest.importorskip added",
        );
        one(py, "class TestA:\n    __test__ = False\n", "__test__ added");
        one(
            py,
            "pytest_plugins = ['pkg.tools']\n",
            "pytest_plugins added",
        );
        one(
            py,
            "collect_ignore = ['test_a.py']\n",
            "collect_ignore added",
        );
        one(
            py,
            "collect_ignore_glob = ['*']\n",
            "collect_ignore_glob added",
        );
    }

    #[test]
    fn python_removals_and_rebinding() {
        let py = Lang::Python;
        let classes = "class TestA(unittest.TestCase):\n    def test_x(self): pass\n";
        one(py, &format!("{classes}del TestA\n"), "del TestA added");
        one(
            py,
            &format!("{classes}del test_y, TestA\n"),
            "del TestA added",
        );
        one(
            py,
            &format!("{classes}del globals()['TestA']\n"),
            "del globals added",
        );
        one(py, &format!("{classes}TestA = None\n"), "TestA rebound");
        one(
            py,
            &format!("{classes}TestA.test_x = None\n"),
            "TestA.test_x rebound",
        );
        one(
            py,
            &format!("{classes}delattr(TestA, 'test_x')\n"),
            "delattr added",
        );
        one(
            py,
            "unittest.TestCase.assertEqual = lambda *a, **k: None\n",
            "assertEqual rebound",
        );
        one(
            py,
            "TestCase.assertTrue = lambda *a: None\n",
            "assertTrue rebound",
        );
        one(
            py,
            "def setUp(self):\n    self.assertEqual = lambda *a: None\n",
            "assertEqual rebound",
        );
        one(
            py,
            "class TestA(TestCase):\n    assertEqual = lambda *a: None\n",
            "assertEqual rebound",
        );
        one(
            py,
            "class TestA(TestCase):\n    def assertEqual(self, *a): pass\n",
            "assertEqual redefined",
        );
        one(
            py,
            "from helpers import noop as assertEqual\n",
            "assertEqual rebound",
        );
        one(
            py,
            "setattr(unittest.TestCase, 'assertEqual', noop)\n",
            "setattr added",
        );
        one(
            py,
            "monkeypatch.setattr(TestCase, \"assertTrue\", noop)\n",
            "setattr added",
        );
        one(
            py,
            "mock.assert_called_once = lambda: None\n",
            "assert_called_once rebound",
        );
    }

    #[test]
    fn python_honest_code_is_not_a_marker() {
        let py = Lang::Python;
        none(
            py,
            "def test_a(self):\n    self.assertEqual(a, b)\n    assert x == y\n",
        );
        none(
            py,
            "def test_a(self):\n    del self.cache\n    del os.environ['X']\n",
        );
        none(
            py,
            "def test_a(self):\n    self.test_data = [1]\n    f(test_x=1)\n",
        );
        none(py, "x = a if skip_ok else b\nresult = parser.skip(3)\n");
        none(py, "def assert_valid(x):\n    assert x\n");
        none(
            py,
            "def assertValidResponse(self, r):\n    self.assertEqual(r.status, 200)\n",
        );
        none(py, "self.assertions = []\nfailures = 0\n");
        none(
            py,
            "@pytest.mark.parametrize('a', [1])\ndef test_a(a): pass\n",
        );
        // In comments and strings, markers are only words.
        none(
            py,
            "# @pytest.mark.skip\n'''@unittest.skip('x')\ndel TestA'''\nx = \"self.skipTest()\"\n",
        );
        none(py, "s = f\"{x} pytest.skip('y')\"\n");
    }

    #[test]
    fn rust_markers() {
        let rs = Lang::Rust;
        one(rs, "#[test]\n#[ignore]\nfn a() {}\n", "#[ignore] added");
        one(
            rs,
            "#[test]\n#[ignore = \"slow\"]\nfn a() {}\n",
            "#[ignore] added",
        );
        one(
            rs,
            "#[test]\n#[cfg_attr(unix, ignore)]\nfn a() {}\n",
            "#[ignore] added",
        );
        one(rs, "#[cfg(any())]\n#[test]\nfn a() {}\n", "#[cfg(…)] added");
        one(rs, "#![cfg(feature = \"never\")]\n", "#[cfg(…)] added");
        one(
            rs,
            "macro_rules! assert_eq { ($($t:tt)*) => {} }\n",
            "assert_eq! redefined",
        );
        one(rs, "use crate::noop as assert_eq;\n", "assert_eq rebound");
        none(
            rs,
            "#[cfg(test)]\nmod tests {\n    #[test]\n    fn a() { assert!(ignore(1)); }\n}\n",
        );
        none(
            rs,
            "// #[ignore]\nlet s = \"#[ignore]\"; let r = r#\"#[ignore]\"#;\n/* #[ignore] */\n",
        );
        assert_eq!(
            scan(
                rs,
                "#[test]\nfn a() {}\n#[tokio::test]\nasync fn b() {}\n#[cfg(test)]\nmod t {}\n"
            )
            .tests,
            2
        );
    }

    #[test]
    fn javascript_markers() {
        let js = Lang::JavaScript;
        one(js, "it.skip('a', () => {});", "it.skip added");
        one(js, "test.skip('a', () => {});", "test.skip added");
        one(js, "describe.skip('a', () => {});", "describe.skip added");
        one(js, "xit('a', () => {});", "xit added");
        one(js, "xdescribe('a', () => {});", "xdescribe added");
        one(js, "xtest('a', () => {});", "xtest added");
        one(js, "it.todo('a');", "it.todo added");
        one(js, "it.only('a', () => {});", "it.only added");
        one(js, "describe.only('a', () => {});", "describe.only added");
        one(
            js,
            "test.concurrent.skip('a', async () => {});",
            "test.concurrent.skip added",
        );
        one(js, "fit('a', () => {});", "fit added");
        one(
            js,
            "it('a', function () { this.skip(); });",
            "this.skip added",
        );
        one(js, "test('a', { skip: true }, () => {});", "skip: added");
        one(js, "test.failing('a', () => {});", "test.failing added");
        one(js, "expect = () => ({ toBe() {} });", "expect rebound");
        one(js, "global.expect = () => ({});", "expect rebound");
        one(js, "const assert = () => {};", "assert rebound");
        one(js, "assert.equal = () => {};", "assert.equal rebound");
        one(
            js,
            "function expect(x) { return { toBe() {} }; }",
            "expect redefined",
        );
        none(
            js,
            "const assert = require('node:assert');\nconst { expect } = require('chai');\nconst expect2 = 1;\n",
        );
        none(
            js,
            "const expect = chai.expect;\nimport assert from 'assert';\n",
        );
        none(js, "it('a', () => { expect(x.skip).toBe(1); skip(); });");
        none(
            js,
            "// it.skip('a')\nconst s = 'xit(\"a\")'; const t = `it.only(${1})`;\n/* describe.only */",
        );
        assert_eq!(
            scan(
                js,
                "it('a', () => {}); test('b', () => {}); describe('c', () => {});"
            )
            .tests,
            2
        );
    }

    #[test]
    fn go_markers() {
        let go = Lang::Go;
        one(
            go,
            "func TestA(t *testing.T) {\n\tt.Skip(\"x\")\n}\n",
            "t.Skip added",
        );
        one(
            go,
            "func TestA(t *testing.T) {\n\tt.SkipNow()\n}\n",
            "t.SkipNow added",
        );
        one(
            go,
            "func TestA(t *testing.T) {\n\tt.Skipf(\"%d\", 1)\n}\n",
            "t.Skipf added",
        );
        one(
            go,
            "//go:build ignore\n\npackage a\n",
            "//go:build ignore added",
        );
        one(go, "func TestMain(m *testing.M) {}\n", "TestMain added");
        none(go, "func TestMain(m *testing.M) {\n\tos.Exit(m.Run())\n}\n");
        one(go, "assert := fake{}\n", "assert rebound");
        none(
            go,
            "func TestA(t *testing.T) {\n\t// t.Skip()\n\ts := \"t.Skip()\"\n\tassert.Equal(t, 1, 1)\n}\n",
        );
        let s = scan(
            go,
            "func TestA(t *testing.T) {}\nfunc (s *S) TestB() {}\nfunc helper() {}\n",
        );
        assert_eq!(s.tests, 2);
    }

    #[test]
    fn java_markers() {
        let java = Lang::Java;
        one(java, "@Disabled\n@Test\nvoid a() {}\n", "@Disabled added");
        one(
            java,
            "@Ignore(\"x\")\n@Test\npublic void a() {}\n",
            "@Ignore added",
        );
        one(
            java,
            "@org.junit.Ignore\n@Test\npublic void a() {}\n",
            "@Ignore added",
        );
        one(java, "@DisabledOnOs(OS.LINUX)\n", "@DisabledOnOs added");
        one(
            java,
            "@Test void a() { assumeTrue(false); }",
            "assumeTrue added",
        );
        one(
            java,
            "static void assertEquals(Object a, Object b) {}",
            "assertEquals redefined",
        );
        none(
            java,
            "// @Disabled\nString s = \"@Ignore\";\n@Test void a() { assertEquals(1, 1); }\n",
        );
        assert_eq!(
            scan(
                java,
                "@Test void a() {}\n@ParameterizedTest void b() {}\n@Override void c() {}\n"
            )
            .tests,
            2
        );
    }

    #[test]
    fn lines_are_the_source_lines() {
        let src = "x = '''\n\n'''\n# c\n@pytest.mark.skip\ndef test_a(): pass\n";
        let s = scan(Lang::Python, src);
        assert_eq!(s.markers[0].line, 5);
        assert_eq!(s.markers[0].text, "@pytest.mark.skip");
        let js = "const s = `\n${a}\n`;\n/*\n*/\nit.skip('x');\n";
        assert_eq!(scan(Lang::JavaScript, js).markers[0].line, 6);
        let rs = "let s = r#\"\n\"#;\n#[ignore]\n";
        assert_eq!(scan(Lang::Rust, rs).markers[0].line, 3);
    }
}
