//! Counting assertions per language, after blanking comments and strings.

pub use agent_ledger_guest::Lang;

/// Returns `src` with comments removed and string/char literal contents
/// blanked (quotes kept), so only code remains.
pub fn strip(lang: Lang, src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let starts = |i: usize, s: &[u8]| b[i..].starts_with(s);
    while i < b.len() {
        let c = b[i];
        if lang == Lang::Python {
            if c == b'#' {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            if c == b'"' || c == b'\'' {
                let triple = i + 2 < b.len() && b[i + 1] == c && b[i + 2] == c;
                let raw = i > 0 && matches!(b[i - 1], b'r' | b'R');
                i = skip_quoted(b, i, if triple { 3 } else { 1 }, c, !raw);
                out.extend_from_slice(b"\"\"");
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
                && !ident_before(b, i)
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
                    out.extend_from_slice(b"\"\"");
                    continue;
                }
            }
            if c == b'"' || (c == b'`' && matches!(lang, Lang::JavaScript | Lang::Go)) {
                i = skip_quoted(b, i, 1, c, !(c == b'`' && lang == Lang::Go));
                out.extend_from_slice(b"\"\"");
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
                        out.extend_from_slice(b"''");
                        continue;
                    }
                } else {
                    i = skip_quoted(b, i, 1, c, true);
                    out.extend_from_slice(b"''");
                    continue;
                }
            }
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
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
    fn java() {
        let src = "@Test void x() { assertEquals(1, 1); assertThat(a).isTrue(); Assertions.assertTrue(b); assert c != null; String s = \"assertEquals(2)\"; }";
        assert_eq!(count_assertions(Lang::Java, src), 4);
    }
}
