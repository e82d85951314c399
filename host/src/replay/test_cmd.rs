//! The project's own test command (`check --test-cmd`): untrusted code (the
//! test suite as the patch leaves it), run in its own patched copy inside a
//! sandbox, after the WASI properties that do not read its report.
//!
//! The sandbox is made with `hakoniwa` (new user, mount, PID, network, IPC
//! and UTS namespaces; no helper binary to install, Rust 1.95, works as root
//! and as an ordinary user). Inside it:
//!
//! - the command runs as a non-root user of its own user namespace, so it
//!   holds no capabilities and cannot remount anything read-write (as
//!   root, the sandbox is made by a thread that has dropped to
//!   [`SANDBOX_HOST_ID`], which owns the command's scratch directory, so
//!   its processes are that user on the host, never uid 0);
//! - writable: the private patched copy, the report's directory, and a
//!   private `/tmp` (a size-capped tmpfs, also `/dev/shm`); everything else
//!   the command sees is a read-only bind of the host's top-level
//!   directories (and of every mount below them), except `/proc` (the
//!   sandbox's own), `/dev` (null, zero, full, random, urandom: no
//!   terminal), and
//!   `/home`, `/root`, `/run`, `/mnt`, `/media`, `/sys`, `/tmp`, which are
//!   not there at all;
//! - not visible (an empty tmpfs over them): `$HOME`, the compile-cache
//!   directory, the cache key's directory, the ledger, the user's
//!   checkout, and `$TMPDIR` (where the trial's other trees live);
//! - environment: `PATH`, `LANG`, a fresh `HOME` in the private `/tmp`,
//!   and `AGENT_LEDGER_JUNIT`; nothing else;
//! - no network (a new network namespace with only a loopback that is
//!   down), and every process dies with the command (PID namespace);
//! - a wall-clock limit, an output cap and a memory cap (the anonymous
//!   memory of every process in its PID namespace together, plus what it
//!   keeps in its private `/tmp` and `/dev/shm`, looked at every 100 ms),
//!   any of which kills it; and a cap on the number of processes it runs at
//!   once (`RLIMIT_NPROC` in its own user namespace, which the kernel counts
//!   per namespace, so a fork bomb fails to fork instead of filling the
//!   host; the kernel never applies it to uid 0, so the host also counts
//!   the processes every 20 ms and kills the command past the cap).
//!
//! When the kernel refuses the namespaces the command is not run, unless
//! the operator passes `--allow-unsandboxed` (alias `--allow-network`): then
//! it runs as the operator, in its own process group, with the same scrubbed
//! environment, limits and fresh `HOME`, and the record says
//! `sandbox: "none"`, `network: "allowed"`.

use super::{tempdir, write_file};
use crate::exit::{Error, Result};
use crate::git::Applied;
use crate::record::TestRun;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
/// The uid and gid the command runs as inside its user namespace when the
/// host user is root (any non-zero id: it holds no capabilities).
pub const SANDBOX_ID: u32 = 1000;
/// The host uid and gid the test command runs as when agent-ledger runs as
/// root: never uid 0, which kernel interfaces trust without capabilities (a
/// sandboxed uid 0 wrote `kernel.core_pattern` and had the kernel run its
/// script as host root, and wrote the limits of its own cgroup through a
/// cgroupfs mounted in a namespace of its own). It owns the command's copy
/// and scratch directory and nothing else.
pub const SANDBOX_HOST_ID: u32 = 0x7ff0_0000;
/// The size of the private `/tmp` and `/dev/shm`.
const TMPFS_SIZE: &str = "size=1g";
/// How often the host looks at the command while it runs.
const POLL: Duration = Duration::from_millis(20);
/// Open descriptors per process of the test command.
const TEST_NOFILE: u64 = 4096;
/// How often (in polls) the host adds up the command's memory.
const MEMORY_EVERY: u32 = 5;

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

