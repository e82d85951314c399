//! The paths a diff's headers name, as `git apply -p1` reads them: what
//! replay checks against the tree's bounds before anything is applied.

/// Every path a diff's headers name (`---`/`+++`, `diff --git`, rename and
/// copy lines), with git's C-style quoting undone and the first component
/// (`a/`, `b/`) stripped as `git apply -p1` does. `/dev/null` is skipped.
pub fn header_paths(patch: &[u8]) -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    for line in patch.split(|&b| b == b'\n') {
        let strip_p1 = |p: Vec<u8>| -> Option<Vec<u8>> {
            if p == b"/dev/null" {
                return None;
            }
            match p.iter().position(|&b| b == b'/') {
                Some(i) => Some(p[i + 1..].to_vec()),
                None => Some(p),
            }
        };
        if let Some(rest) = line.strip_prefix(b"diff --git ") {
            for p in split_git_header(rest) {
                paths.extend(strip_p1(p));
            }
        } else if let Some(rest) = line
            .strip_prefix(b"--- ")
            .or_else(|| line.strip_prefix(b"+++ "))
        {
            let name = if rest.starts_with(b"\"") {
                unquote(rest).0
            } else {
                rest.split(|&b| b == b'\t').next().unwrap_or(rest).to_vec()
            };
            paths.extend(strip_p1(name));
        } else {
            for prefix in [
                &b"rename from "[..],
                b"rename to ",
                b"copy from ",
                b"copy to ",
            ] {
                if let Some(rest) = line.strip_prefix(prefix) {
                    paths.push(if rest.starts_with(b"\"") {
                        unquote(rest).0
                    } else {
                        rest.to_vec()
                    });
                }
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Splits `a/X b/Y` (either side possibly quoted) into its two names.
fn split_git_header(rest: &[u8]) -> Vec<Vec<u8>> {
    if rest.starts_with(b"\"") {
        let (first, used) = unquote(rest);
        let tail = rest[used..].strip_prefix(b" ").unwrap_or(&rest[used..]);
        let second = if tail.starts_with(b"\"") {
            unquote(tail).0
        } else {
            tail.to_vec()
        };
        return vec![first, second];
    }
    // Unquoted: both names are the same length when the path did not move.
    if rest.len() % 2 == 1 {
        let half = rest.len() / 2;
        if rest[half] == b' ' && rest[..half].get(2..) == rest[half + 1..].get(2..) {
            return vec![rest[..half].to_vec(), rest[half + 1..].to_vec()];
        }
    }
    match rest.windows(3).position(|w| w == b" b/" || w == b" \"b") {
        Some(i) => {
            let tail = &rest[i + 1..];
            let second = if tail.starts_with(b"\"") {
                unquote(tail).0
            } else {
                tail.to_vec()
            };
            vec![rest[..i].to_vec(), second]
        }
        None => vec![rest.to_vec()],
    }
}

/// Undoes git's C-style quoting of a name that starts with `"`; returns the
/// bytes and how many input bytes were used.
fn unquote(s: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'"' => return (out, i + 1),
            b'\\' if i + 1 < s.len() => {
                let c = s[i + 1];
                if (b'0'..=b'7').contains(&c) && i + 3 < s.len() {
                    let oct = std::str::from_utf8(&s[i + 1..i + 4])
                        .ok()
                        .and_then(|o| u8::from_str_radix(o, 8).ok());
                    out.push(oct.unwrap_or(b'?'));
                    i += 4;
                    continue;
                }
                out.push(match c {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'v' => 11,
                    other => other,
                });
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    (out, s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_paths_unquote_and_strip_the_prefix() {
        let patch = b"diff --git a/src/x y.rs b/src/x y.rs\n--- a/src/x y.rs\n+++ b/src/x y.rs\n\
            diff --git \"a/t\\303\\251st\\n\" \"b/t\\303\\251st\\n\"\nrename from old\nrename to ../new\n";
        let paths = header_paths(patch);
        assert!(paths.contains(&b"src/x y.rs".to_vec()));
        assert!(paths.contains(&"t\u{e9}st\n".as_bytes().to_vec()));
        assert!(paths.contains(&b"../new".to_vec()));
        assert!(paths.contains(&b"old".to_vec()));
    }
}
