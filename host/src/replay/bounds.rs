//! Path bounds, judged as part of `patch_applies`: a patch may not name a
//! path outside the tree (absolute, `..`, `.git`), may not touch a protected
//! path (the configuration, `.gitattributes`, `.gitmodules`, the
//! flake-freeze file, the ledger, plugins and known-bad patches,
//! `[protect].paths`), and may not leave a symlink that
//! resolves out of the tree or into `.git`, through any chain of links.
//!
//! The patched tree is untrusted: it is read only through a cap-std [`Dir`],
//! which no `..` or link can walk out of, and links are followed one by one
//! inside it, never by the kernel.

use crate::config;
use crate::exit::{Error, Result};
use crate::git::{Checkout, Repo};
use crate::record::Finding;
use crate::wasm::{Change, ChangeKind};
use cap_std::fs::Dir;
use globset::{GlobSet, GlobSetBuilder};
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

mod runners;

pub(super) use runners::{Runners, runner_files};

/// Every importable form, at any depth, of the top-level package of each
/// module the command runs with `-m`.
fn module_shadows(runners: &Runners) -> Result<GlobSet> {
    let mut patterns = Vec::new();
    for top in &runners.module_names {
        let name = globset::escape(top);
        for form in ["py", "pyc", "pyo", "so", "*.so", "pyd", "*.pyd", "pth"] {
            patterns.push(format!("**/{name}.{form}"));
        }
        patterns.push(format!("**/{name}/__init__.*"));
        patterns.push(format!("**/{name}/__main__.*"));
        patterns.push(format!("**/__pycache__/{name}.*"));
    }
    glob_set(&patterns, "runner module")
}

/// Paths no patch may touch; `runners`: the test command's own files
/// ([`runner_files`]), taken literally, and every form of a module it runs.
pub(super) fn protected(
    loaded: &config::LoadedConfig,
    repo: &Repo,
    ledger_root: &Path,
    runners: &Runners,
) -> Result<GlobSet> {
    let c = &loaded.config;
    let mut patterns = vec![
        config::FILE_NAME.to_string(),
        // Git reads these from the tree: attributes select filters and
        // drivers, and submodules name repositories to fetch.
        "**/.gitattributes".to_string(),
        ".gitmodules".to_string(),
        c.flakes.file.clone(),
        c.ledger.clone(),
    ];
    patterns.extend(c.protect.paths.iter().cloned());
    patterns.extend(runners.files.iter().map(|r| globset::escape(r)));
    for m in &runners.modules {
        let (dir, name) = m.rsplit_once('/').map_or(("", m.as_str()), |(d, n)| (d, n));
        let dir = if dir.is_empty() {
            String::new()
        } else {
            format!("{}/", globset::escape(dir))
        };
        let name = globset::escape(name);
        // What Python imports for a module name: source, bytecode, an
        // extension module, a package (not `pytest.ini`, configuration).
        for form in ["py", "pyc", "pyo", "so", "*.so", "pyd", "*.pyd"] {
            patterns.push(format!("{dir}{name}.{form}"));
        }
        patterns.push(format!("{dir}{name}/**"));
        patterns.push(format!("{dir}__pycache__/{name}.*"));
    }
    if let Some(rel) = crate::paths::relative_to(&repo.root, ledger_root)
        && !rel.as_os_str().is_empty()
    {
        patterns.push(rel.to_string_lossy().replace('\\', "/"));
    }
    for p in &c.properties {
        if !p.plugin.starts_with("builtin:") && !Path::new(&p.plugin).is_absolute() {
            patterns.push(p.plugin.clone());
        }
        patterns.extend(
            p.known_bad
                .iter()
                .filter(|k| !Path::new(k).is_absolute())
                .cloned(),
        );
    }
    glob_set(&patterns, "protected path")
}

fn glob_set(patterns: &[String], what: &str) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim_end_matches('/');
        let glob = |s: &str| {
            globset::GlobBuilder::new(s)
                .literal_separator(true)
                .build()
                .map_err(|e| Error::Usage(format!("invalid {what} pattern `{s}`: {e}")))
        };
        b.add(glob(p)?);
        // A plain directory name protects everything under it.
        b.add(glob(&format!("{p}/**"))?);
    }
    b.build()
        .map_err(|e| Error::Usage(format!("invalid {what} patterns: {e}")))
}

/// Header paths that leave the tree or touch protected paths.
/// The most components a path the patch writes may have. Every walk of a
/// trial tree (copies, the lock scan, the symlink bounds, removal) holds a
/// descriptor or more per level, so a patch of 1500 nested directories
/// made `check` fail with "too many open files" instead of judging it.
pub const MAX_DEPTH: usize = 100;

