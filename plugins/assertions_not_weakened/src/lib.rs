//! `assertions_not_weakened`: in every touched test file, the number of
//! assertions does not fall. Comments and string literals are blanked out
//! before counting, so an assertion in a comment or a string never counts.
//! A renamed or copied file is compared with its old path's content at the
//! base, both sides counted in the old path's language; a file retyped to a
//! symlink is read through it (inside the patched tree only).

mod count;

use agent_ledger_guest::{
    ChangeKind, Guest, Info, Outcome, Trial, finding, glob_match, test_globs,
};
use count::{Lang, count_assertions};

struct AssertionsNotWeakened;

fn read(root: &str, path: &str) -> Result<Option<String>, String> {
    match std::fs::read(format!("{root}/{path}")) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read `{root}/{path}`: {e}")),
    }
}

impl Guest for AssertionsNotWeakened {
    fn describe() -> Info {
        Info {
            name: "assertions_not_weakened".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: "in each touched test file the count of assertions does not fall".into(),
        }
    }

    fn check(trial: Trial) -> Result<Outcome, String> {
        let globs = test_globs(&trial);
        let mut findings = Vec::new();
        for change in &trial.changes {
            let before_path = match change.kind {
                ChangeKind::Modified | ChangeKind::TypeChanged => change.path.as_str(),
                ChangeKind::Renamed | ChangeKind::Copied => {
                    change.old_path.as_deref().unwrap_or(&change.path)
                }
                // Deletions are `tests_not_deleted`'s; new files cannot weaken.
                ChangeKind::Added | ChangeKind::Deleted => continue,
            };
            // The language is the old path's: a test renamed to `.txt` or
            // `.disabled` is still counted as what it was, on both sides.
            let Some(lang) = Lang::of(before_path) else {
                continue;
            };
            let Some(before) = read("/base", before_path)? else {
                continue;
            };
            let is_test = globs
                .iter()
                .any(|g| glob_match(g, before_path) || glob_match(g, &change.path))
                || (lang == Lang::Rust
                    && (before.contains("#[test]") || before.contains("#[cfg(test)]")));
            if !is_test {
                continue;
            }
            let after = read("/patched", &change.path)?.unwrap_or_default();
            let (b, a) = (
                count_assertions(lang, &before),
                count_assertions(lang, &after),
            );
            if a < b {
                let renamed = if before_path == change.path {
                    String::new()
                } else {
                    format!(", compared with `{before_path}` at the base")
                };
                findings.push(finding(
                    &change.path,
                    None,
                    format!("assertions fell from {b} to {a} ({}{renamed})", lang.name()),
                ));
            }
        }
        Ok(if findings.is_empty() {
            Outcome::Holds(Vec::new())
        } else {
            Outcome::Miss(findings)
        })
    }
}

agent_ledger_guest::export!(AssertionsNotWeakened with_types_in agent_ledger_guest);
