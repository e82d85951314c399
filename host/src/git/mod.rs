//! Git plumbing for replay: resolving revisions, reading files from a
//! revision, and building trial trees in a temporary directory; and the one
//! place a git command is built (`command`, `Repo::command`).
//!
//! A trial tree never touches the user's checkout or repository: it has its
//! own index, its own object directory (the repository's objects are only an
//! alternate, read-only), and lives in a temp dir removed on drop.
//!
//! Every git the host runs is hermetic. Only the repository's own
//! configuration (the operator's) is read, never the global or system one;
//! attributes come from nowhere (the empty tree, never a `.gitattributes` a
//! patch or an agent wrote), so no filter, textconv, diff or merge driver is
//! ever selected; no hook, fsmonitor, pager, editor, askpass or credential
//! helper runs; replace refs are ignored; and no transport may be used, so
//! nothing reaches a network (a lazy fetch included). The overrides are on
//! the command line, which wins over the repository's configuration too.

use crate::exit::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod at_commit;
mod blob;
mod checkout;
mod delta;
mod listing;
mod listing_cache;
mod range;
mod stat_cache;
pub use checkout::{Applied, Checkout, ModeChange, NameStatus};
pub use delta::{Delta, Wanted, worktree_delta};
pub use listing::{Listing, TreeEntry};
pub use stat_cache::StatCache;

/// The empty tree of each object format: where attributes are read from.
const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
const EMPTY_TREE_SHA256: &str = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

/// Environment that could point git at another repository, inject
/// configuration, or name a program for it to run.
const CLEARED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_SHALLOW_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
];

/// Configuration given on the command line, where it wins over every file.
const OVERRIDES: &[&str] = &[
    // Hooks (`post-index-change` runs whenever an index is written).
    "core.hooksPath=/dev/null",
    // An fsmonitor is a program git runs whenever it reads an index.
    "core.fsmonitor=false",
    // The per-user attribute and ignore files (`$XDG_CONFIG_HOME/git/...`)
    // are read even without a global configuration file.
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.pager=cat",
    "core.askPass=",
    // An empty value clears the list of helpers.
    "credential.helper=",
    "core.useReplaceRefs=false",
    "protocol.allow=never",
];

/// A repository we read from.
#[derive(Debug, Clone)]
pub struct Repo {
    pub root: PathBuf,
    git_dir: PathBuf,
    objects: PathBuf,
    /// The empty tree in the repository's object format.
    empty_tree: &'static str,
    /// The commit HEAD named when the repository was opened (`None`: no
    /// commit yet, or a git directory of our own).
    head: Option<String>,
}

/// The error of a git that ran and failed: the one mapping of a failed git
/// (exit 70, with git's own message), for callers that drive a git process
/// themselves (a piped stdin); everyone else calls [`run`].
pub fn failed(what: &str, out: &Output) -> Error {
    let stderr = String::from_utf8_lossy(&out.stderr);
    Error::Internal(format!("git {what} failed: {}", stderr.trim()))
}

/// A remote's URL as it may be shown and recorded: any user name and
/// password (`https://user:token@host/...`, `token@host:path`), query and
/// fragment removed, and a trailing `.git` or `/`; `None` when nothing is
/// left or it is longer than 512 bytes.
pub fn display_url(url: &str) -> Option<String> {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let shown = match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            if host.is_empty() {
                return None;
            }
            format!("{scheme}://{host}{path}")
        }
        // scp-like `[user@]host:path`: the part before `@` may be a token.
        None => match (url.find('@'), url.find(':')) {
            (Some(at), Some(colon)) if at < colon => url[at + 1..].to_string(),
            _ => url.to_string(),
        },
    };
    let shown = shown.trim_end_matches('/');
    let shown = shown.strip_suffix(".git").unwrap_or(shown);
    (!shown.is_empty() && shown.len() <= 512 && !shown.chars().any(char::is_control))
        .then(|| shown.to_string())
}

/// The error of a git that could not be started.
pub fn not_started(what: &str, e: std::io::Error) -> Error {
    Error::Internal(format!("cannot run git {what}: {e}"))
}

/// A hermetic git command: the only way the host builds one. Attributes
/// come from the SHA-1 empty tree; in a SHA-256 repository git refuses to
/// run rather than read them from the tree (`Repo::command` knows the
/// format).
pub fn command() -> Command {
    hermetic(EMPTY_TREE_SHA1)
}