pub(super) fn before_apply(patch: &[u8], strip: u32, protected: &GlobSet) -> Vec<Finding> {
    let mut findings = Vec::new();
    for raw in crate::diff::header_paths(patch, strip) {
        let path = String::from_utf8_lossy(&raw).into_owned();
        let depth = raw.split(|&b| b == b'/').count();
        if escapes(&raw) {
            findings.push(finding(
                &path,
                "path escapes the repository (absolute, `..` or `.git`)",
            ));
        } else if depth > MAX_DEPTH {
            findings.push(finding(
                &path,
                &format!(
                    "path is {depth} components deep, past the {MAX_DEPTH} a trial tree may have (every walk of the tree holds a descriptor per level)"
                ),
            ));
        } else if std::str::from_utf8(&raw).is_err() {
            // Plugins see paths as text (WIT strings): a file of this name
            // would reach them under another name, so no property could
            // read what the patch does to it (a test weakened under a
            // Latin-1 name passed).
            findings.push(finding(
                &path,
                "path is not UTF-8: properties read paths as text, so what the patch does to this file could not be judged",
            ));
        } else if protected.is_match(&path) {
            findings.push(finding(&path, "patch touches a protected path"));
        }
    }
    findings
}

/// After applying: protected paths as git sees them, and every symlink in
/// the patched tree, judged by where it finally points. A link the trusted
/// base already has, ending at the same place there, is the base's own and
/// not the patch's doing (a patch can still redirect it, and is then named).
pub(super) fn after_apply(
    co: &Checkout,
    base: &Checkout,
    changes: &[Change],
    protected: &GlobSet,
    runners: &Runners,
) -> Result<Vec<Finding>> {
    let mut findings = Vec::new();
    for c in changes {
        for p in std::iter::once(&c.path).chain(c.old_path.iter()) {
            if protected.is_match(p) {
                findings.push(finding(p, "patch touches a protected path"));
            }
        }
    }
    // A module of a name the command runs with `-m`, added anywhere: a
    // directory on `sys.path` before site-packages (`PYTHONPATH=src`, an
    // editable install) would run it instead of the installed runner.
    // Changing one the base has is the code under test's business.
    let shadows = module_shadows(runners)?;
    for c in changes.iter().filter(|c| {
        matches!(
            c.kind,
            ChangeKind::Added | ChangeKind::Renamed | ChangeKind::Copied | ChangeKind::TypeChanged
        )
    }) {
        if shadows.is_match(&c.path) {
            findings.push(finding(
                &c.path,
                "patch adds a module named like the one the test command runs with `-m`: imported from the tree, it would run instead of the runner",
            ));
        }
    }
    let patched = open_tree(&co.tree)?;
    let mut links = Vec::new();
    symlinks(&patched, &co.tree, PathBuf::new(), &mut links)?;
    if !links.is_empty() {
        let base_dir = open_tree(&base.tree)?;
        for link in links {
            let end = resolve(&patched, &link);
            if end == Resolution::Inside || resolve(&base_dir, &link) == end {
                continue;
            }
            let target = patched
                .read_link_contents(&link)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            findings.push(finding(
                &link.to_string_lossy(),
                &format!("symlink to `{target}` {}", end.describe()),
            ));
        }
    }
    findings.dedup();
    Ok(findings)
}

fn open_tree(tree: &Path) -> Result<Dir> {
    Dir::open_ambient_dir(tree, cap_std::ambient_authority()).map_err(|e| Error::read(tree, e))
}

/// Every symlink under `dir` (at `rel` in the tree at `tree`), found without
/// following any: a linked directory is judged as a link, never walked.
fn symlinks(dir: &Dir, tree: &Path, rel: PathBuf, out: &mut Vec<PathBuf>) -> Result<()> {
    let at = tree.join(&rel);
    for entry in dir.entries().map_err(|e| Error::read(&at, e))? {
        let entry = entry.map_err(|e| Error::read(&at, e))?;
        let path = rel.join(entry.file_name());
        let ft = entry
            .file_type()
            .map_err(|e| Error::read(&tree.join(&path), e))?;
        if ft.is_symlink() {
            out.push(path);
        } else if ft.is_dir() {
            let sub = entry
                .open_dir()
                .map_err(|e| Error::read(&tree.join(&path), e))?;
            symlinks(&sub, tree, path, out)?;
        }
    }
    Ok(())
}

