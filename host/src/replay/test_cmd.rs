//! The project's own test command (`check --test-cmd`), run in its own
//! patched checkout with no network: in a new network namespace, or (only
//! with `allow_network`) without one when no namespace can be made. The
//! command finds the report path it must write in `AGENT_LEDGER_JUNIT`.

use super::{tempdir, write_file};
use crate::exit::{Error, Result};
use crate::git::{Applied, Repo};
use crate::record::TestRun;
use std::process::{Command, Stdio};

/// A test command and whether it may run without a network namespace.
#[derive(Debug, Clone)]
pub struct TestCommand {
    pub command: String,
    pub allow_network: bool,
}

/// Runs `test` on `patch` applied to `base`. Returns how it ran and the
/// report (`None` when it wrote none).
pub fn run_tests(
    repo: &Repo,
    base: &str,
    patch: &[u8],
    test: &TestCommand,
) -> Result<(TestRun, Option<Vec<u8>>)> {
    let tmp = tempdir()?;
    let patch_file = tmp.path().join("patch.diff");
    write_file(&patch_file, patch)?;
    let co = repo.checkout(base, &tmp.path().join("tests"))?;
    if let Applied::Refused(msg) = co.apply(&patch_file)? {
        return Err(Error::Refused(format!(
            "the patch does not apply, so the test command cannot run: {msg}"
        )));
    }
    let isolated = Command::new("unshare")
        .args(["--net", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !isolated && !test.allow_network {
        return Err(Error::Refused(
            "no network namespace can be made here (`unshare --net`), so the test command would have network access; pass --allow-network to run it anyway".into(),
        ));
    }
    let report = tmp.path().join("junit.xml");
    let mut cmd = if isolated {
        let mut c = Command::new("unshare");
        c.args(["--net", "--", "sh", "-c", &test.command]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", &test.command]);
        c
    };
    let status = cmd
        .current_dir(&co.tree)
        .env("AGENT_LEDGER_JUNIT", &report)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| Error::Internal(format!("cannot run the test command: {e}")))?;
    let junit = match std::fs::read(&report) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::read(&report, e)),
    };
    let run = TestRun {
        command: test.command.clone(),
        network: if isolated { "isolated" } else { "allowed" }.into(),
        exit_code: status.code(),
    };
    Ok((run, junit))
}
