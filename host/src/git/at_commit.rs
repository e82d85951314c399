//! What a commit holds: a file's bytes (`read_at`) and, for the trace's
//! continuity check, each path's entry as a trace records it
//! (`entries_at`, `entries_in`), its blobs streamed through sha256 by one
//! `git cat-file --batch`.

use super::{Listing, Repo, failed, not_started, run};
use crate::exit::{Error, Result};
use std::collections::BTreeMap;
use std::process::Stdio;

impl Repo {
    /// A file's bytes at a commit, or `None` when the path does not exist there.
    /// One `git cat-file --batch`: whether the path exists and its bytes
    /// come from the same process.
    pub fn read_at(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>> {
        use std::io::Write;
        // git reads the line with a CR before the newline stripped, and
        // `rev:path` is split at the revision's first colon.
        let unsayable = |s: &str| s.contains(['\n', '\r', '\0']);
        if unsayable(path) || unsayable(commit) || commit.contains(':') {
            return Err(Error::Usage(format!(
                "`{}` at `{}`: a path or revision with a line break, carriage return or NUL (or a revision with a colon) cannot be asked of git",
                path.escape_debug(),
                commit.escape_debug()
            )));
        }
        let spec = format!("{commit}:{path}");
        let (child, mut stdin) = self.cat_file_batch()?;
        // One short line: written whole before git answers.
        let written = stdin.write_all(format!("{spec}\n").as_bytes());
        drop(stdin);
        let out = child
            .wait_with_output()
            .map_err(|e| not_started("cat-file", e))?;
        if written.is_err() || !out.status.success() {
            return Err(failed(&format!("cat-file `{spec}`"), &out));
        }
        let bad = || Error::Internal(format!("unexpected git cat-file output for `{spec}`"));
        let newline = out
            .stdout
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(bad)?;
        let header = std::str::from_utf8(&out.stdout[..newline]).map_err(|_| bad())?;
        if header.ends_with(" missing") {
            return Ok(None);
        }
        let mut fields = header.split(' ');
        let (Some(_oid), Some(kind), Some(size), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad());
        };
        if kind != "blob" {
            return Err(Error::data(
                &self.root.join(path),
                format!("at {commit} this is a {kind}, not a file"),
            ));
        }
        let size: usize = size.parse().map_err(|_| bad())?;
        out.stdout
            .get(newline + 1..newline + 1 + size)
            .map(|body| Some(body.to_vec()))
            .ok_or_else(bad)
    }

    /// What `tree_ish` holds at each of `paths`, as a trace entry
    /// (`agent_ledger_trace::entry`: the sha256 of the blob with its kind);
    /// `None` where the path is absent or a directory. A submodule commit
    /// is `160000:` and its object id, which no span records.
    pub fn entries_at(
        &self,
        tree_ish: &str,
        paths: &[&[u8]],
    ) -> Result<BTreeMap<Vec<u8>, Option<String>>> {
        use std::os::unix::ffi::OsStrExt;
        let mut out: BTreeMap<Vec<u8>, Option<String>> =
            paths.iter().map(|p| (p.to_vec(), None)).collect();
        // (path, kind, blob id) of every wanted path that is a file.
        let mut blobs: Vec<(Vec<u8>, agent_ledger_trace::entry::Kind, String)> = Vec::new();
        if let Some(p) = paths.iter().find(|p| !Self::nameable(p)) {
            return Err(Error::data(
                &self.root.join(std::ffi::OsStr::from_bytes(p)),
                Self::UNNAMEABLE,
            ));
        }
        // At most 256 paths (of at most 4096 bytes) per call: 1 MiB of
        // arguments, within any ARG_MAX.
        for chunk in paths.chunks(256) {
            let listed = run(
                self.command()
                    .env("GIT_LITERAL_PATHSPECS", "1")
                    .args(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options"])
                    .arg(tree_ish)
                    .arg("--")
                    .args(chunk.iter().map(|p| std::ffi::OsStr::from_bytes(p))),
                "ls-tree",
            )?;
            for rec in listed.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
                let Some(tab) = rec.iter().position(|&b| b == b'\t') else {
                    return Err(Error::Internal("unexpected git ls-tree output".into()));
                };
                let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
                let Some(slot) = out.get_mut(path) else {
                    continue;
                };
                let meta = String::from_utf8_lossy(meta);
                let mut fields = meta.split(' ');
                let (mode, kind, oid) = (fields.next(), fields.next(), fields.next());
                match (
                    mode.and_then(agent_ledger_trace::entry::Kind::from_git_mode),
                    kind,
                    oid,
                ) {
                    (Some(k), Some("blob"), Some(oid)) => {
                        blobs.push((path.to_vec(), k, oid.into()))
                    }
                    (_, _, Some(oid)) => *slot = Some(format!("{}:{oid}", mode.unwrap_or(""))),
                    _ => return Err(Error::Internal("unexpected git ls-tree output".into())),
                }
            }
        }
        let hashes = self.blob_sha256s(&blobs)?;
        for ((path, kind, _), hash) in blobs.into_iter().zip(hashes) {
            out.insert(path, Some(agent_ledger_trace::entry::digest(kind, &hash)));
        }
        Ok(out)
    }

