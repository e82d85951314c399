//! The project's own test command (`check --test-cmd`): untrusted code (the
//! test suite as the patch leaves it), run in its own patched copy inside
//! the process jail (`crate::jail`, which describes the sandbox), after the
//! WASI properties that do not read its report. This module is what a
//! suite's run needs around the jail: the tree it runs on (a hard-linked
//! copy shown through an overlay, or a checkout of its own), its `.git`, the
//! paths it must not see or write, its environment, and its report.
//!
//! When the kernel refuses the namespaces the command is not run, unless
//! the operator passes `--allow-unsandboxed` (alias `--allow-network`): then
//! it runs as the operator, in its own process group, with the same scrubbed
//! environment, limits and fresh `HOME`, and the record says
//! `sandbox: "none"`, `network: "allowed"`.

use super::{tempdir, write_file};
use crate::exit::{Error, Result};
use crate::git::Applied;
use crate::jail::{
    Caps, Jail, SANDBOX_HOME, SANDBOX_HOST_ID, give_away, host_root, run_unsandboxed,
    sandbox_host_id,
};
use crate::record::TestRun;
use crate::record::{TestNetwork, TestSandbox};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default wall-clock limit (`--test-timeout`).
pub const DEFAULT_TIMEOUT_SECS: u64 = 1800;
/// The default cap on what the command prints, stdout and stderr together
/// (`--test-output-cap`).
pub const DEFAULT_OUTPUT_CAP_MIB: u64 = 16;
/// The default cap on the command's memory, all its processes together
/// (`--test-memory`).
pub const DEFAULT_MEMORY_MIB: u64 = 4096;
/// The default cap on the processes (and threads) the command runs at once
/// (`--test-max-procs`).
pub const DEFAULT_MAX_PROCS: u64 = 512;

/// A test command and how it may run.
#[derive(Debug, Clone)]
pub struct TestCommand {
    pub command: String,
    /// Run without a sandbox when the kernel refuses namespaces
    /// (`--allow-unsandboxed`).
    pub allow_unsandboxed: bool,
    /// Killed when it runs longer (`--test-timeout`).
    pub timeout: Duration,
    /// Killed when it prints more, stdout and stderr together
    /// (`--test-output-cap`).
    pub output_cap: u64,
    /// Killed when its processes together hold more memory, in bytes
    /// (`--test-memory`).
    pub memory: u64,
    /// Forks fail past this many processes and threads at once
    /// (`--test-max-procs`; in the sandbox only).
    pub max_procs: u64,
    /// Host paths the command must not see besides the ones every run
    /// hides (the compile-cache directory).
    pub hidden: Vec<PathBuf>,
    /// Also run the command on the base revision, so that `tests_pass`
    /// can require every test that passed there to pass after the patch
    /// (on unless `--no-test-baseline`).
    pub baseline: bool,
    /// Host paths shown read-only inside the sandbox (`--test-ro`): a
    /// virtualenv or a toolchain under `$HOME`; checked by
    /// [`check_read_only`] before every run.
    pub read_only: Vec<PathBuf>,
    /// Variables passed in besides `PATH`, `LANG`, `HOME` and
    /// `AGENT_LEDGER_JUNIT` (`--test-env`), resolved.
    pub env: Vec<(String, String)>,
    /// Turns the command's output into its report when it writes none
    /// (`--test-log-parser`).
    pub log_parser: Option<crate::logparse::LogParser>,
    /// Where base-revision runs are cached across processes (the compile
    /// cache's directory; `None` with `--no-cache`): see `baselines`.
    pub cache_dir: Option<PathBuf>,
    /// Copy the trial's run (never the baseline's) to our stderr, escaped:
    /// `check` does; `batch` shows one line per trial instead.
    pub echo: bool,
}

impl TestCommand {
    /// The bounds of one run of it.
    pub(crate) fn caps(&self) -> Caps {
        Caps {
            timeout: self.timeout,
            output_cap: self.output_cap,
            memory: self.memory,
            max_procs: self.max_procs,
        }
    }

    /// What a baseline run depends on besides the base revision: trials
    /// of a batch on one base share a run with the same key.
    pub fn baseline_key(&self, fixtures: &[String], eval: Option<&str>) -> String {
        format!(
            "{:?}",
            (
                eval,
                &self.read_only,
                &self.env,
                self.log_parser,
                &self.command,
                self.allow_unsandboxed,
                self.timeout,
                self.output_cap,
                self.memory,
                self.max_procs,
                &self.hidden,
                fixtures
            )
        )
    }
}

