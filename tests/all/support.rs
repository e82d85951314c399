//! Helpers: run the binary, find fixtures, make temp trees.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

pub fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "unexpected exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-ledger"));
    cmd.current_dir(dir);
    cmd
}

pub fn run(dir: &Path, args: &[&str]) -> Output {
    run_with_stdin(dir, args, None)
}

pub fn run_with_stdin(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = command(dir);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn agent-ledger");
    if let Some(bytes) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().expect("wait for agent-ledger");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// Captures the shipped complete diff as `run` in `dir/.agent-ledger`.
pub fn capture_complete(dir: &Path, run_id: &str) {
    let body = fixture("capture/complete-multifile.diff");
    run(
        dir,
        &["capture", "--run", run_id, "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
}

/// Lays a small fixture tree under `dir/tests/fixtures`.
pub fn fixture_tree(dir: &Path) {
    write(&dir.join("tests/fixtures/a.json"), "{\"a\": 1}\n");
    write(&dir.join("tests/fixtures/nested/b.txt"), "bee\n");
}