/// Links followed before a chain counts as cyclic (Linux's own limit).
const MAX_HOPS: usize = 40;

/// Where a path in the tree finally leads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolution {
    Inside,
    /// Out of the tree; the path from the point it left (`/...` or `../...`).
    Outside(String),
    /// Through the repository's metadata; the path from the tree's root.
    IntoGit(String),
    /// More than [`MAX_HOPS`] links: a cycle, or a chain too long to judge.
    TooDeep,
    /// The tree refused a look-up (the error, as text).
    Unreadable(String),
}

impl Resolution {
    fn describe(&self) -> String {
        match self {
            Resolution::Inside => "stays in the repository".into(),
            Resolution::Outside(to) => format!("resolves outside the repository (`{to}`)"),
            Resolution::IntoGit(to) => format!("resolves into `.git` (`{to}`)"),
            Resolution::TooDeep => {
                format!("is part of a cycle or a chain of more than {MAX_HOPS} links")
            }
            Resolution::Unreadable(e) => format!("cannot be resolved in the tree: {e}"),
        }
    }
}

/// One step of a path still to resolve.
enum Part {
    Root,
    Up,
    Name(OsString),
}

fn parts(path: &Path) -> impl DoubleEndedIterator<Item = Part> + '_ {
    path.components().filter_map(|c| match c {
        Component::RootDir | Component::Prefix(_) => Some(Part::Root),
        Component::ParentDir => Some(Part::Up),
        Component::Normal(n) => Some(Part::Name(n.to_owned())),
        Component::CurDir => None,
    })
}

fn render(lead: &[&OsStr], rest: &VecDeque<Part>) -> String {
    let mut out: Vec<String> = lead.iter().map(|s| s.to_string_lossy().into()).collect();
    for p in rest {
        out.push(match p {
            Part::Root => String::new(),
            Part::Up => "..".into(),
            Part::Name(n) => n.to_string_lossy().into(),
        });
    }
    out.join("/")
}

/// Resolves `path` (relative to the tree `root`) as the kernel would,
/// following each link in the tree as it is met, with every look-up made
/// through `root` so that nothing outside the tree is ever read. Below a
/// missing component or a file, resolution goes on lexically (`..` pops), so
/// a dangling link is judged by where it would lead.
fn resolve(root: &Dir, path: &Path) -> Resolution {
    let mut at: Vec<OsString> = Vec::new();
    let mut todo: VecDeque<Part> = parts(path).collect();
    let mut hops = 0;
    // The depth of the first component that is not a directory, if any:
    // nothing at or below it can be looked up.
    let mut lexical_from: Option<usize> = None;
    while let Some(part) = todo.pop_front() {
        match part {
            Part::Root => return Resolution::Outside(format!("/{}", render(&[], &todo))),
            Part::Up => {
                if at.pop().is_none() {
                    return Resolution::Outside(render(&[OsStr::new("..")], &todo));
                }
                if lexical_from.is_some_and(|d| at.len() <= d) {
                    lexical_from = None;
                }
            }
            Part::Name(name) => {
                let is_git = name.eq_ignore_ascii_case(".git");
                at.push(name);
                if is_git {
                    let lead: Vec<&OsStr> = at.iter().map(OsString::as_os_str).collect();
                    return Resolution::IntoGit(render(&lead, &todo));
                }
                if lexical_from.is_some() {
                    continue;
                }
                let here: PathBuf = at.iter().collect();
                match root.symlink_metadata(&here) {
                    Ok(m) if m.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_HOPS {
                            return Resolution::TooDeep;
                        }
                        let target = match root.read_link_contents(&here) {
                            Ok(t) => t,
                            Err(e) => return Resolution::Unreadable(e.to_string()),
                        };
                        at.pop();
                        for p in parts(&target).rev() {
                            todo.push_front(p);
                        }
                    }
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => lexical_from = Some(at.len() - 1),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                        ) =>
                    {
                        lexical_from = Some(at.len() - 1)
                    }
                    Err(e) => return Resolution::Unreadable(e.to_string()),
                }
            }
        }
    }
    Resolution::Inside
}

fn finding(path: &str, message: &str) -> Finding {
    Finding {
        path: path.to_string(),
        line: None,
        message: message.to_string(),
        frozen: false,
    }
}

/// An absolute path, a `..` component, or a `.git` component.
fn escapes(path: &[u8]) -> bool {
    path.starts_with(b"/")
        || path
            .split(|&b| b == b'/')
            .any(|c| c == b".." || c.eq_ignore_ascii_case(b".git"))
}

#[cfg(test)]
mod tests;