    /// `git cat-file --batch` started, with its stdin taken.
    /// Every caller writes all its requests and closes stdin before it
    /// reads, so git buffers its answers (`--buffer`) instead of flushing
    /// one pipe write per object.
    fn cat_file_batch(&self) -> Result<(std::process::Child, std::process::ChildStdin)> {
        let mut child = self
            .command()
            .args(["cat-file", "--batch", "--buffer"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| not_started("cat-file", e))?;
        let stdin = child.stdin.take().expect("piped");
        Ok((child, stdin))
    }

    /// Why a path that is not [`Repo::nameable`] is refused.
    pub const UNNAMEABLE: &str =
        "path holds a NUL byte or is longer than 4096 bytes: no tree can hold it";

    /// Whether `path` can be named to git on a command line: no NUL byte,
    /// and no longer than a path the filesystem could open (`PATH_MAX`).
    pub fn nameable(path: &[u8]) -> bool {
        !path.contains(&0) && path.len() <= 4096
    }

    /// What each of `paths` is in `listing` (a listing of this
    /// repository's), as [`Repo::entries_at`] says it: one `git cat-file`
    /// for the blobs, nothing for the tree.
    pub fn entries_in(
        &self,
        listing: &Listing,
        paths: &[&[u8]],
    ) -> Result<BTreeMap<Vec<u8>, Option<String>>> {
        let mut out: BTreeMap<Vec<u8>, Option<String>> = BTreeMap::new();
        let mut blobs: Vec<(Vec<u8>, agent_ledger_trace::entry::Kind, String)> = Vec::new();
        for p in paths {
            let slot = out.entry(p.to_vec()).or_default();
            let Some(e) = listing.get(p) else { continue };
            let mode = format!("{:o}", e.mode);
            match agent_ledger_trace::entry::Kind::from_git_mode(&mode) {
                Some(k) => blobs.push((p.to_vec(), k, e.oid.to_string())),
                None => *slot = Some(format!("{mode}:{}", e.oid)),
            }
        }
        let hashes = self.blob_sha256s(&blobs)?;
        for ((path, kind, _), hash) in blobs.into_iter().zip(hashes) {
            out.insert(path, Some(agent_ledger_trace::entry::digest(kind, &hash)));
        }
        Ok(out)
    }

    /// The sha256 of each blob's bytes (hex), in order: one `git cat-file
    /// --batch`, each blob streamed through the hash.
    fn blob_sha256s(
        &self,
        blobs: &[(Vec<u8>, agent_ledger_trace::entry::Kind, String)],
    ) -> Result<Vec<String>> {
        if blobs.is_empty() {
            return Ok(Vec::new());
        }
        // Each blob's bytes, streamed through sha256.
        let (mut child, mut stdin) = self.cat_file_batch()?;
        let ids: Vec<u8> = blobs
            .iter()
            .flat_map(|(_, _, oid)| format!("{oid}\n").into_bytes())
            .collect();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            stdin.write_all(&ids)
        });
        let mut reader = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let hashed = (|| -> std::io::Result<Vec<String>> {
            use sha2::Digest;
            use std::io::{BufRead, Read};
            let mut hashes = Vec::new();
            for _ in blobs {
                let mut header = String::new();
                reader.read_line(&mut header)?;
                let size: u64 = header
                    .trim_end()
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| {
                        std::io::Error::other(format!("header `{}`", header.trim_end()))
                    })?;
                let mut hasher = sha2::Sha256::new();
                let copied = std::io::copy(&mut (&mut reader).take(size), &mut hasher)?;
                if copied != size {
                    return Err(std::io::Error::other("short blob"));
                }
                let mut newline = [0u8; 1];
                reader.read_exact(&mut newline)?;
                hashes.push(hex::encode(hasher.finalize()));
            }
            Ok(hashes)
        })();
        let _ = writer.join();
        let status = child.wait().map_err(|e| not_started("cat-file", e))?;
        let hashes =
            hashed.map_err(|e| Error::Internal(format!("unexpected git cat-file output: {e}")))?;
        if !status.success() {
            return Err(Error::Internal("git cat-file --batch failed".into()));
        }
        Ok(hashes)
    }
}