/// Runs `test` on `patch` (with its strip level) applied to the base of
/// `trees`, or on the base itself when `patch` is `None` (the baseline), in
/// a checkout of its own. Returns how it ran, the report (`None` when it
/// wrote none) and everything it wrote (stdout, then stderr, each under a
/// header line: what `check` stores as `ID.test.log`). The
/// `fixtures` (the locked roots, repository-relative) are read-only inside
/// the sandbox: the lock was compared with the patched tree before the
/// command ran, so a suite that rewrote them at run time would be tested
/// against fixtures nobody locked.
pub fn run_tests(
    trees: &super::BaseTree,
    patch: Option<(&[u8], u32)>,
    eval: Option<(
        &crate::evaluation::TestPatch,
        &crate::record::LockedEvaluation,
    )>,
    test: &TestCommand,
    ledger_root: &Path,
    fixtures: &[String],
) -> Result<(TestRun, Option<Vec<u8>>, Vec<u8>)> {
    let (repo, base) = (trees.checkout.repo(), trees.base.as_str());
    let tmp = tempdir()?;
    // A hard-linked copy shown as an overlay's lower layer where the
    // kernel allows it (`test_tree`), a checkout of its own otherwise.
    let tests = tmp.path().join("tests");
    let mut overlay = super::test_tree::Overlay::new(tmp.path(), &tests.join("tree"))?;
    let co = match overlay {
        Some(_) => trees.checkout.link_copy(&tests)?,
        None => repo.checkout(base, &tests)?,
    };
    // The trial's run is shown; the baseline's output is counted, not
    // shown (it would only repeat the suite).
    let echo = test.echo && patch.is_some();
    if let Some((patch, strip)) = patch {
        let patch_file = tmp.path().join("patch.diff");
        write_file(&patch_file, patch)?;
        if let Applied::Refused(msg) = co.apply(&patch_file, strip)? {
            return Err(Error::Refused(format!(
                "the patch does not apply, so the test command cannot run: {msg}"
            )));
        }
    }
    if let Some((eval, locked)) = eval {
        crate::evaluation::install(&co, base, eval, locked, tmp.path())?;
    }
    // After every comparison with the lock: the suite may run git on its
    // tree, which holds the base commit and nothing later.
    co.add_git_dir(
        base,
        &trees.snapshot_pack(test.cache_dir.as_deref())?,
        overlay.is_some(),
    )?;
    let report_dir = tmp.path().join("report");
    let home = tmp.path().join("home");
    for dir in [&report_dir, &home] {
        std::fs::create_dir(dir).map_err(|e| Error::write(dir, e))?;
    }
    let report = report_dir.join("junit.xml");
    // Where the sandbox keeps the empty directories it shows over hidden
    // ones: its own, so that the scratch directory itself stays ours.
    let jail_scratch = tmp.path().join("jail");
    std::fs::create_dir(&jail_scratch).map_err(|e| Error::write(&jail_scratch, e))?;
    let host_id = host_root().then(sandbox_host_id);
    let host_user = host_id.as_ref().map(|h| h.id);
    // As root the run's user must own what it may write, but the shared
    // base's files are never chowned: the overlay's lower layer is an
    // idmapped mount of the tree instead (`idmap`), where they are its.
    let mut idmapped = None;
    if let (Some(o), Some(id)) = (overlay.as_mut(), host_user) {
        let at = tmp.path().join("lower");
        std::fs::create_dir(&at).map_err(|e| Error::write(&at, e))?;
        match super::idmap::mount(&co.tree, &at, id) {
            Ok(m) => {
                o.lower = m.path.clone();
                idmapped = Some(m);
            }
            Err(e) => {
                super::test_tree::refused(Some(&format!("no idmapped mount: {e}")));
                drop(host_id);
                drop(tmp);
                return run_tests(trees, patch, eval, test, ledger_root, fixtures);
            }
        }
    }
    if let Some(id) = host_user {
        // The scratch directory stays root's (a later run's sweep removes
        // it if this one is killed: it judges only directories of its own
        // user) and only traversable; what is in it is the sandbox user's,
        // but for the lock that marks it ours.
        use std::os::unix::fs::PermissionsExt;
        let top = tmp.path();
        std::fs::set_permissions(top, std::fs::Permissions::from_mode(0o711))
            .map_err(|e| Error::write(top, e))?;
        for entry in std::fs::read_dir(top).map_err(|e| Error::read(top, e))? {
            let entry = entry.map_err(|e| Error::read(top, e))?;
            let name = entry.file_name();
            let shared = idmapped.is_some() && (name == "tests" || name == "lower");
            if !shared && !name.to_string_lossy().contains("owner.lock") {
                give_away(&entry.path(), id)?;
            }
        }
    }
    let mut hidden = test.hidden.clone();
    hidden.push(repo.root.clone());
    // The history too, wherever it lies (a worktree's common directory, a
    // separate git directory, alternates): it holds commits later than
    // the base.
    hidden.extend(repo.history_dirs());
    hidden.push(ledger_root.to_path_buf());
    hidden.extend(crate::wasm::cache_key_path().and_then(|k| k.parent().map(Path::to_path_buf)));
    hidden.extend(std::env::var_os("HOME").map(PathBuf::from));
    hidden.extend(std::env::var_os("TMPDIR").map(PathBuf::from));
    // Every begun run's trace and key: the patched code has no business
    // with them.
    hidden.extend(
        crate::runs::registered()?
            .iter()
            .map(|r| r.trace_dir().to_path_buf())
            .filter(|d| !co.tree.starts_with(d)),
    );
    let read_only = read_only_roots(&co.tree, fixtures)?;
    let shown = check_read_only(&test.read_only, &hidden)?;
    let jail = Jail {
        tree: &co.tree,
        overlay: overlay.as_ref(),
        report_dir: &report_dir,
        hidden: &hidden,
        read_only: &read_only,
        shown: &shown,
        scratch: &jail_scratch,
        network: false,
        system_only: true,
        host_user,
    };
    let env = |home: &str| -> Vec<(String, String)> {
        let mut env = vec![
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
            ),
            ("HOME".to_string(), home.to_string()),
            (
                "AGENT_LEDGER_JUNIT".to_string(),
                report.to_string_lossy().into_owned(),
            ),
        ];
        env.extend(std::env::var("LANG").ok().map(|l| ("LANG".to_string(), l)));
        for (k, v) in &test.env {
            env.retain(|(name, _)| name != k);
            env.push((k.clone(), v.clone()));
        }
        env
    };

    let probed = jail.probe();
    if let (Err(why), Some(_)) = (&probed, &overlay) {
        // The next try copies; it is the overlay the kernel refuses if
        // the same sandbox without it can be made (if not, the copy's run
        // says why there is no sandbox).
        let plain = Jail {
            overlay: None,
            ..jail
        };
        super::test_tree::refused(plain.probe().is_ok().then_some(why.as_str()));
        // Unmounted before the scratch directory is removed.
        drop(idmapped);
        drop(tmp);
        return run_tests(trees, patch, eval, test, ledger_root, fixtures);
    }
    let started = std::time::Instant::now();
    let (sandbox, ran) = match probed {
        Ok(()) => (
            TestSandbox::Namespaces,
            jail.run(&test.command, &env(SANDBOX_HOME), &test.caps(), echo)?,
        ),
        Err(why) if test.allow_unsandboxed => {
            eprintln!(
                "warning: the test command runs without a sandbox (--allow-unsandboxed): {why}"
            );
            (
                TestSandbox::None,
                run_unsandboxed(
                    &test.command,
                    &co.tree,
                    &env(&home.to_string_lossy()),
                    &test.caps(),
                    echo,
                )?,
            )
        }
        Err(why) => {
            return Err(Error::Refused(format!(
                "the test command's sandbox cannot be made here ({why}), so it would run with this user's files, environment and network; pass --allow-unsandboxed to run it anyway"
            )));
        }
    };
    let elapsed = started.elapsed();
    let mut junit = read_report(&report)?;
    let mut log_parser = None;
    let mut subverted = Vec::new();
    if let Some(parser) = test.log_parser {
        // With a log parser the log is the account: a report file is what
        // the code under test could write, so it is never read.
        junit = None;
        if ran.stopped.is_none() {
            let stream = if parser.reads_stderr() {
                &ran.stderr
            } else {
                &ran.stdout
            };
            let parsed = crate::logparse::read(parser, stream)?;
            junit = parsed.report;
            subverted.extend(parsed.disagreement);
            log_parser = Some(parser);
        }
    } else if let Some(bytes) = &junit
        && ran.stopped.is_none()
    {
        // A report that does not parse is `tests_pass`'s to say.
        if let Ok(cases) = crate::junit::parse(Path::new("junit.xml"), bytes) {
            let failed = cases
                .iter()
                .filter(|c| c.status == crate::junit::Status::Failed)
                .count() as u64;
            // Either stream may hold the runner's count.
            let output = [
                String::from_utf8_lossy(&ran.stdout),
                String::from_utf8_lossy(&ran.stderr),
            ]
            .join("\n");
            subverted.extend(crate::logparse::report_disagreement(&output, failed));
        }
    }
    let mut completion_ids = ran.completion_ids;
    if let Some(report) = &junit {
        crate::completion_ids::scan(report, &mut completion_ids);
    }
    let run = TestRun {
        command: test.command.clone(),
        network: match sandbox {
            TestSandbox::None => TestNetwork::Allowed,
            TestSandbox::Namespaces => TestNetwork::Isolated,
        },
        sandbox: Some(sandbox),
        exit_code: ran.exit_code,
        stopped: ran.stopped,
        completion_ids: completion_ids.into_iter().collect(),
        baseline: None,
        stdout_tail: tail(&ran.stdout),
        stderr_tail: tail(&ran.stderr),
        log_parser,
        elapsed_ms: Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
        log: None,
        subverted,
    };
    let mut log = Vec::with_capacity(ran.stdout.len() + ran.stderr.len() + 64);
    log.extend_from_slice(b"==> stdout <==\n");
    log.extend_from_slice(&ran.stdout);
    if !ran.stdout.is_empty() && !ran.stdout.ends_with(b"\n") {
        log.push(b'\n');
    }
    log.extend_from_slice(b"==> stderr <==\n");
    log.extend_from_slice(&ran.stderr);
    Ok((run, junit, log))
}

