//! Counting assertions per language, after blanking comments and strings.

pub use agent_ledger_guest::Lang;

/// Returns `src` with comments removed and string/char literal contents
/// blanked (quotes kept), so only code remains. Every line break is kept,
/// so a line of the result is the same line of `src`.
pub fn strip(lang: Lang, src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let starts = |i: usize, s: &[u8]| b[i..].starts_with(s);
    while i < b.len() {
        let c = b[i];
        let start = i;
        if lang == Lang::Python {
            if c == b'#' {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            if c == b'"' || c == b'\'' {
                i = skip_python_string(b, i, 0);
                blank(&mut out, &b[start..i], b'"');
                continue;
            }
        } else {
            if starts(i, b"//") {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            if starts(i, b"/*") {
                // Rust block comments nest; the others do not.
                let mut depth = 0;
                while i < b.len() {
                    if starts(i, b"/*") {
                        depth += 1;
                        i += 2;
                        if lang != Lang::Rust && depth > 1 {
                            depth = 1;
                        }
                    } else if starts(i, b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.extend(if b[i] == b'\n' { Some(b'\n') } else { None });
                        i += 1;
                    }
                }
                out.push(b' ');
                continue;
            }
            if lang == Lang::Rust
                && c == b'r'
                && (starts(i, b"r\"") || starts(i, b"r#"))
                && raw_prefix_start(b, i)
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while j < b.len() && b[j] == b'#' {
                    hashes += 1;
                    j += 1;
                }
                if j < b.len() && b[j] == b'"' {
                    let mut close = vec![b'"'];
                    close.extend(std::iter::repeat_n(b'#', hashes));
                    j += 1;
                    while j < b.len() && !b[j..].starts_with(&close) {
                        j += 1;
                    }
                    i = (j + close.len()).min(b.len());
                    blank(&mut out, &b[start..i], b'"');
                    continue;
                }
            }
            if lang == Lang::Java && starts(i, b"\"\"\"") {
                // A Java text block or a Kotlin raw string. Escapes are
                // honoured (Java's rule): where Kotlin's differs, more is
                // read as string, so fewer assertions count, never more.
                i = skip_quoted(b, i, 3, c, true);
                blank(&mut out, &b[start..i], b'"');
                continue;
            }
            if lang == Lang::JavaScript && c == b'`' {
                i = skip_template(b, i, 0);
                blank(&mut out, &b[start..i], b'"');
                continue;
            }
            if lang == Lang::JavaScript && c == b'/' && regex_can_start(b, i) {
                i = skip_regex(b, i);
                out.extend_from_slice(b"//");
                continue;
            }
            if c == b'"' || (c == b'`' && lang == Lang::Go) {
                i = skip_quoted(b, i, 1, c, !(c == b'`' && lang == Lang::Go));
                blank(&mut out, &b[start..i], b'"');
                continue;
            }
            if c == b'\'' {
                if lang == Lang::Rust {
                    // A char literal ('x', '\n', '\u{1F600}'), not a lifetime.
                    let end = if b.get(i + 1) == Some(&b'\\') {
                        b[i + 2..]
                            .iter()
                            .position(|&x| x == b'\'')
                            .map(|p| i + 2 + p)
                    } else {
                        let ch_len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                        (b.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 1 + ch_len)
                    };
                    if let Some(end) = end {
                        i = end + 1;
                        blank(&mut out, &b[start..i], b'\'');
                        continue;
                    }
                } else {
                    i = skip_quoted(b, i, 1, c, true);
                    blank(&mut out, &b[start..i], b'\'');
                    continue;
                }
            }
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Stands for a skipped literal: its quotes, with the line breaks it held
/// between them, so that line numbers in the stripped code are the source's.
fn blank(out: &mut Vec<u8>, literal: &[u8], quote: u8) {
    out.push(quote);
    out.extend(literal.iter().filter(|&&c| c == b'\n'));
    out.push(quote);
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Whether the `r` at `i` opens a Rust raw string: alone, or after a `b`
/// or `c` prefix (`br#"…"#`, `cr"…"`) that itself starts a token.
fn raw_prefix_start(b: &[u8], i: usize) -> bool {
    !ident_before(b, i) || (matches!(b[i - 1], b'b' | b'c') && !ident_before(b, i - 1))
}

/// Nesting deeper than this (strings in `{…}` in strings…) is read as one
/// string to the end of the input: fewer assertions count, never more, and
/// no input can exhaust the stack.
const MAX_NESTING: usize = 64;

/// Skips a Python string literal opened at `i` (either quote, single or
/// triple). A backslash always takes the next byte with it, raw strings
/// included (`r"\""` is one string), and an f-string's (or t-string's)
/// `{…}` fields are code whose own strings are skipped whole.
fn skip_python_string(b: &[u8], i: usize, depth: usize) -> usize {
    if depth > MAX_NESTING {
        return b.len();
    }
    let q = b[i];
    let triple = b[i..].starts_with(&[q, q, q]);
    let n = if triple { 3 } else { 1 };
    let mut k = i;
    while k > 0 && b[k - 1].is_ascii_alphabetic() {
        k -= 1;
    }
    let prefix = &b[k..i];
    let formatted = prefix.len() <= 2
        && !ident_before(b, k)
        && prefix.iter().all(|c| b"rRbBfFuUtT".contains(c))
        && prefix.iter().any(|c| b"fFtT".contains(c));
    let mut j = i + n;
    while j < b.len() {
        let c = b[j];
        if c == b'\\' {
            j += 2;
            continue;
        }
        if !triple && c == b'\n' {
            return j; // an unterminated single-line string ends at the line
        }
        if formatted && c == b'{' {
            if b.get(j + 1) == Some(&b'{') {
                j += 2;
            } else {
                j = skip_field(b, j + 1, Lang::Python, depth + 1);
            }
            continue;
        }
        if c == q && (n == 1 || b[j..].starts_with(&[q, q, q])) {
            return j + n;
        }
        j += 1;
    }
    b.len()
}

/// Skips a JavaScript template literal opened at `i`, its `${…}`
/// expressions (and the templates and strings inside them) included.
fn skip_template(b: &[u8], i: usize, depth: usize) -> usize {
    if depth > MAX_NESTING {
        return b.len();
    }
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'`' => return j + 1,
            b'$' if b.get(j + 1) == Some(&b'{') => {
                j = skip_field(b, j + 2, Lang::JavaScript, depth + 1)
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// Skips the code of a `{…}` field whose `{` is just before `i`, up to and
/// including its matching `}`; strings inside it are skipped whole.
fn skip_field(b: &[u8], i: usize, lang: Lang, depth: usize) -> usize {
    if depth > MAX_NESTING {
        return b.len();
    }
    let mut open = 1;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'{' => {
                open += 1;
                j += 1;
            }
            b'}' => {
                open -= 1;
                j += 1;
                if open == 0 {
                    return j;
                }
            }
            b'`' if lang == Lang::JavaScript => j = skip_template(b, j, depth + 1),
            b'"' | b'\'' if lang == Lang::Python => j = skip_python_string(b, j, depth + 1),
            q @ (b'"' | b'\'') => j = skip_quoted(b, j, 1, q, true),
            _ => j += 1,
        }
    }
    b.len()
}

/// Whether a `/` at `i` in JavaScript starts a regular expression literal
/// rather than a division or a comment: by the last byte of code before it.
fn regex_can_start(b: &[u8], i: usize) -> bool {
    if matches!(b.get(i + 1), Some(b'/' | b'*')) {
        return false;
    }
    let mut k = i;
    while k > 0 && b[k - 1].is_ascii_whitespace() {
        k -= 1;
    }
    if k == 0 {
        return true;
    }
    let prev = b[k - 1];
    if b"(,=:[!&|?{};+-*%<>~^".contains(&prev) {
        return true;
    }
    // After a keyword such as `return` or `typeof`, too.
    let mut s = k;
    while s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_' || b[s - 1] == b'$') {
        s -= 1;
    }
    matches!(
        &b[s..k],
        b"return"
            | b"typeof"
            | b"instanceof"
            | b"in"
            | b"of"
            | b"new"
            | b"delete"
            | b"void"
            | b"throw"
            | b"case"
            | b"do"
            | b"else"
            | b"yield"
            | b"await"
    )
}

/// Skips a regular expression literal opened at `i` (a `/` inside a
/// character class does not close it); it ends at the line at the latest.
fn skip_regex(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    let mut class = false;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            b'[' => {
                class = true;
                j += 1
            }
            b']' => {
                class = false;
                j += 1
            }
            b'/' if !class => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// Skips a literal opened at `i` by `n` quote bytes `q`; returns the index
/// after its close (or the end of input).
fn skip_quoted(b: &[u8], i: usize, n: usize, q: u8, escapes: bool) -> usize {
    let mut j = i + n;
    while j < b.len() {
        if escapes && b[j] == b'\\' {
            j += 2;
            continue;
        }
        if n == 1 && q != b'`' && b[j] == b'\n' {
            return j; // an unterminated single-line string ends at the line
        }
        if b[j] == q && (n == 1 || b[j..].starts_with(&[q, q, q])) {
            return j + n;
        }
        j += 1;
    }
    b.len()
}

/// Identifiers in code order with the byte that follows each (after spaces)
/// and the byte before it.
fn idents(code: &str) -> Vec<(&str, u8, u8)> {
    let b = code.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if (b[i].is_ascii_alphabetic() || b[i] == b'_') && !ident_before(b, i) {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let mut k = i;
            while k < b.len() && b[k] == b' ' {
                k += 1;
            }
            let next = b.get(k).copied().unwrap_or(0);
            let prev = if start > 0 { b[start - 1] } else { 0 };
            v.push((&code[start..i], next, prev));
        } else {
            i += 1;
        }
    }
    v
}

pub fn count_assertions(lang: Lang, src: &str) -> usize {
    let code = strip(lang, src);
    let ids = idents(&code);
    let mut n = 0;
    for (k, &(id, next, prev)) in ids.iter().enumerate() {
        let before = if k > 0 { ids[k - 1].0 } else { "" };
        n += usize::from(match lang {
            // assert!, assert_eq!, debug_assert_ne!, prop_assert!, assert_matches!
            Lang::Rust => {
                next == b'!'
                    && (id.starts_with("assert")
                        || id.starts_with("debug_assert")
                        || id.starts_with("prop_assert"))
                    || (id == "should_panic" && prev == b'[')
            }
            // assert x; self.assertEqual(...); mock.assert_called_with(...); pytest.raises(...)
            Lang::Python => {
                (id == "assert" && prev != b'.')
                    || (id.starts_with("assert") && prev == b'.' && next == b'(')
                    || (before == "pytest"
                        && prev == b'.'
                        && matches!(id, "raises" | "warns" | "fail"))
            }
            // expect(...); assert(...); assert.equal(...)
            Lang::JavaScript => {
                prev != b'.'
                    && ((id == "expect" && next == b'(')
                        || (id == "assert" && matches!(next, b'(' | b'.')))
            }
            // t.Error/Errorf/Fatal/Fatalf(...); require.X(...); assert.X(...)
            Lang::Go => {
                (prev == b'.'
                    && matches!(id, "Error" | "Errorf" | "Fatal" | "Fatalf")
                    && next == b'(')
                    || (matches!(id, "require" | "assert") && next == b'.' && prev != b'.')
            }
            // assertEquals(...), assertThat(...), Assertions.assertTrue(...), assert x;
            Lang::Java => {
                (id.starts_with("assert") && next == b'(') || (id == "assert" && next != b'(')
            }
        });
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust() {
        let src = r##"
            // assert!(commented);
            /* assert_eq!(1, 1); /* nested */ assert!(x); */
            fn f<'a>(s: &'a str) { assert!(s.len() > 0); assert_eq!(s, "assert!(no)"); }
            let r = r#"assert!(raw)"#; let c = '"'; debug_assert_ne!(1, 2);
            #[should_panic] fn g() {}
        "##;
        assert_eq!(count_assertions(Lang::Rust, src), 4);
    }

    #[test]
    fn python() {
        let src = "def test_x(self):\n    assert x  # assert y\n    self.assertEqual(a, b)\n    '''assert z'''\n    with pytest.raises(ValueError):\n        pass\n    s = \"self.assertTrue(q)\"\n";
        assert_eq!(count_assertions(Lang::Python, src), 3);
    }

    #[test]
    fn javascript() {
        let src = "test('x', () => { expect(a).toBe(1); assert.equal(1, 1); assert(ok); /* expect(b) */ const s = `expect(c)`; });";
        assert_eq!(count_assertions(Lang::JavaScript, src), 3);
    }

    #[test]
    fn go() {
        let src = "func TestX(t *testing.T) {\n\tif a != b { t.Errorf(\"t.Fatal(x)\") }\n\trequire.NoError(t, err)\n\tassert.Equal(t, 1, 1)\n\t// t.Fatal(y)\n\tt.Fatal(`raw`)\n}";
        assert_eq!(count_assertions(Lang::Go, src), 4);
    }

    #[test]
    fn assertions_hidden_in_strings_do_not_count() {
        // Each hides an assertion in what is one string to its language's
        // own parser.
        let python = "x = r\"\\\" self.assertEqual(a, 1) \"\n";
        assert_eq!(count_assertions(Lang::Python, python), 0, "{python}");
        let fstring = "x = f\"{'}'} self.assertEqual(a, 1) \"\nassert y\n";
        assert_eq!(count_assertions(Lang::Python, fstring), 1, "{fstring}");
        let nested = "x = f'{f\"{1}\"}' ; self.assertTrue(z)\n";
        assert_eq!(count_assertions(Lang::Python, nested), 1, "{nested}");
        let java = "String s = \"\"\"\n  assertEquals(2, g());\n  \"\"\";\nassertTrue(x);";
        assert_eq!(count_assertions(Lang::Java, java), 1, "{java}");
        let js = "const s = `${` expect(g()).toBe(2) `}`; expect(h()).toBe(1);";
        assert_eq!(count_assertions(Lang::JavaScript, js), 1, "{js}");
        let regex = "const r = /\"/ + \"expect(a)\"; const q = a / b / \"expect(c)\";";
        assert_eq!(count_assertions(Lang::JavaScript, regex), 0, "{regex}");
        let rust =
            "let s = br#\"x\" assert_eq!(g(), 2); \"#; let t = cr\"assert!(y)\"; assert!(z);";
        assert_eq!(count_assertions(Lang::Rust, rust), 1, "{rust}");
        // Deep nesting cannot exhaust the stack; it reads as string.
        let deep = format!("x = {}", "f'{".repeat(10_000));
        assert_eq!(count_assertions(Lang::Python, &deep), 0);
        let deep_js = format!("x = {}", "`${".repeat(10_000));
        assert_eq!(count_assertions(Lang::JavaScript, &deep_js), 0);
    }

    #[test]
    fn java() {
        let src = "@Test void x() { assertEquals(1, 1); assertThat(a).isTrue(); Assertions.assertTrue(b); assert c != null; String s = \"assertEquals(2)\"; }";
        assert_eq!(count_assertions(Lang::Java, src), 4);
    }
}
