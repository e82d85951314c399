//! Reconciling a tool-call trace with the working tree: every changed path
//! must be owned by a closed write/delete span, every such span's path must
//! have changed, and the bytes on disk must be what the span says. The rules
//! are `agent_ledger_trace::judge` (shared with the `span_bijection` guest);
//! this module reads the delta and the files and reports for people.
//!
//! The delta is what `git status --porcelain=v2 -z -uall` reports: staged and
//! unstaged changes against HEAD, untracked files included, a rename as its
//! old path deleted plus its new path added, unmerged paths as changed; and,
//! under `[trace] ignored = "deny"` (the default), every git-ignored file
//! too (`--ignored`), so a change git was told to overlook is still a ghost.
//! Paths are compared as raw bytes.

use crate::exit::{Error, Result};
use crate::trace::Span;
use std::collections::BTreeSet;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

mod changed;
mod held;
pub mod judge;

pub use changed::{changed_against, changed_paths, parse_records, parse_status};
use held::held_now;
pub use held::{abs, entry_in, hash_at, open_regular, open_tree};
pub use judge::{
    Judging, TraceOutcome, TraceRead, Trust, judge_read, judge_trace, read_trace, trust_note,
};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct OpenSpan {
    pub span: String,
    pub op: String,
    pub path: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct HashMismatch {
    pub path: String,
    pub span: String,
    /// What the span says should be there (null: absent).
    pub expected: Option<String>,
    /// What is there (null: absent).
    pub actual: Option<String>,
}

/// A span whose `before` does not chain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct SpanBreak {
    pub path: String,
    pub span: String,
    /// 1-based line of the span's open line.
    pub line: usize,
    /// The span before it on the path (null: the base revision).
    pub previous: Option<String>,
    /// What the path held, as the base or the previous span says (null:
    /// absent).
    pub expected: Option<String>,
    /// What this span recorded as `before` (null: absent).
    pub found: Option<String>,
}

#[derive(Debug, Default, serde::Serialize, schemars::JsonSchema)]
pub struct ReconcileReport {
    pub open: Vec<OpenSpan>,
    pub ghosts: Vec<String>,
    pub phantoms: Vec<String>,
    pub hash_misses: Vec<HashMismatch>,
    /// Spans whose `before` is not what the path held (the base's entry for
    /// a path's first span, else what the span before it left): the path
    /// changed outside the trace between two tool calls.
    pub breaks: Vec<SpanBreak>,
    /// Closed write/delete spans counted.
    pub mutating_spans: usize,
    /// Paths in the delta.
    pub changed: usize,
    /// Groups of paths (in the trace or the delta) that differ only in case
    /// or Unicode normalisation: one file on macOS and Windows.
    pub aliases: Vec<Vec<String>>,
    /// When write/delete spans name more than one agent: each agent (null:
    /// a span naming none) and the paths its spans wrote.
    pub agents: Vec<AgentPaths>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct AgentPaths {
    pub agent: Option<String>,
    pub paths: Vec<String>,
}

impl ReconcileReport {
    /// Whether the tree and the trace disagree (exit 1).
    pub fn mismatch(&self) -> bool {
        !self.ghosts.is_empty()
            || !self.phantoms.is_empty()
            || !self.hash_misses.is_empty()
            || !self.breaks.is_empty()
            || !self.aliases.is_empty()
            || !self.agents.is_empty()
    }
}

/// Which tree is judged: the working tree as it is, or a snapshot of it
/// (a tree object written from a private index, as `trace end` takes one
/// so that the patch it prints is the tree it judged).
#[derive(Debug, Clone, Copy)]
pub enum Judged<'a> {
    Worktree,
    /// A tree object and the repository (an isolated one) holding it.
    Snapshot {
        git: &'a crate::git::Repo,
        tree: &'a str,
    },
}

/// The commit the spans start from (`None`: no commit yet) and, when it
/// was read ahead, a base listing (used only if it is that commit's).
pub struct Base<'a> {
    pub commit: Option<&'a str>,
    pub preloaded: Option<BaseOf>,
}

/// What [`crate::git::Repo::base_of`] read for `commit` (with the working
/// tree's stat cache) ahead of [`reconcile`], which uses it only when its
/// base is that commit and it judges the working tree.
pub struct BaseOf {
    pub commit: String,
    pub listing: crate::git::Listing,
    pub walked: Option<crate::git::StatCache>,
}

impl BaseOf {
    /// The base listing of `git`'s HEAD, read ahead; `None` without a
    /// commit or when it cannot be read (then [`reconcile`] reads it again
    /// and reports why).
    pub fn of_head(git: &crate::git::Repo) -> Option<BaseOf> {
        let commit = git.head()?;
        let cache = crate::resolve::default_cache_dir();
        let (listing, walked) = git.base_of(commit, cache.as_deref(), true).ok()?;
        Some(BaseOf {
            commit: commit.to_string(),
            listing,
            walked,
        })
    }
}