/// Why the host stopped the command.
const STOPPED_TIMEOUT: &str = "timeout";
const STOPPED_OUTPUT: &str = "output_cap";
const STOPPED_MEMORY: &str = "memory_cap";
const STOPPED_PROCESSES: &str = "process_cap";

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
    hidden.extend(crate::sandbox::cache_key_path().and_then(|k| k.parent().map(Path::to_path_buf)));
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
            "namespaces",
            jail.run(&test.command, &env(SANDBOX_HOME), test, echo)?,
        ),
        Err(why) if test.allow_unsandboxed => {
            eprintln!(
                "warning: the test command runs without a sandbox (--allow-unsandboxed): {why}"
            );
            (
                "none",
                run_unsandboxed(
                    &test.command,
                    &co.tree,
                    &env(&home.to_string_lossy()),
                    test,
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
    if junit.is_none()
        && ran.stopped.is_none()
        && let Some(parser) = test.log_parser
    {
        let mut log = ran.stdout.clone();
        log.push(b'\n');
        log.extend_from_slice(&ran.stderr);
        junit = crate::logparse::report(parser, &log)?;
        log_parser = Some(parser.as_str().to_string());
    }
    let mut completion_ids = ran.completion_ids;
    if let Some(report) = &junit {
        crate::completion_ids::scan(report, &mut completion_ids);
    }
    let run = TestRun {
        command: test.command.clone(),
        network: if sandbox == "none" {
            "allowed"
        } else {
            "isolated"
        }
        .into(),
        sandbox: Some(sandbox.into()),
        exit_code: ran.exit_code,
        stopped: ran.stopped.map(str::to_string),
        completion_ids: completion_ids.into_iter().collect(),
        baseline: None,
        stdout_tail: tail(&ran.stdout),
        stderr_tail: tail(&ran.stderr),
        log_parser,
        elapsed_ms: Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
        log: None,
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

/// `HOME` inside the sandbox.
pub(crate) const SANDBOX_HOME: &str = "/tmp/home";

/// How the command ended.
struct Ran {
    exit_code: Option<i32>,
    stopped: Option<&'static str>,
    /// Completion ids the command printed (see `completion_ids`).
    completion_ids: BTreeSet<String>,
    /// What it printed, up to the output cap.
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// The sandbox's layout: also what `trace exec` runs an agent's command in
/// (the workspace as `tree`, the trace's directory among `hidden`).
pub(crate) struct Jail<'a> {
    /// Writable, at its own path: itself, or (with `overlay`) an overlay
    /// with it as the read-only lower layer.
    pub tree: &'a Path,
    /// Show `tree` as the lower layer of this overlay, never writable
    /// itself (`test_tree`).
    pub overlay: Option<&'a super::test_tree::Overlay>,
    /// Writable too (the test command's report).
    pub report_dir: &'a Path,
    /// Shown as empty, read-only directories.
    pub hidden: &'a [PathBuf],
    /// Paths inside `tree` bound read-only over the writable copy.
    pub read_only: &'a [PathBuf],
    /// Host paths shown read-only even where a hidden one holds them
    /// (`--test-ro`, checked by [`check_read_only`]).
    pub shown: &'a [PathBuf],
    /// Where the empty directories shown over hidden ones live.
    pub scratch: &'a Path,
    /// Keep the host's network (`trace exec --allow-network`); otherwise a
    /// network namespace of its own with only a loopback that is down.
    pub network: bool,
    /// Show only the system directories ([`SYSTEM_DIRS`]) of the host, not
    /// every other top-level directory: the test command's view, where
    /// nothing but the tree, the system and `--test-ro` paths is visible (a
    /// dataset holding the upstream fix, other models' predictions, data
    /// directories). `trace exec` keeps the wider view.
    pub system_only: bool,
    /// The host uid (and gid) to make the sandbox as, when this process is
    /// root ([`SANDBOX_HOST_ID`]): the thread that makes it drops to that
    /// user first, so the sandbox's user namespace belongs to it and its
    /// processes are that user on the host, never uid 0. `tree`,
    /// `report_dir` and `scratch` must be that user's.
    pub host_user: Option<u32>,
}

/// The top-level directories the test command sees ([`Jail::system_only`]):
/// programs, libraries and system configuration. Anything else it needs (a
/// virtualenv, a toolchain, a data directory) is shown with `--test-ro`.
const SYSTEM_DIRS: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "nix",
];

/// Top-level directories never bound into the sandbox: made fresh
/// (`/proc`, `/dev`, `/tmp`), or nobody's business (homes, runtime sockets,
/// removable and other mounts, kernel interfaces).
/// Made fresh in every sandbox: never a hidden path's bind.
const FRESH: &[&str] = &["/tmp", "/dev", "/dev/shm", "/proc"];

const NOT_BOUND: &[&str] = &[
    "proc",
    "dev",
    "tmp",
    "sys",
    "run",
    "home",
    "root",
    "mnt",
    "media",
    "lost+found",
];

impl Jail<'_> {
    fn container(&self) -> Result<hakoniwa::Container> {
        use hakoniwa::{Container, MountOptions, Namespace};
        let mut c = Container::new();
        for ns in [Namespace::Network, Namespace::Ipc, Namespace::Uts] {
            if ns == Namespace::Network && self.network {
                continue;
            }
            c.unshare(ns);
        }
        let me = nix::unistd::geteuid().as_raw();
        let my_group = nix::unistd::getegid().as_raw();
        c.uidmap(if me == 0 { SANDBOX_ID } else { me });
        c.gidmap(if me == 0 { SANDBOX_ID } else { my_group });
        c.hostname("agent-ledger-tests");
        let root = Path::new("/");
        let top = std::fs::read_dir(root).map_err(|e| Error::read(root, e))?;
        let mut bound = Vec::new();
        for entry in top {
            let entry = entry.map_err(|e| Error::read(root, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if NOT_BOUND.contains(&name.as_ref())
                || (self.system_only && !SYSTEM_DIRS.contains(&name.as_ref()))
            {
                continue;
            }
            let path = entry.path();
            let ft = entry.file_type().map_err(|e| Error::read(&path, e))?;
            if ft.is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| Error::read(&path, e))?;
                c.symlink(&target.to_string_lossy(), &path.to_string_lossy());
            } else if ft.is_dir() {
                c.bindmount_ro(&path.to_string_lossy(), &path.to_string_lossy());
                bound.push(path);
            }
        }
        // A read-only remount does not reach the mounts below a bind: bind
        // each of them read-only too.
        for mount in host_mounts() {
            if mount != root
                && bound.iter().any(|b| mount.starts_with(b))
                && !self.hidden.iter().any(|h| mount.starts_with(h))
            {
                let m = mount.to_string_lossy();
                c.bindmount_ro(&m, &m);
            }
        }
        let flags = MountOptions::NOSUID | MountOptions::NODEV;
        let tmpfs = |c: &mut Container, target: &str| {
            c.mount(
                "tmpfs",
                target,
                "tmpfs",
                flags,
                Some(format!("{TMPFS_SIZE},mode=1777")),
            );
        };
        // A `/dev` of its own with the harmless devices only: not hakoniwa's
        // devfs, which binds `/dev/tty` (the operator's terminal, for a
        // process of its session) and the terminal itself as `/dev/console`.
        // The command also runs in a session of its own with no controlling
        // terminal ([`in_new_session`]). Not `nodev`: the devices bound
        // onto it are the host's own, which a `nodev` parent makes
        // unopenable; the tmpfs itself holds no device the command could
        // make (it has no capability to `mknod`).
        c.mount(
            "tmpfs",
            "/dev",
            "tmpfs",
            MountOptions::NOSUID,
            Some("size=1m,mode=755".to_string()),
        );
        for dev in DEVICES {
            let dev = format!("/dev/{dev}");
            c.bindmount_rw(&dev, &dev);
        }
        for (i, name) in ["stdin", "stdout", "stderr"].iter().enumerate() {
            c.symlink(&format!("/proc/self/fd/{i}"), &format!("/dev/{name}"));
        }
        c.symlink("/proc/self/fd", "/dev/fd");
        tmpfs(&mut c, "/tmp");
        tmpfs(&mut c, "/dev/shm");
        // Each hidden directory is a read-only bind of an empty directory of
        // its own (an empty tmpfs would be writable by the command, and
        // could not hold the mount points of a tree below it).
        // Canonical, because the sandbox mirrors the real directories; one
        // inside another hidden one is hidden with it (binding it too would
        // make its mount point appear in the empty directory).
        let hidden: Vec<PathBuf> = self
            .hidden
            .iter()
            .filter_map(|h| std::fs::canonicalize(h).ok())
            .filter(|h| !FRESH.iter().any(|f| h == Path::new(f)) && h != root && h.is_dir())
            .collect();
        for (i, hide) in hidden.iter().enumerate() {
            if hidden.iter().any(|h| h != hide && hide.starts_with(h)) {
                continue;
            }
            let empty = self.scratch.join(format!("hidden-{i}"));
            std::fs::create_dir_all(&empty).map_err(|e| Error::write(&empty, e))?;
            c.bindmount_ro(&empty.to_string_lossy(), &hide.to_string_lossy());
        }
        // After the hidden directories they may lie in (hakoniwa mounts in
        // target-path order).
        for shown in self.shown {
            let shown = shown.to_string_lossy();
            c.bindmount_ro(&shown, &shown);
        }
        c.dir(SANDBOX_HOME, 0o700);
        // Where a bind of a path inside the tree takes it from: the
        // overlay's view, where there is one (never its lower layer).
        let view = |p: &Path| match self.overlay {
            Some(o) => o.inside(p).to_string_lossy().into_owned(),
            None => p.to_string_lossy().into_owned(),
        };
        match self.overlay {
            Some(o) => {
                c.rootdir(&o.root);
                c.mount(
                    "overlay",
                    &self.tree.to_string_lossy(),
                    "overlay",
                    MountOptions::NOSUID | MountOptions::NODEV,
                    Some(o.options()),
                );
            }
            None => {
                let rw = self.tree.to_string_lossy();
                c.bindmount_rw(&rw, &rw);
            }
        }
        let rw = self.report_dir.to_string_lossy();
        c.bindmount_rw(&rw, &rw);
        // Mounted after the tree (hakoniwa mounts in target-path order).
        // Every directory between the tree and a read-only root is bound
        // onto itself (still writable): a mount point cannot be renamed, so
        // the command cannot move a root's parent away, make a fixture of
        // its own there and move it back.
        let mut ancestors = BTreeSet::new();
        for ro in self.read_only {
            let mut dir = ro.parent();
            while let Some(d) = dir {
                if d == self.tree || !d.starts_with(self.tree) {
                    break;
                }
                ancestors.insert(d.to_path_buf());
                dir = d.parent();
            }
        }
        for a in &ancestors {
            c.bindmount_rw(&view(a), &a.to_string_lossy());
        }
        for ro in self.read_only {
            c.bindmount_ro(&view(ro), &ro.to_string_lossy());
        }
        Ok(c)
    }

    /// Runs `argv` in the sandbox in `cwd`, with our stdin, stdout and
    /// stderr and no time limit (`trace exec`). Returns its exit code, or
    /// `None` and why when it did not exit on its own (a signal).
    pub(crate) fn exec(
        &self,
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
    ) -> Result<std::result::Result<i32, String>> {
        use std::io::IsTerminal;
        let c = self.container()?;
        let argv = in_new_session(argv)?;
        let mut cmd = c.command(&argv[0]);
        // Never the operator's terminal itself: what is typed is not the
        // command's to read (stdin is empty then), and what it prints
        // reaches a terminal only through the escaping of untrusted text.
        let tty_in = std::io::stdin().is_terminal();
        let tty_out = std::io::stdout().is_terminal();
        let tty_err = std::io::stderr().is_terminal();
        let stream = |tty: bool| {
            if tty {
                hakoniwa::Stdio::piped()
            } else {
                hakoniwa::Stdio::inherit()
            }
        };
        cmd.args(&argv[1..])
            .current_dir(cwd)
            .stdin(if tty_in {
                dev_null().map_err(|e| Error::read(Path::new("/dev/null"), e))?
            } else {
                hakoniwa::Stdio::inherit()
            })
            .stdout(stream(tty_out))
            .stderr(stream(tty_err));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Internal(format!("cannot run the traced command: {e}")))?;
        let pumps: Vec<std::thread::JoinHandle<()>> = [
            child
                .stdout
                .take()
                .map(|r| (Box::new(r) as Box<dyn Read + Send>, false)),
            child
                .stderr
                .take()
                .map(|r| (Box::new(r) as Box<dyn Read + Send>, true)),
        ]
        .into_iter()
        .flatten()
        .map(|(mut r, to_err)| {
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let text = crate::output::inert_stream(&buf[..n]);
                    let _ = if to_err {
                        std::io::stderr().lock().write_all(text.as_bytes())
                    } else {
                        std::io::stdout().lock().write_all(text.as_bytes())
                    };
                }
            })
        })
        .collect();
        let status = child
            .wait()
            .map_err(|e| Error::Internal(format!("cannot wait for the traced command: {e}")))?;
        for p in pumps {
            let _ = p.join();
        }
        if status.exit_code.is_none() && status.code == 125 {
            return Err(Error::Internal(format!(
                "the traced command's sandbox failed: {}",
                status.reason
            )));
        }
        Ok(status.exit_code.ok_or(status.reason))
    }

    /// Makes the sandbox once with a command that does nothing: an error
    /// says why the kernel (or this machine) refuses it.
    pub(crate) fn probe(&self) -> std::result::Result<(), String> {
        as_user(self.host_user, None, || self.probe_here()).unwrap_or_else(|e| Err(e.to_string()))
    }

    fn probe_here(&self) -> std::result::Result<(), String> {
        let c = self.container().map_err(|e| e.to_string())?;
        let null = || dev_null().map_err(|e| format!("cannot open /dev/null: {e}"));
        let status = c
            .command("/bin/sh")
            .args(["-c", ":"])
            .stdin(null()?)
            .stdout(null()?)
            .stderr(null()?)
            .status()
            .map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            Err(status.reason)
        }
    }

    /// Runs the test command; `echo`: copy its output to our stderr.
    fn run(
        &self,
        command: &str,
        env: &[(String, String)],
        test: &TestCommand,
        echo: bool,
    ) -> Result<Ran> {
        // Only as host root, where the sandbox is made by a thread of the
        // host user that joins the cgroup before it drops to that user.
        let cgroup = self
            .host_user
            .and_then(|_| super::cgroup::Cgroup::new(test.memory, test.max_procs));
        // Started here, as this process's user: joining the sandbox's IPC
        // namespace needs root.
        let first = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let sysv = host_root().then(|| SysvWatch::start(first.clone()));
        let bounds = Bounds {
            cgroup: cgroup.as_ref(),
            first: &first,
            sysv,
        };
        as_user(self.host_user, cgroup.as_ref(), || {
            self.run_here(command, env, test, echo, bounds)
        })?
    }

    /// [`Jail::run`] on the thread that makes the sandbox.
    fn run_here(
        &self,
        command: &str,
        env: &[(String, String)],
        test: &TestCommand,
        echo: bool,
        bounds: Bounds<'_>,
    ) -> Result<Ran> {
        let Bounds {
            cgroup,
            first,
            sysv,
        } = bounds;
        let mut c = self.container()?;
        c.setrlimit(hakoniwa::Rlimit::Nproc, test.max_procs, test.max_procs);
        // agent-ledger raises its own descriptor limit; the command gets a
        // usual one, not the hard limit.
        c.setrlimit(hakoniwa::Rlimit::Nofile, TEST_NOFILE, TEST_NOFILE);
        let argv = in_new_session(&["/bin/sh".to_string(), "-c".into(), command.to_string()])?;
        let mut cmd = c.command(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(self.tree)
            .stdin(dev_null().map_err(|e| Error::read(Path::new("/dev/null"), e))?)
            .stdout(hakoniwa::Stdio::piped())
            .stderr(hakoniwa::Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Born in the cgroup, if any: this thread joined it (`as_user`).
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Internal(format!("cannot start the test command: {e}")))?;
        first.store(child.id(), Ordering::Relaxed);
        let pumps = Pumps::start(
            test.output_cap,
            echo,
            child
                .stdout
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
        );
        let mut stopped = None;
        let deadline = Instant::now() + test.timeout;
        let mut members = Members::of(child.id(), false, sysv);
        let mut polls = 0u32;
        let status = loop {
            let status = child
                .try_wait()
                .map_err(|e| Error::Internal(format!("cannot wait for the test command: {e}")))?;
            if let Some(status) = status {
                break status;
            }
            if stopped.is_none() {
                stopped = pumps.over_cap().then_some(STOPPED_OUTPUT);
                if Instant::now() >= deadline {
                    stopped = Some(STOPPED_TIMEOUT);
                }
                polls = polls.wrapping_add(1);
                stopped = stopped.or(members.over(test, polls.is_multiple_of(MEMORY_EVERY)));
                if stopped.is_some() {
                    // Kills the process the sandbox runs first (its PID
                    // namespace's init: the kernel then kills every
                    // process left in that namespace), then the sandbox's
                    // own helper. Not the helper alone: a command can clear
                    // its init's death signal (a fourth review did, with
                    // gdb) and outlive it.
                    kill_children(child.id());
                    let _ = child.kill();
                }
            }
            std::thread::sleep(POLL);
        };
        if let Some(c) = cgroup {
            c.kill_all();
        }
        let (completion_ids, stdout, stderr) = pumps.finish();
        if stopped.is_none() && cgroup.is_some_and(|c| c.oom_killed()) {
            stopped = Some(STOPPED_MEMORY);
        }
        if stopped.is_none() && status.exit_code.is_none() && status.code == 125 {
            return Err(Error::Internal(format!(
                "the test command's sandbox failed: {}",
                status.reason
            )));
        }
        Ok(Ran {
            exit_code: status.exit_code,
            stopped,
            completion_ids,
            stdout,
            stderr,
        })
    }
}