/// How much of each output stream the record keeps.
pub const TAIL_BYTES: usize = 64 << 10;

/// The last [`TAIL_BYTES`] of `bytes`, as lossy UTF-8 (a character cut at
/// the start is dropped).
pub fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(TAIL_BYTES);
    let text = String::from_utf8_lossy(&bytes[start..]);
    text.trim_start_matches('\u{FFFD}').to_string()
}

/// Checks the host paths `--test-ro` shows: each must exist, and none may
/// hold or lie inside what every run hides (`hidden`: the ledger, the
/// checkout, the compile cache and its key, `$TMPDIR`, begun runs' traces),
/// except that a path inside `$HOME` may be shown (the rest of `$HOME`
/// stays hidden). Returns them canonical.
pub fn check_read_only(paths: &[PathBuf], hidden: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    let mut out = Vec::new();
    for p in paths {
        if !p.is_absolute() {
            return Err(Error::Usage(format!(
                "--test-ro `{}`: give an absolute path",
                p.display()
            )));
        }
        let real = std::fs::canonicalize(p)
            .map_err(|e| Error::Missing(format!("--test-ro `{}`: {e}", p.display())))?;
        if real == Path::new("/") {
            return Err(Error::Usage(
                "--test-ro `/`: the whole host is not a path to show".into(),
            ));
        }
        for h in hidden.iter().filter_map(|h| std::fs::canonicalize(h).ok()) {
            let inside_home = home.as_ref().is_some_and(|home| *home == h);
            if h.starts_with(&real) || (real.starts_with(&h) && !inside_home) {
                return Err(Error::Usage(format!(
                    "--test-ro `{}` would show `{}`, which the test command's sandbox hides",
                    p.display(),
                    h.display()
                )));
            }
        }
        // As root the sandbox is made as another user, which must be able
        // to reach the path (a mode 0700 `/root` stops it): say so, rather
        // than let the sandbox fail as if the kernel refused it.
        if host_root()
            && let Some(stop) = unreachable_by_others(&real)
        {
            return Err(Error::Usage(format!(
                "--test-ro `{}`: as root, the test command's sandbox is made as host uid {SANDBOX_HOST_ID}, which cannot reach it through `{}` (no search permission for others): allow it (`chmod o+x {}`) or keep the environment elsewhere",
                p.display(),
                stop.display(),
                stop.display()
            )));
        }
        out.push(real);
    }
    Ok(out)
}

