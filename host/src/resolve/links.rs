//! The ledger is never reached through a symbolic link a checkout holds.

use crate::exit::{Error, Result};
use std::path::{Path, PathBuf};

/// Refuses a ledger reached through a symbolic link inside the checkout
/// `root`: a branch that commits `.agent-ledger`, a directory above it
/// (`ci/` for `ledger = "ci/ledger"`) or one of its record directories
/// (`.agent-ledger/transcripts`) as a link would have `capture` and
/// `check` write its records, its own diff among them, wherever the link
/// points. The ledger's path is walked from the checkout's top down, as
/// written (never resolved through a link), and then the ledger's own
/// entries; a link outside the checkout (the operator's own layout) is not
/// the branch's to make.
pub(super) fn refuse_linked_ledger(root: &Path, ledger: &Path) -> Result<()> {
    let Ok(real_root) = std::fs::canonicalize(root) else {
        return Ok(());
    };
    let absolute = if ledger.is_relative() {
        match std::env::current_dir().and_then(std::fs::canonicalize) {
            Ok(cwd) => cwd.join(ledger),
            Err(_) => return Ok(()),
        }
    } else {
        ledger.to_path_buf()
    };
    // `.` and `..` taken as written, so no link is followed to find out
    // whether the ledger is inside.
    let mut lexical = PathBuf::new();
    for c in absolute.components() {
        match c {
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            std::path::Component::CurDir => {}
            c => lexical.push(c),
        }
    }
    let Ok(inside) = lexical.strip_prefix(&real_root) else {
        return Ok(());
    };
    let refuse = |at: &Path| {
        let target = std::fs::read_link(at).unwrap_or_default();
        Err(Error::data(
            at,
            format!(
                "the ledger `{}` is reached through this symbolic link (to `{}`), which the checkout holds: records are never written through a link a branch can commit; remove it, or pass `--ledger DIR` outside the checkout",
                ledger.display(),
                target.display()
            ),
        ))
    };
    let mut at = real_root.clone();
    for c in inside.components() {
        at.push(c);
        if is_link(&at) {
            return refuse(&at);
        }
        if at.symlink_metadata().is_err() {
            // The rest does not exist yet: `capture` makes it, as
            // directories.
            return Ok(());
        }
    }
    refuse_linked_entries(&at).map_err(|link| {
        let target = std::fs::read_link(&link).unwrap_or_default();
        Error::data(
            &link,
            format!(
                "is a symbolic link (to `{}`) inside the ledger `{}`: records are never written through a link a branch can commit; remove it",
                target.display(),
                ledger.display()
            ),
        )
    })
}

/// The first symbolic link among a ledger's entries and its object store's
/// (the directories records are written into), if any.
pub fn refuse_linked_entries(ledger: &Path) -> std::result::Result<(), PathBuf> {
    let Ok(entries) = std::fs::read_dir(ledger) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            return Err(path);
        }
        if entry.file_type().is_ok_and(|t| t.is_dir())
            && let Ok(inner) = std::fs::read_dir(&path)
        {
            for e in inner.flatten() {
                if e.file_type().is_ok_and(|t| t.is_symlink()) {
                    return Err(e.path());
                }
            }
        }
    }
    Ok(())
}

fn is_link(p: &Path) -> bool {
    p.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}