/// The devices the sandbox's `/dev` holds, bound from the host's.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// Where util-linux's `setsid` is on this host (the sandbox sees the host's
/// directories at their own paths).
const SETSID: &[&str] = &["/usr/bin/setsid", "/bin/setsid"];

/// `argv` run by `setsid --wait`: in a session of its own with no
/// controlling terminal, so the code under test can neither open the
/// operator's terminal (`/dev/tty`) nor push keystrokes into it (TIOCSTI
/// needs the terminal to be the caller's controlling one). `setsid` is the
/// host's, trusted; it waits and exits with the command's status.
fn in_new_session(argv: &[String]) -> Result<Vec<String>> {
    let setsid = SETSID
        .iter()
        .find(|p| Path::new(p).is_file())
        .ok_or_else(|| {
            Error::Missing(
                "`setsid` (util-linux) is not installed: the sandboxed command would share this terminal's session, so it does not run".into(),
            )
        })?;
    let mut out = vec![setsid.to_string(), "--wait".to_string()];
    out.extend(argv.iter().cloned());
    Ok(out)
}

/// Whether this process is uid 0 of the host: root in the initial user
/// namespace, whose `uid_map` is the whole identity (uid 0 inside a user
/// namespace of its own is another host user, or maps too few ids to give
/// files to [`SANDBOX_HOST_ID`]).
pub(crate) fn host_root() -> bool {
    nix::unistd::geteuid().is_root()
        && std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| {
            map.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f == ["0", "0", "4294967295"]
            })
        })
}