/// The first directory on the way to `path` (itself included) that other
/// users may not search.
fn unreachable_by_others(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut at = PathBuf::from("/");
    for part in path.components().skip(1) {
        at.push(part);
        let meta = std::fs::metadata(&at).ok()?;
        if meta.is_dir() && meta.permissions().mode() & 0o001 == 0 {
            return Some(at);
        }
    }
    None
}

/// The fixture roots present in the patched copy, as paths in it. A root
/// that is missing (the drift check already judged that) is skipped; one
/// that is a symlink, or resolves out of the copy, is refused (the bounds
/// check already misses such a patch, so this is a second line).
fn read_only_roots(tree: &Path, roots: &[String]) -> Result<Vec<PathBuf>> {
    let canonical_tree = std::fs::canonicalize(tree).map_err(|e| Error::read(tree, e))?;
    let mut out = Vec::new();
    for root in roots {
        let path = tree.join(root.trim_end_matches('/'));
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::read(&path, e)),
            Ok(_) => {}
        }
        let real = std::fs::canonicalize(&path).map_err(|e| Error::read(&path, e))?;
        let Ok(inside) = real.strip_prefix(&canonical_tree) else {
            return Err(Error::Refused(format!(
                "fixture root `{root}` leaves the patched tree (to `{}`): the test command does not run",
                real.display()
            )));
        };
        out.push(tree.join(inside));
    }
    Ok(out)
}

/// The report the command wrote: a regular file only (a symlink the
/// command planted is never followed out of its sandbox), size-capped.
fn read_report(report: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(report) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::read(report, e)),
        Ok(meta) if !meta.is_file() => Err(Error::data(
            report,
            "the test command's report is not a regular file",
        )),
        Ok(_) => crate::input::read_file(report, crate::input::REPORT_CAP).map(Some),
    }
}