/// Every entry named `.git` (in any case) below the top of `root`, which
/// git skips: repository-relative paths, sorted. Symlinks are not followed.
fn dot_git_entries(root: &Path) -> Result<Vec<Vec<u8>>> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let dir = root.join(&rel);
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::read(&dir, e))? {
            let entry = entry.map_err(|e| Error::read(&dir, e))?;
            let name = entry.file_name();
            let path = rel.join(&name);
            if name.as_bytes().eq_ignore_ascii_case(b".git") {
                if !rel.as_os_str().is_empty() {
                    found.push(path.into_os_string().into_vec());
                }
                continue;
            }
            let kind = entry
                .file_type()
                .map_err(|e| Error::read(&entry.path(), e))?;
            if kind.is_dir() {
                dirs.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Paths where `tree` differs from `base`, renames as their two paths.
fn changed_in_tree(git: &crate::git::Repo, base: &str, tree: &str) -> Result<BTreeSet<Vec<u8>>> {
    let out = crate::git::run(
        git.command().args([
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            "--no-ext-diff",
            "--end-of-options",
            base,
            tree,
        ]),
        &format!("diff-tree in `{}`", git.root.display()),
    )?;
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// Judges spans against `git`'s working tree (or a snapshot of it).
/// `exclude` are paths never counted as changed (the trace file itself, the
/// ledger); `ignored`: git-ignored files are part of the delta (`[trace]
/// ignored = "deny"`); `base`: the full commit id the spans start from (a
/// begun run's base, `--base`, else HEAD; `None`: no commit yet, see
/// [`changed_paths`]) and its listing if read ahead; `begun`: the trace is a begun run's (then
/// entries named `.git` below the top are changes too). Each path's first
/// span must find what the base holds there, and each later span what the
/// one before it left (`agent_ledger_trace::judge`): a break otherwise.
pub fn reconcile(
    git: &crate::git::Repo,
    spans: &[Span],
    exclude: &[Vec<u8>],
    ignored: bool,
    base: Base<'_>,
    begun: bool,
    tree: Judged<'_>,
) -> Result<ReconcileReport> {
    let excluded = |p: &[u8]| {
        exclude
            .iter()
            .any(|e| p == e.as_slice() || (p.starts_with(e) && p.get(e.len()) == Some(&b'/')))
    };
    let started = std::time::Instant::now();
    let mut phases = Vec::new();
    let mut mark = |name: &'static str| phases.push((name, started.elapsed()));
    let repo = git.root.as_path();
    // The revision the first span on each path starts from; a repository
    // without a commit starts from nothing.
    let start = base.commit.map(str::to_string);
    let cache = crate::resolve::default_cache_dir();
    let worktree = matches!(tree, Judged::Worktree);
    let (listing, walked) = match (start.as_deref(), base.preloaded) {
        (Some(rev), Some(p)) if worktree && p.commit == rev => (Some(p.listing), p.walked),
        (Some(rev), _) => {
            let (l, w) = git.base_of(rev, cache.as_deref(), worktree)?;
            (Some(l), w)
        }
        (None, _) => (None, None),
    };
    mark("listing");
    // What judging needs besides the delta depends on the spans alone, so
    // it is read while the tree is walked: what each closed write or
    // delete span's path holds now (the judgement keeps the ones the delta
    // holds), and what the base held at each span's path (read by `git
    // cat-file` on a thread of its own, which mostly waits for git).
    let mut span_paths: Vec<&[u8]> = spans.iter().map(|s| s.path.as_slice()).collect();
    span_paths.sort_unstable();
    span_paths.dedup();
    let closed: BTreeSet<&[u8]> = spans
        .iter()
        .filter(|s| {
            s.op.mutates()
                && s.close
                    .as_ref()
                    .is_some_and(|c| c.status == agent_ledger_trace::Status::Closed)
        })
        .map(|s| s.path.as_slice())
        .collect();
    let closed: Vec<&[u8]> = closed.into_iter().collect();
    // A working tree's walk hashes the closed spans' files it reads anyway
    // (a changed tracked file, a new one) for what they hold now too.
    let wanted = crate::git::Wanted::new(&closed);
    let walk = || match tree {
        Judged::Worktree => changed_against(
            git,
            start.as_deref(),
            listing.as_ref(),
            walked,
            ignored,
            Some(&wanted),
        ),
        Judged::Snapshot { git, tree } => changed_in_tree(
            git,
            start
                .as_deref()
                .ok_or_else(|| Error::Internal("a snapshot is judged against a revision".into()))?,
            tree,
        ),
    };
    let (changed, early, mut at_start) = std::thread::scope(|scope| {
        let at_start = scope.spawn(|| match &listing {
            Some(l) => git.entries_in(l, &span_paths),
            None => Ok(Default::default()),
        });
        // A snapshot's entries come from git, read beside its diff.
        let (changed, early) = match tree {
            Judged::Worktree => (walk(), None),
            Judged::Snapshot { .. } => {
                let (changed, held) = rayon::join(walk, || held_now(tree, repo, &closed, &wanted));
                (changed, Some(held))
            }
        };
        let at_start = at_start
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok::<_, Error>((changed?, early.transpose()?, at_start?))
    })?;
    mark("walk");
    let mut delta: BTreeSet<Vec<u8>> = changed.into_iter().filter(|p| !excluded(p)).collect();
    if begun {
        // Git never lists a path named `.git`, so what an agent puts there
        // is invisible to every git command: in a begun run's workspace (a
        // fresh worktree, no submodule checked out), each one is a change
        // no span can own.
        delta.extend(dot_git_entries(repo)?);
    }
    let judged = agent_ledger_trace::judge(spans, &delta);
    // What the judged tree holds at each owned path, where the walk did
    // not read it already. A path that cannot be read is an error only
    // once the judgement owns it (a phantom's path is never read for it).
    let mut now = match early {
        Some(held) => held,
        None => {
            let owned: Vec<&[u8]> = judged.owned.iter().map(|o| o.path).collect();
            held_now(tree, repo, &owned, &wanted)?
        }
    };
    let mut misses = Vec::new();
    for owned in &judged.owned {
        let held = now.remove(owned.path).transpose()?.flatten();
        misses.extend(owned.check(held));
    }
    let misses = misses
        .into_iter()
        .map(|m| HashMismatch {
            path: display_path(m.path),
            span: m.span.id.clone(),
            expected: m.expected.map(str::to_string),
            actual: m.actual,
        })
        .collect();
    crate::profile::phase("reconcile", &crate::profile::spans(&phases));
    let mut breaks: Vec<SpanBreak> = judged
        .firsts
        .iter()
        .filter_map(|f| f.check(at_start.remove(f.path).flatten()))
        .map(|m| SpanBreak {
            path: display_path(m.path),
            span: m.span.id.clone(),
            line: m.span.open_line,
            previous: None,
            expected: m.actual,
            found: m.expected.map(str::to_string),
        })
        .collect();
    breaks.extend(judged.breaks.iter().map(|b| SpanBreak {
        path: display_path(b.path),
        span: b.span.id.clone(),
        line: b.span.open_line,
        previous: b.previous.map(|p| p.id.clone()),
        expected: b.expected.map(str::to_string),
        found: b.found.map(str::to_string),
    }));
    breaks.sort_by_key(|b| b.line);
    Ok(ReconcileReport {
        open: judged
            .open
            .iter()
            .map(|s| OpenSpan {
                span: s.id.clone(),
                op: s.op.as_str().to_string(),
                path: display_path(&s.path),
                line: s.open_line,
            })
            .collect(),
        ghosts: judged.ghosts.iter().map(|p| display_path(p)).collect(),
        phantoms: judged
            .phantoms
            .iter()
            .map(|s| display_path(&s.path))
            .collect(),
        hash_misses: misses,
        breaks,
        mutating_spans: judged.mutating_spans,
        changed: judged.changed,
        aliases: judged
            .aliases
            .iter()
            .map(|g| g.iter().map(|p| display_path(p)).collect())
            .collect(),
        agents: judged
            .agents
            .iter()
            .map(|(agent, paths)| AgentPaths {
                agent: agent.map(str::to_string),
                paths: paths.iter().map(|p| display_path(p)).collect(),
            })
            .collect(),
    })
}

/// A path for people: as is when it is printable UTF-8 without quotes or
/// backslashes; otherwise C-quoted as git does, with octal escapes for the
/// bytes of what is not printable UTF-8 and of every character the
/// terminal escaper refuses (`output::needs_escape`: controls, bidi
/// overrides, line separators).
pub fn display_path(p: &[u8]) -> String {
    use crate::output::needs_escape;
    let plain = std::str::from_utf8(p)
        .ok()
        .filter(|s| !s.chars().any(|c| needs_escape(c) || c == '"' || c == '\\'));
    if let Some(s) = plain {
        return s.to_string();
    }
    let mut out = String::from("\"");
    let mut rest = p;
    while !rest.is_empty() {
        let valid = match std::str::from_utf8(rest) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or(""),
        };
        for c in valid.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if needs_escape(c) => {
                    for b in c.encode_utf8(&mut [0; 4]).bytes() {
                        out.push_str(&format!("\\{b:03o}"));
                    }
                }
                c => out.push(c),
            }
        }
        rest = &rest[valid.len()..];
        if let Some((&b, tail)) = rest.split_first() {
            out.push_str(&format!("\\{b:03o}"));
            rest = tail;
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
