//! The host's mount table, as `/proc/self/mountinfo` gives it.

use std::path::PathBuf;

/// Mount points of this process's mount namespace.
pub(crate) fn host_mounts() -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|m| PathBuf::from(unescape_mount(m)))
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
pub(crate) fn unescape_mount(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(v) = bytes
                .get(i + 1..i + 4)
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone_and_a_broken_one_is_kept() {
        assert_eq!(unescape_mount("/a\\040b\\011c\\134d"), "/a b\tc\\d");
        assert_eq!(unescape_mount("/plain"), "/plain");
        assert_eq!(unescape_mount("/cut\\04"), "/cut\\04");
        assert_eq!(unescape_mount("/not\\999octal"), "/not\\999octal");
    }
}