/// What bounds one run of the test command besides its sandbox: its
/// cgroup, where one could be made, and the watch on System V shared
/// memory (as root), which learns the sandbox's first process through
/// `first`.
struct Bounds<'a> {
    cgroup: Option<&'a super::cgroup::Cgroup>,
    first: &'a std::sync::atomic::AtomicU32,
    sysv: Option<SysvWatch>,
}

/// Runs `f` on a thread of its own that has joined `cgroup` (when given)
/// and then dropped to the host user `id` (uid, gid, no supplementary
/// groups) with per-thread system calls, so this process's other threads
/// keep their credentials; what `f` forks is born as that user, in that
/// cgroup. Without `id`, `f` runs here.
fn as_user<T: Send>(
    id: Option<u32>,
    cgroup: Option<&super::cgroup::Cgroup>,
    f: impl FnOnce() -> T + Send,
) -> Result<T> {
    let Some(id) = id else {
        return Ok(f());
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(c) = cgroup {
                c.join().map_err(|e| {
                    Error::Internal(format!("cannot put the test command in its cgroup: {e}"))
                })?;
            }
            drop_thread_to(id).map_err(|e| {
                Error::Internal(format!(
                    "cannot become uid {id} to make the test command's sandbox: {e}"
                ))
            })?;
            Ok(f())
        })
        .join()
        .map_err(|_| Error::Internal("the sandbox thread panicked".into()))?
    })
}