#[cfg(test)]
mod tests {
    use super::Repo;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .current_dir(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// A repository whose one commit holds `a.txt` (`a\n`).
    fn one_commit() -> (tempfile::TempDir, Repo) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        std::fs::write(dir.join("a.txt"), b"a\n").unwrap();
        git(dir, &["add", "a.txt"]);
        git(dir, &["commit", "-qm", "one"]);
        let repo = Repo::open(dir).unwrap();
        (tmp, repo)
    }

    /// A path git cannot be handed (a NUL byte, past PATH_MAX) is an error
    /// that names it, not a failed spawn; many long paths fit the calls.
    #[test]
    fn entries_at_names_a_path_no_tree_can_hold() {
        let (_tmp, repo) = one_commit();
        for bad in [b"a\0b".to_vec(), vec![b'x'; 4097]] {
            let e = repo.entries_at("HEAD", &[b"a.txt", &bad]).unwrap_err();
            assert!(
                e.to_string().contains("NUL byte or is longer than 4096"),
                "{e}"
            );
        }
        let long: Vec<Vec<u8>> = (0..600)
            .map(|i| format!("{i:03}/{}", "y".repeat(4000)).into_bytes())
            .collect();
        let mut paths: Vec<&[u8]> = long.iter().map(Vec::as_slice).collect();
        paths.push(b"a.txt");
        let got = repo.entries_at("HEAD", &paths).unwrap();
        assert_eq!(got.len(), 601);
        assert!(got[&b"a.txt"[..]].is_some());
        assert!(got[&long[0]].is_none());
    }

    /// `a.txt\r` is not `a.txt`, and `HEAD:x` is no revision.
    #[test]
    fn read_at_refuses_what_git_would_read_as_something_else() {
        let (_tmp, repo) = one_commit();
        assert_eq!(repo.read_at("HEAD", "a.txt").unwrap().unwrap(), b"a\n");
        for (rev, path) in [
            ("HEAD", "a.txt\r"),
            ("HEAD", "a.txt\n"),
            ("HEAD", "a\0.txt"),
            ("HEAD:a.txt", "x"),
        ] {
            let e = repo.read_at(rev, path).unwrap_err().to_string();
            assert!(e.contains("cannot be asked of git"), "{e}");
        }
    }
}