fn hermetic(empty_tree: &str) -> Command {
    let mut cmd = Command::new("git");
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_ATTR_SOURCE", empty_tree)
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_NO_LAZY_FETCH", "1")
        // Set, it wins over every `protocol.*.allow`; naming no protocol,
        // it allows none.
        .env("GIT_ALLOW_PROTOCOL", "")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_EDITOR", ":")
        .env("GIT_LFS_SKIP_SMUDGE", "1")
        // `status` must not write the index it only reads.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null());
    for o in OVERRIDES {
        cmd.arg("-c").arg(o);
    }
    cmd
}

/// Runs a hermetic git (from [`command`] or [`Repo::command`]) to the end:
/// its output when it exits 0, else the one error of a failed git. `what`
/// names the command for the message (`"status in `DIR`"`).
pub fn run(cmd: &mut Command, what: &str) -> Result<Output> {
    let out = cmd.output().map_err(|e| not_started(what, e))?;
    if !out.status.success() {
        return Err(failed(what, &out));
    }
    Ok(out)
}

impl Repo {
    /// The repository's git directory (absolute).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// Every directory that holds this repository's history: its git
    /// directory, the common directory of a worktree (the objects'
    /// parent), the object directory and each alternate it names (one
    /// level: an alternate's own alternates are listed too). What the test
    /// command must never see, wherever they lie.
    pub fn history_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.git_dir.clone(), self.objects.clone()];
        dirs.extend(self.objects.parent().map(Path::to_path_buf));
        let mut pending = vec![self.objects.clone()];
        while let Some(objects) = pending.pop() {
            let Ok(text) = std::fs::read_to_string(objects.join("info").join("alternates")) else {
                continue;
            };
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let alt = objects.join(line);
                let alt = alt.canonicalize().unwrap_or(alt);
                if dirs.len() < 64 && !dirs.contains(&alt) {
                    dirs.extend(alt.parent().map(Path::to_path_buf));
                    dirs.push(alt.clone());
                    pending.push(alt);
                }
            }
        }
        dirs
    }

    pub fn open(root: &Path) -> Result<Repo> {
        let out = command()
            .arg("-C")
            .arg(root)
            .args([
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-dir",
                "--git-path",
                "objects",
                "--show-object-format",
                // HEAD's commit in the same process; it fails (exit 1, no
                // line) only before the first commit.
                "--verify",
                "--quiet",
                "--end-of-options",
                "HEAD^{commit}",
            ])
            .output()
            .map_err(|e| not_started("rev-parse", e))?;
        let unborn = out.status.code() == Some(1) && out.stdout.split(|&b| b == b'\n').count() == 5;
        if !out.status.success() && !unborn {
            return Err(Error::Missing(format!(
                "`{}` is not a git repository: {}",
                root.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let (Some(top), Some(git_dir), Some(objects), Some(format)) =
            (lines.next(), lines.next(), lines.next(), lines.next())
        else {
            return Err(Error::Internal(
                "unexpected output from git rev-parse".into(),
            ));
        };
        let head = match lines.next() {
            Some(id)
                if !unborn
                    && matches!(id.len(), 40 | 64)
                    && id.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                Some(id.to_string())
            }
            None if unborn => None,
            _ => {
                return Err(Error::Internal(
                    "unexpected output from git rev-parse".into(),
                ));
            }
        };
        let empty_tree = match format {
            "sha1" => EMPTY_TREE_SHA1,
            "sha256" => EMPTY_TREE_SHA256,
            other => {
                return Err(Error::Internal(format!(
                    "`{}` uses the object format `{other}`, which agent-ledger does not know",
                    root.display()
                )));
            }
        };
        Ok(Repo {
            root: top.into(),
            git_dir: git_dir.into(),
            objects: objects.into(),
            empty_tree,
            head,
        })
    }

    /// The repository as people name it, for reports: its `origin` remote's
    /// URL without credentials ([`display_url`]), else the name of its
    /// top-level directory. Untrusted (the repository's configuration says
    /// it): shown, never judged.
    pub fn display_name(&self) -> Option<String> {
        let origin = self
            .command()
            .args(["config", "--get", "remote.origin.url"])
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|url| display_url(url.trim()));
        origin.or_else(|| {
            self.root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
    }

    /// The full id of the commit HEAD named when the repository was opened
    /// ([`Repo::open`]); `None` before the first commit and for a git
    /// directory of our own ([`Repo::isolated`]).
    pub fn head(&self) -> Option<&str> {
        self.head.as_deref()
    }

    /// A hermetic git command (see the module docs) on this repository and
    /// its working tree, run at the top of the working tree.
    pub fn command(&self) -> Command {
        let mut cmd = hermetic(self.empty_tree);
        cmd.env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.root)
            .current_dir(&self.root);
        cmd
    }

    /// This working tree seen through a git directory of our own, made in
    /// `dir`: HEAD detached at `commit`, this repository's objects as an
    /// alternate (read-only; objects written go to `dir`), and nothing else:
    /// no configuration (so no filter or other program the repository's
    /// config names), no `info/attributes` (so no attribute selects one,
    /// and no text conversion hides a change), no `info/exclude`, no hooks,
    /// no index. What an agent wrote into the repository's git directory
    /// has no say in how its tree is judged.
    pub fn isolated(&self, commit: &str, dir: &Path) -> Result<Repo> {
        let git_dir = dir.join("git");
        let objects = git_dir.join("objects");
        let info = objects.join("info");
        let refs = git_dir.join("refs");
        for d in [&info, &refs] {
            std::fs::create_dir_all(d).map_err(|e| Error::write(d, e))?;
        }
        let write = |path: PathBuf, text: String| {
            std::fs::write(&path, text).map_err(|e| Error::write(&path, e))
        };
        let config = if self.empty_tree == EMPTY_TREE_SHA256 {
            "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectformat = sha256\n"
        } else {
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        };
        write(git_dir.join("config"), config.to_string())?;
        write(git_dir.join("HEAD"), format!("{commit}\n"))?;
        write(
            info.join("alternates"),
            format!("{}\n", self.objects.display()),
        )?;
        Ok(Repo {
            root: self.root.clone(),
            git_dir,
            objects,
            empty_tree: self.empty_tree,
            head: None,
        })
    }

    /// The full object id of `rev` as a commit.
    pub fn resolve_commit(&self, rev: &str) -> Result<String> {
        self.commit_of(rev, "base revision")
    }

    /// A command in a trial tree: its own index and object directory.
    pub(super) fn trial_git(&self, work_tree: &Path, index: &Path, objects: &Path) -> Command {
        let mut cmd = self.command();
        // Hard-linked copies share inodes, and making a link changes an
        // inode's ctime (as root, a test command's tree is also given to
        // the sandbox's user, which changes the owner of the inodes it
        // shares): only content-relevant stat fields may count.
        cmd.args([
            "-c",
            "core.trustctime=false",
            "-c",
            "core.checkStat=minimal",
        ]);
        cmd.env("GIT_WORK_TREE", work_tree)
            .env("GIT_INDEX_FILE", index)
            .env("GIT_OBJECT_DIRECTORY", objects)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &self.objects)
            .current_dir(work_tree);
        cmd
    }

    /// Every path tracked at `commit` (files, links and submodules).
    pub fn tracked_at(&self, commit: &str) -> Result<Vec<String>> {
        let out = run(
            self.command().args([
                "ls-tree",
                "-r",
                "-z",
                "--name-only",
                "--end-of-options",
                commit,
            ]),
            "ls-tree",
        )?;
        Ok(out
            .stdout
            .split(|&b| b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect())
    }

    /// Checks out `commit` into `dir/tree` with its own index `dir/index`.
    pub fn checkout(&self, commit: &str, dir: &Path) -> Result<Checkout> {
        let tree = dir.join("tree");
        let objects = dir.join("objects");
        std::fs::create_dir_all(&tree).map_err(|e| Error::write(&tree, e))?;
        std::fs::create_dir_all(&objects).map_err(|e| Error::write(&objects, e))?;
        let co = Checkout {
            tree,
            index: dir.join("index"),
            objects,
            repo: self.clone(),
        };
        run(co.git().args(["read-tree", commit]), "read-tree")?;
        run(
            co.git().args(["checkout-index", "-a", "-f", "-u"]),
            "checkout-index",
        )?;
        Ok(co)
    }
}

#[cfg(test)]
mod tests {
    use super::display_url;

    #[test]
    fn a_remote_is_shown_without_its_credentials() {
        for (url, shown) in [
            (
                "https://x-access-token:ghp_secret@github.com/org/repo.git",
                Some("https://github.com/org/repo"),
            ),
            (
                "https://github.com/org/repo/",
                Some("https://github.com/org/repo"),
            ),
            (
                "https://host/org/repo.git?private_token=abc#frag",
                Some("https://host/org/repo"),
            ),
            ("ssh://git@host:22/org/repo", Some("ssh://host:22/org/repo")),
            ("token@github.com:org/repo.git", Some("github.com:org/repo")),
            ("github.com:org/repo", Some("github.com:org/repo")),
            ("/srv/git/repo.git", Some("/srv/git/repo")),
            ("https://user:pw@", None),
            ("", None),
            ("https://host/a\u{1b}[2Jb", None),
        ] {
            assert_eq!(display_url(url).as_deref(), shown, "{url}");
        }
        assert_eq!(display_url(&"x".repeat(600)), None);
    }
}