/// Sets this thread's (only this thread's: raw system calls, not libc's
/// process-wide wrappers) supplementary groups, gid and uid to `id`.
fn drop_thread_to(id: u32) -> std::io::Result<()> {
    use nix::libc::{SYS_setgroups, SYS_setresgid, SYS_setresuid, syscall};
    let ok = |r: nix::libc::c_long| {
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: plain system calls on this thread's credentials, with a null
    // group list of length 0 and integer ids.
    unsafe {
        ok(syscall(
            SYS_setgroups,
            0,
            std::ptr::null::<nix::libc::gid_t>(),
        ))?;
        ok(syscall(SYS_setresgid, id, id, id))?;
        ok(syscall(SYS_setresuid, id, id, id))?;
    }
    // A change of credentials makes the process non-dumpable, and a
    // non-dumpable process's `/proc/self` files are root's: the sandbox's
    // first process (forked from this thread) could not write its own
    // `uid_map`. Nothing here holds a secret.
    nix::sys::prctl::set_dumpable(true).map_err(std::io::Error::from)?;
    Ok(())
}

/// Sends SIGKILL to every child of `pid` (each of its threads' children).
fn kill_children(pid: u32) {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for thread in threads.flatten() {
        let Ok(list) = std::fs::read_to_string(thread.path().join("children")) else {
            continue;
        };
        for child in list
            .split_whitespace()
            .filter_map(|c| c.parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The host uid (and gid) one run of the test command gets as root: one of
/// 2^20 from [`SANDBOX_HOST_ID`] up, by this process and a count, so that
/// runs side by side do not share the kernel's per-user limits (a fourth
/// review exhausted another trial's inotify instances through the one uid
/// they shared).
/// Within one process a uid is never given to two runs that overlap: the
/// 16 slots of this process are taken and given back ([`HostId`]); a run
/// past 16 at once waits for a slot.
fn sandbox_host_id() -> HostId {
    static TAKEN: std::sync::Mutex<u16> = std::sync::Mutex::new(0);
    static FREED: std::sync::Condvar = std::sync::Condvar::new();
    let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(slot) = (0..16u32).find(|s| *taken & (1 << s) == 0) {
            *taken |= 1 << slot;
            return HostId {
                // Pids are below 2^22 (`pid_max`'s ceiling), so no two
                // live processes share an id.
                id: SANDBOX_HOST_ID + ((std::process::id() << 4) | slot),
                slot,
                release: &|slot| {
                    let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
                    *taken &= !(1 << slot);
                    FREED.notify_all();
                },
            };
        }
        taken = FREED.wait(taken).unwrap_or_else(|p| p.into_inner());
    }
}

/// A uid one run holds until it drops this.
struct HostId {
    id: u32,
    slot: u32,
    release: &'static (dyn Fn(u32) + Sync),
}

impl Drop for HostId {
    fn drop(&mut self) {
        (self.release)(self.slot);
    }
}

/// Makes `id` (uid and gid) the owner of `dir` (a directory or a file) and
/// of everything in it, symlinks themselves included (never followed).
fn give_away(dir: &Path, id: u32) -> Result<()> {
    std::os::unix::fs::lchown(dir, Some(id), Some(id)).map_err(|e| Error::write(dir, e))?;
    let is_dir = std::fs::symlink_metadata(dir)
        .map_err(|e| Error::read(dir, e))?
        .is_dir();
    let mut stack: Vec<PathBuf> = if is_dir {
        vec![dir.to_path_buf()]
    } else {
        Vec::new()
    };
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).map_err(|e| Error::read(&next, e))? {
            let entry = entry.map_err(|e| Error::read(&next, e))?;
            let path = entry.path();
            std::os::unix::fs::lchown(&path, Some(id), Some(id))
                .map_err(|e| Error::write(&path, e))?;
            if entry
                .file_type()
                .map_err(|e| Error::read(&path, e))?
                .is_dir()
            {
                stack.push(path);
            }
        }
    }
    Ok(())
}

/// Runs `fork` in `cgroup` when there is one.
fn in_cgroup<T>(cgroup: Option<&super::cgroup::Cgroup>, fork: impl FnOnce() -> T) -> Result<T> {
    match cgroup {
        Some(c) => c.spawn_in(fork).map_err(|e| {
            Error::Internal(format!("cannot put the test command in its cgroup: {e}"))
        }),
        None => Ok(fork()),
    }
}

fn dev_null() -> std::io::Result<hakoniwa::Stdio> {
    Ok(std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?
        .into())
}

/// Mount points of this process's mount namespace.
fn host_mounts() -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|m| PathBuf::from(unescape_mount(m)))
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape_mount(s: &str) -> String {
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

/// Without a sandbox (`--allow-unsandboxed`): the operator's user, its own
/// process group (killed whole when stopped or done), the scrubbed
/// environment and the same limits.
fn run_unsandboxed(
    command: &str,
    tree: &Path,
    env: &[(String, String)],
    test: &TestCommand,
    echo: bool,
) -> Result<Ran> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", command])
        .current_dir(tree)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let cgroup = super::cgroup::Cgroup::new(test.memory, test.max_procs);
    let mut child = in_cgroup(cgroup.as_ref(), || cmd.spawn())?
        .map_err(|e| Error::Internal(format!("cannot run the test command: {e}")))?;
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let kill_group = || {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    };
    let pumps = Pumps::start(
        test.output_cap,
        echo,
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let mut stopped = None;
    let deadline = Instant::now() + test.timeout;
    let mut members = Members::of(child.id(), true, None);
    let mut polls = 0u32;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::Internal(format!("cannot wait for the test command: {e}")))?
        {
            break status;
        }
        if stopped.is_none() {
            stopped = pumps.over_cap().then_some(STOPPED_OUTPUT);
            if Instant::now() >= deadline {
                stopped = Some(STOPPED_TIMEOUT);
            }
            polls = polls.wrapping_add(1);
            stopped = stopped.or(members.over(test, polls.is_multiple_of(MEMORY_EVERY)));
            if stopped.is_some() {
                kill_group();
            }
        }
        std::thread::sleep(POLL);
    };
    // What it left behind in its group goes too (a process that made its
    // own session escapes this: that is what the sandbox is for).
    kill_group();
    let (completion_ids, stdout, stderr) = pumps.finish();
    if stopped.is_none() && cgroup.as_ref().is_some_and(|c| c.oom_killed()) {
        stopped = Some(STOPPED_MEMORY);
    }
    Ok(Ran {
        exit_code: status.code(),
        stopped,
        completion_ids,
        stdout,
        stderr,
    })
}

