//! The paths a diff's headers name, as `git apply -pN` reads them: what
//! replay checks against the tree's bounds before anything is applied.

/// Every path a diff's headers name (`---`/`+++`, `diff --git`, rename and
/// copy lines), with git's C-style quoting undone and the first `strip`
/// components removed as `git apply -p<strip>` does. `/dev/null` is
/// skipped. Where a `diff --git` line splits into two names in more than
/// one way, every split's names are returned: a superset of what git uses.
pub fn header_paths(patch: &[u8], strip: u32) -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    let stripped = |p: Vec<u8>| -> Vec<u8> {
        match self::strip(&p, strip) {
            Some(s) => s.to_vec(),
            // Fewer components than the strip level: git refuses the name;
            // judge it whole.
            None => p,
        }
    };
    for line in patch.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"diff --git ") {
            for (a, b) in split_candidates(rest) {
                paths.push(stripped(a));
                paths.push(stripped(b));
            }
        } else if let Some(rest) = line
            .strip_prefix(b"--- ")
            .or_else(|| line.strip_prefix(b"+++ "))
        {
            paths.extend(file_header_name(rest).map(stripped));
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

/// `name` without its first `p` components; `None` when it has no more
/// than `p` components (git then finds no name).
pub fn strip(name: &[u8], p: u32) -> Option<&[u8]> {
    let mut rest = name;
    for _ in 0..p {
        let i = rest.iter().position(|&b| b == b'/')?;
        rest = &rest[i + 1..];
        // git treats `a//x` as one separator.
        while let Some(r) = rest.strip_prefix(b"/") {
            rest = r;
        }
    }
    (!rest.is_empty()).then_some(rest)
}

/// The name on a `---`/`+++` line (after the marker): unquoted, without a
/// tab-separated timestamp; `None` for `/dev/null`.
pub fn file_header_name(rest: &[u8]) -> Option<Vec<u8>> {
    let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
    let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
    let name = if rest.starts_with(b"\"") {
        unquote(rest).0
    } else {
        rest.split(|&b| b == b'\t').next().unwrap_or(rest).to_vec()
    };
    (name != b"/dev/null").then_some(name)
}

/// Every way the rest of a `diff --git` line splits into two names, either
/// possibly quoted.
pub fn split_candidates(rest: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
    let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
    if rest.starts_with(b"\"") {
        let (first, used) = unquote(rest);
        let Some(tail) = rest[used..].strip_prefix(b" ") else {
            return Vec::new();
        };
        let second = if tail.starts_with(b"\"") {
            unquote(tail).0
        } else {
            tail.to_vec()
        };
        return vec![(first, second)];
    }
    if rest.ends_with(b"\"") {
        // An unquoted name, then a quoted one.
        for (i, w) in rest.windows(2).enumerate() {
            if w == b" \"" {
                let (second, used) = unquote(&rest[i + 1..]);
                if i + 1 + used == rest.len() {
                    return vec![(rest[..i].to_vec(), second)];
                }
            }
        }
    }
    rest.iter()
        .enumerate()
        .filter(|(_, c)| **c == b' ')
        .map(|(i, _)| (rest[..i].to_vec(), rest[i + 1..].to_vec()))
        .collect()
}

/// The smallest strip level at which a `diff --git` line names one path
/// twice (0 when both names are equal, as `--no-prefix` writes them), and
/// that path.
pub fn split_same_name(rest: &[u8]) -> Option<(u32, Vec<u8>)> {
    let candidates = split_candidates(rest);
    (0..=16).find_map(|p| {
        candidates
            .iter()
            .find_map(|(a, b)| match (strip(a, p), strip(b, p)) {
                (Some(x), Some(y)) if x == y => Some((p, x.to_vec())),
                _ => None,
            })
    })
}

/// Undoes git's C-style quoting of a name that starts with `"`; returns the
/// bytes and how many input bytes were used.
pub fn unquote(s: &[u8]) -> (Vec<u8>, usize) {
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
        let paths = header_paths(patch, 1);
        assert!(paths.contains(&b"src/x y.rs".to_vec()));
        assert!(paths.contains(&"t\u{e9}st\n".as_bytes().to_vec()));
        assert!(paths.contains(&b"../new".to_vec()));
        assert!(paths.contains(&b"old".to_vec()));
    }

    #[test]
    fn header_paths_keep_the_whole_name_at_strip_zero() {
        let patch = b"diff --git .git/config .git/config\n--- .git/config\n+++ .git/config\n";
        assert_eq!(header_paths(patch, 0), vec![b".git/config".to_vec()]);
        // At -p1 the same lines name `config`: the level decides the path.
        assert!(header_paths(patch, 1).contains(&b"config".to_vec()));
    }

    #[test]
    fn same_name_finds_the_strip_level() {
        assert_eq!(split_same_name(b"a/x b/x"), Some((1, b"x".to_vec())));
        assert_eq!(split_same_name(b"b/x a/x"), Some((1, b"x".to_vec())));
        assert_eq!(
            split_same_name(b"src/x src/x"),
            Some((0, b"src/x".to_vec()))
        );
        assert_eq!(
            split_same_name(b"a/my file b/my file"),
            Some((1, b"my file".to_vec()))
        );
        assert_eq!(
            split_same_name(b"left/side/x right/side/x"),
            Some((1, b"side/x".to_vec()))
        );
        assert_eq!(split_same_name(b"a/x b/y"), None);
        assert_eq!(strip(b"a//x", 1), Some(&b"x"[..]));
        assert_eq!(strip(b"x", 1), None);
    }
}