/// The processes of one test command: every descendant of the process the
/// host started (the sandbox's first process, outside its PID namespace, or
/// the unsandboxed shell), however deep (nested namespaces, new sessions
/// and orphans all stay below it: an orphan is reaped by the sandbox's own
/// init). The host adds up their tasks and memory.
struct Members {
    root: u32,
    /// Whether `root` itself is the command (unsandboxed) rather than the
    /// sandbox's helper.
    counts_root: bool,
    /// The devices of this process's own tmpfs mounts: a sandbox sees
    /// those the host has below the directories it binds, and they are not
    /// the command's.
    host_tmpfs: std::collections::BTreeSet<String>,
    /// System V shared memory in the sandbox's IPC namespace (as root).
    sysv: Option<SysvWatch>,
}

/// System V shared memory that no process has attached lives in the
/// sandbox's own IPC namespace and in no process's memory. A thread of
/// ours joins that namespace (`setns` needs `CAP_SYS_ADMIN` in our own
/// user namespace too, so only as root) and reads `/proc/sysvipc/shm`,
/// which shows the reader's namespace, every 100 ms.
struct SysvWatch {
    bytes: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
}

impl SysvWatch {
    /// Watches the IPC namespace the sandbox's first process (its pid in
    /// `first` once started) moves into.
    fn start(first: Arc<std::sync::atomic::AtomicU32>) -> SysvWatch {
        let bytes = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (out, stop) = (bytes.clone(), done.clone());
        std::thread::spawn(move || {
            use std::os::unix::fs::MetadataExt;
            let own = std::fs::metadata("/proc/self/ns/ipc").map(|m| m.ino()).ok();
            let ns = loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let root = first.load(Ordering::Relaxed);
                if root == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                let Ok(file) = std::fs::File::open(format!("/proc/{root}/ns/ipc")) else {
                    return;
                };
                if file.metadata().map(|m| m.ino()).ok() != own {
                    break file;
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            if nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWIPC).is_err() {
                return;
            }
            while !stop.load(Ordering::Relaxed) {
                if let Ok(table) = std::fs::read_to_string("/proc/sysvipc/shm") {
                    out.store(detached_sysv_bytes(&table), Ordering::Relaxed);
                }
                std::thread::sleep(POLL * MEMORY_EVERY);
            }
        });
        SysvWatch { bytes, done }
    }
}

impl Drop for SysvWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// The resident bytes of the segments of a `/proc/sysvipc/shm` table that
/// no process has attached (attached ones are in their processes'
/// `RssShmem`).
fn detached_sysv_bytes(table: &str) -> u64 {
    let mut lines = table.lines();
    let Some(header) = lines.next() else {
        return 0;
    };
    let column = |name: &str| header.split_whitespace().position(|h| h == name);
    let (Some(attached), Some(rss)) = (column("nattch"), column("rss")) else {
        return 0;
    };
    lines
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.get(attached) == Some(&"0"))
        .filter_map(|f| f.get(rss)?.parse::<u64>().ok())
        .fold(0u64, u64::saturating_add)
}

impl Members {
    fn of(root: u32, counts_root: bool, sysv: Option<SysvWatch>) -> Members {
        let mut host_tmpfs = std::collections::BTreeSet::new();
        if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
            host_tmpfs.extend(tmpfs_mounts(&info).into_iter().map(|(dev, _)| dev));
        }
        Members {
            root,
            counts_root,
            host_tmpfs,
            sysv,
        }
    }

    /// Why the command must stop, if it must: more processes and threads
    /// than `--test-max-procs` (the kernel stops forks past it already,
    /// except for uid 0, to which it never applies `RLIMIT_NPROC`), or,
    /// when `memory` is set, more memory than `--test-memory`.
    fn over(&mut self, test: &TestCommand, memory: bool) -> Option<&'static str> {
        let (tasks, bytes) = self.usage(memory);
        if bytes > test.memory {
            Some(STOPPED_MEMORY)
        } else if tasks > test.max_procs {
            Some(STOPPED_PROCESSES)
        } else {
            None
        }
    }

    /// How many tasks (processes and threads) the members run and, when
    /// `memory` is set, what memory they hold, in bytes: each one's
    /// anonymous and shared resident memory (file pages can be dropped by
    /// the kernel), every memfd they hold open (counted once, mapped or
    /// not), and what every tmpfs mounted in their mount namespaces holds
    /// (the private `/tmp` and `/dev/shm`, and any a nested namespace
    /// mounts; each counted once). A process that ends while it is read is
    /// skipped.
    fn usage(&mut self, memory: bool) -> (u64, u64) {
        let mut tasks = 0u64;
        let mut bytes = 0u64;
        let mut seen_files = std::collections::BTreeSet::new();
        let mut seen_mount_ns = std::collections::BTreeSet::new();
        let mut seen_fs = self.host_tmpfs.clone();
        if memory && let Some(sysv) = &self.sysv {
            bytes = sysv.bytes.load(Ordering::Relaxed);
        }
        let mut queue = vec![self.root];
        let mut visited = std::collections::BTreeSet::new();
        while let Some(pid) = queue.pop() {
            if !visited.insert(pid) {
                continue;
            }
            let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            let member = pid != self.root || self.counts_root;
            for thread in threads.flatten() {
                if member {
                    tasks += 1;
                }
                let children = thread.path().join("children");
                if let Ok(list) = std::fs::read_to_string(children) {
                    queue.extend(
                        list.split_whitespace()
                            .filter_map(|c| c.parse::<u32>().ok()),
                    );
                }
            }
            if !member || !memory {
                continue;
            }
            bytes = bytes.saturating_add(resident_memory(pid));
            bytes = bytes.saturating_add(memfd_bytes(pid, &mut seen_files));
            use std::os::unix::fs::MetadataExt;
            if let Ok(ns) = std::fs::metadata(format!("/proc/{pid}/ns/mnt")).map(|m| m.ino())
                && seen_mount_ns.insert(ns)
            {
                bytes = bytes.saturating_add(tmpfs_bytes(pid, &mut seen_fs));
            }
        }
        (tasks, bytes)
    }
}

/// `RssAnon` and `RssShmem` of `/proc/PID/status`, in bytes (0 when it
/// cannot be read).
fn resident_memory(pid: u32) -> u64 {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    status
        .lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("RssAnon:")
                .or_else(|| line.strip_prefix("RssShmem:"))?;
            rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
        .fold(0u64, |sum, kb| sum.saturating_add(kb.saturating_mul(1024)))
}

/// The bytes of every memfd `pid` holds open and no other member was seen
/// holding (`seen`: device and inode).
fn memfd_bytes(pid: u32, seen: &mut std::collections::BTreeSet<(u64, u64)>) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let mut total = 0u64;
    for fd in fds.flatten() {
        let is_memfd = std::fs::read_link(fd.path())
            .is_ok_and(|t| t.as_os_str().as_encoded_bytes().starts_with(b"/memfd:"));
        if !is_memfd {
            continue;
        }
        if let Ok(m) = std::fs::metadata(fd.path())
            && seen.insert((m.dev(), m.ino()))
        {
            total = total.saturating_add(m.blocks().saturating_mul(512));
        }
    }
    total
}

/// The tmpfs mounts of a mountinfo text: (device, mount point).
fn tmpfs_mounts(info: &str) -> Vec<(String, String)> {
    info.lines()
        .filter_map(|line| {
            // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPER`
            let fields: Vec<&str> = line.split(' ').collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            (fields.get(dash + 1) == Some(&"tmpfs"))
                .then(|| Some((fields.get(2)?.to_string(), unescape_mount(fields.get(4)?))))
                .flatten()
        })
        .collect()
}

/// What every tmpfs mounted in `pid`'s mount namespace holds, each
/// filesystem (`seen`: its device) counted once.
fn tmpfs_bytes(pid: u32, seen: &mut std::collections::BTreeSet<String>) -> u64 {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")) else {
        return 0;
    };
    let mut total = 0u64;
    for (dev, point) in tmpfs_mounts(&info) {
        if seen.insert(dev) {
            total = total.saturating_add(used_bytes(&format!("/proc/{pid}/root{point}")));
        }
    }
    total
}

/// The bytes in use on the filesystem at `path` (a sandbox's tmpfs).
fn used_bytes(path: &str) -> u64 {
    nix::sys::statvfs::statvfs(path).map_or(0, |s| {
        s.blocks()
            .saturating_sub(s.blocks_free())
            .saturating_mul(s.fragment_size())
    })
}

/// Copies the command's stdout and stderr to ours (stderr: our stdout is
/// for our own output) when it is to be shown, up to the cap, and counts
/// every byte.
struct Pumps {
    seen: Arc<AtomicU64>,
    cap: u64,
    /// stdout's, then stderr's: the completion ids and the bytes read.
    threads: Vec<std::thread::JoinHandle<(BTreeSet<String>, Vec<u8>)>>,
    done: Arc<AtomicBool>,
}

impl Pumps {
    fn start(
        cap: u64,
        echo: bool,
        out: Option<Box<dyn Read + Send>>,
        err: Option<Box<dyn Read + Send>>,
    ) -> Pumps {
        let seen = Arc::new(AtomicU64::new(0));
        // What reached our stderr, escaped (escaping can grow the text, and
        // the cap bounds what the operator's terminal receives too).
        let echoed = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let threads = [out, err]
            .into_iter()
            .flatten()
            .map(|mut reader| {
                let (seen, done, echoed) = (seen.clone(), done.clone(), echoed.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut ids = crate::completion_ids::Scanner::default();
                    let mut kept = Vec::new();
                    while let Ok(n) = reader.read(&mut buf) {
                        if n == 0 || done.load(Ordering::Relaxed) {
                            break;
                        }
                        let before = seen.fetch_add(n as u64, Ordering::Relaxed);
                        if before < cap {
                            let keep = n.min((cap - before) as usize);
                            ids.feed(&buf[..keep]);
                            kept.extend_from_slice(&buf[..keep]);
                            if echo {
                                // Untrusted text: escaped, as every other.
                                let text = crate::output::inert_stream(&buf[..keep]);
                                let before = echoed.fetch_add(text.len() as u64, Ordering::Relaxed);
                                let room = cap.saturating_sub(before) as usize;
                                let mut end = room.min(text.len());
                                while !text.is_char_boundary(end) {
                                    end -= 1;
                                }
                                let _ = std::io::stderr().lock().write_all(&text.as_bytes()[..end]);
                            }
                        }
                    }
                    (ids.finish(), kept)
                })
            })
            .collect();
        Pumps {
            seen,
            cap,
            threads,
            done,
        }
    }

    fn over_cap(&self) -> bool {
        self.seen.load(Ordering::Relaxed) > self.cap
    }

    /// Waits for the pipes to close (every writer is dead once the command
    /// has ended in its PID namespace); a writer that outlived an
    /// unsandboxed command is not waited for.
    /// Returns the completion ids the command printed, and its stdout and
    /// stderr (up to the cap together).
    fn finish(self) -> (BTreeSet<String>, Vec<u8>, Vec<u8>) {
        let grace = Instant::now() + Duration::from_secs(1);
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < grace {
            std::thread::sleep(POLL);
        }
        self.done.store(true, Ordering::Relaxed);
        let mut ids = BTreeSet::new();
        let mut streams = Vec::new();
        for t in self.threads {
            if t.is_finished()
                && let Ok((found, bytes)) = t.join()
            {
                ids.extend(found);
                streams.push(bytes);
            } else {
                streams.push(Vec::new());
            }
        }
        let mut streams = streams.into_iter();
        let (stdout, stderr) = (
            streams.next().unwrap_or_default(),
            streams.next().unwrap_or_default(),
        );
        if self.seen.load(Ordering::Relaxed) > self.cap {
            eprintln!(
                "warning: the test command printed more than {} bytes; it was stopped and its output cut",
                self.cap
            );
        }
        (ids, stdout, stderr)
    }
}
