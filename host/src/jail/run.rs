//! A bounded run of a command in the jail ([`Jail::run`]) or, with
//! `--allow-unsandboxed`, as the operator ([`run_unsandboxed`]): the
//! output pumps, the wall clock, the memory and process caps, and the kill.

use super::accounting::{Members, SysvWatch, kill_children};
use super::cgroup::{Cgroup, HELD};
use super::identity::{as_user, host_root};
use super::pumps::Pumps;
use super::*;
use crate::record::Stopped;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// What bounds one run: the wall clock, the output cap, and the memory and
/// process caps (`--test-timeout`, `--test-output-cap`, `--test-memory`,
/// `--test-max-procs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub timeout: Duration,
    pub output_cap: u64,
    pub memory: u64,
    pub max_procs: u64,
}

impl Jail<'_> {
    /// Runs the test command; `echo`: copy its output to our stderr.
    pub(crate) fn run(
        &self,
        command: &str,
        env: &[(String, String)],
        caps: &Caps,
        echo: bool,
    ) -> Result<Ran> {
        // As host root the sandbox is made by a thread of the host user
        // that joins the v1 cgroups before it drops to that user; a v2
        // cgroup (root or delegated) takes the sandbox's first process
        // before it runs the command (`run_here`).
        let cgroup = Cgroup::new(caps.memory, caps.max_procs);
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
            self.run_here(command, env, caps, echo, bounds)
        })?
    }

    /// [`Jail::run`] on the thread that makes the sandbox.
    pub(crate) fn run_here(
        &self,
        command: &str,
        env: &[(String, String)],
        caps: &Caps,
        echo: bool,
        bounds: Bounds<'_>,
    ) -> Result<Ran> {
        let Bounds {
            cgroup,
            first,
            sysv,
        } = bounds;
        let mut c = self.container()?;
        c.setrlimit(hakoniwa::Rlimit::Nproc, caps.max_procs, caps.max_procs);
        // agent-ledger raises its own descriptor limit; the command gets a
        // usual one, not the hard limit, and never more than that hard
        // limit (an unprivileged process may not raise it: under `ulimit
        // -n 1024` every sandboxed command failed to start).
        let nofile = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(TEST_NOFILE, |(_, hard)| hard.min(TEST_NOFILE));
        c.setrlimit(hakoniwa::Rlimit::Nofile, nofile, nofile);
        let mut argv = in_new_session(&["/bin/sh".to_string(), "-c".into(), command.to_string()])?;
        let v2 = cgroup.and_then(Cgroup::v2);
        if v2.is_some() {
            // Held until it is in the v2 cgroup (`release_into`).
            argv.splice(0..0, ["/bin/sh".to_string(), "-c".into(), HELD.into()]);
        }
        let mut cmd = c.command(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(self.tree)
            .stdout(hakoniwa::Stdio::piped())
            .stderr(hakoniwa::Stdio::piped());
        match v2 {
            Some(_) => cmd.stdin(hakoniwa::Stdio::piped()),
            None => cmd.stdin(dev_null().map_err(|e| Error::read(Path::new("/dev/null"), e))?),
        };
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Born in the v1 cgroups, if any: this thread joined them
        // (`as_user`).
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Internal(format!("cannot start the test command: {e}")))?;
        first.store(child.id(), Ordering::Relaxed);
        // Where the sandbox ended first, its status below says why.
        if let Some(v2) = v2
            && let Err(e) = release_into(v2, child.id(), child.stdin.take())
        {
            kill_children(child.id());
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Internal(format!(
                "cannot put the test command in its cgroup: {e}"
            )));
        }
        let pumps = Pumps::start(
            caps.output_cap,
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
        let mut members = Members::of(child.id(), false, sysv);
        let (status, mut stopped) = watch(
            &mut child,
            |c| c.try_wait(),
            // Kills the process the sandbox runs first (its PID namespace's
            // init: the kernel then kills every process left in that
            // namespace), then the sandbox's own helper. Not the helper
            // alone: a command can clear its init's death signal (with gdb,
            // say) and outlive it (`tests/all/test_sandbox.rs`,
            // `a_stopped_test_command_leaves_no_process_behind`).
            |child| {
                kill_children(child.id());
                let _ = child.kill();
            },
            &pumps,
            &mut members,
            caps,
        )?;
        if let Some(c) = cgroup {
            c.kill_all();
        }
        let (completion_ids, stdout, stderr) = pumps.finish();
        if stopped.is_none() && cgroup.is_some_and(|c| c.oom_killed()) {
            stopped = Some(Stopped::MemoryCap);
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

/// The one watch loop, sandboxed or not: polls `try_wait` until the command
/// ends, and stops it (`kill`, once) when it passes its output cap, its
/// deadline, or its memory or process caps (`members`). Returns its status
/// and why it was stopped, if it was.
fn watch<C, S, E: std::fmt::Display>(
    child: &mut C,
    try_wait: impl Fn(&mut C) -> std::result::Result<Option<S>, E>,
    kill: impl Fn(&mut C),
    pumps: &Pumps,
    members: &mut Members,
    caps: &Caps,
) -> Result<(S, Option<Stopped>)> {
    let mut stopped = None;
    let deadline = Instant::now() + caps.timeout;
    let mut polls = 0u32;
    loop {
        if let Some(status) = try_wait(child)
            .map_err(|e| Error::Internal(format!("cannot wait for the test command: {e}")))?
        {
            return Ok((status, stopped));
        }
        if stopped.is_none() {
            stopped = pumps.over_cap().then_some(Stopped::OutputCap);
            if Instant::now() >= deadline {
                stopped = Some(Stopped::Timeout);
            }
            polls = polls.wrapping_add(1);
            stopped = stopped.or(members.over(caps, polls.is_multiple_of(MEMORY_EVERY)));
            if stopped.is_some() {
                kill(child);
            }
        }
        std::thread::sleep(POLL);
    }
}

/// What bounds one run of the test command besides its sandbox: its
/// cgroup, where one could be made, and the watch on System V shared
/// memory (as root), which learns the sandbox's first process through
/// `first`.
pub(crate) struct Bounds<'a> {
    cgroup: Option<&'a Cgroup>,
    first: &'a std::sync::atomic::AtomicU32,
    sysv: Option<SysvWatch>,
}

/// Moves the sandbox's first process (the one child of the sandbox's
/// process `outer`, waiting in [`HELD`]) into `v2`, then tells it through
/// `gate` (its standard input) to run the command. `Ok(false)`: the
/// sandbox ended before that (its status says why), and nothing of the
/// command ran.
fn release_into(
    v2: &super::cgroup::V2,
    outer: u32,
    gate: Option<impl std::io::Write>,
) -> std::io::Result<bool> {
    let children = format!("/proc/{outer}/task/{outer}/children");
    let start = Instant::now();
    let first = loop {
        let list = std::fs::read_to_string(&children);
        if let Some(pid) = list
            .as_deref()
            .ok()
            .and_then(|l| l.split_whitespace().next())
            .and_then(|p| p.parse().ok())
        {
            break pid;
        }
        if ended(outer) {
            return Ok(false);
        }
        list?;
        if start.elapsed() > Duration::from_secs(10) {
            return Err(std::io::Error::other(
                "the sandbox's first process did not start",
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    if let Err(e) = v2.place(first) {
        return if ended(first) { Ok(false) } else { Err(e) };
    }
    let mut gate = gate.ok_or_else(|| std::io::Error::other("no pipe to the sandbox"))?;
    match gate.write_all(b"go\n") {
        // No reader: it ended without the word.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        r => r.map(|()| true),
    }
}

/// Whether process `pid` has ended (gone, or a zombie).
fn ended(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some(s) if s != 'Z' && s != 'X')
}

/// Runs `fork` in `cgroup` when there is one.
pub(crate) fn in_cgroup<T>(cgroup: Option<&Cgroup>, fork: impl FnOnce() -> T) -> Result<T> {
    match cgroup {
        Some(c) => c.spawn_in(fork).map_err(|e| {
            Error::Internal(format!("cannot put the test command in its cgroup: {e}"))
        }),
        None => Ok(fork()),
    }
}

/// Without a sandbox (`--allow-unsandboxed`): the operator's user, its own
/// process group (killed whole when stopped or done), the scrubbed
/// environment and the same limits.
pub(crate) fn run_unsandboxed(
    command: &str,
    tree: &Path,
    env: &[(String, String)],
    caps: &Caps,
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
    let cgroup = Cgroup::new(caps.memory, caps.max_procs);
    if let Some(v2) = cgroup.as_ref().and_then(Cgroup::v2) {
        let hook = v2.pre_exec().map_err(|e| {
            Error::Internal(format!("cannot put the test command in its cgroup: {e}"))
        })?;
        // SAFETY: the hook only makes one `write(2)` system call.
        unsafe { cmd.pre_exec(hook) };
    }
    let mut child = in_cgroup(cgroup.as_ref(), || cmd.spawn())?
        .map_err(|e| Error::Internal(format!("cannot run the test command: {e}")))?;
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let kill_group = || {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    };
    let pumps = Pumps::start(
        caps.output_cap,
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
    let mut members = Members::of(child.id(), true, None);
    let (status, mut stopped) = watch(
        &mut child,
        |c| c.try_wait(),
        |_| kill_group(),
        &pumps,
        &mut members,
        caps,
    )?;
    // What it left behind in its group goes too (a process that made its
    // own session escapes this, but not its cgroup, where there is one).
    kill_group();
    if let Some(c) = &cgroup {
        c.kill_all();
    }
    let (completion_ids, stdout, stderr) = pumps.finish();
    if stopped.is_none() && cgroup.as_ref().is_some_and(|c| c.oom_killed()) {
        stopped = Some(Stopped::MemoryCap);
    }
    Ok(Ran {
        exit_code: status.code(),
        stopped,
        completion_ids,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn caps(timeout: Duration, output_cap: u64) -> Caps {
        Caps {
            timeout,
            output_cap,
            memory: u64::MAX,
            max_procs: u64::MAX,
        }
    }

    /// A stand-in command: running until killed, then it ends.
    struct Fake {
        killed: Cell<u32>,
    }

    fn watch_fake(pumps: &Pumps, caps: &Caps) -> (u32, Option<Stopped>) {
        let mut fake = Fake {
            killed: Cell::new(0),
        };
        let mut members = Members::of(std::process::id(), true, None);
        let (status, stopped) = watch(
            &mut fake,
            |f| Ok::<_, std::io::Error>((f.killed.get() > 0).then_some(f.killed.get())),
            |f| f.killed.set(f.killed.get() + 1),
            pumps,
            &mut members,
            caps,
        )
        .unwrap();
        (status, stopped)
    }

    #[test]
    fn the_watch_stops_a_command_past_its_deadline_once() {
        let pumps = Pumps::start(1 << 20, false, None, None);
        let (kills, stopped) = watch_fake(&pumps, &caps(Duration::ZERO, 1 << 20));
        assert_eq!(stopped, Some(Stopped::Timeout));
        assert_eq!(kills, 1, "killed once, then waited for");
    }

    #[test]
    fn the_watch_stops_a_command_past_its_output_cap() {
        let out: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(vec![b'x'; 4096]));
        let pumps = Pumps::start(100, false, Some(out), None);
        // The pump reads on its own thread; wait until it has.
        let start = Instant::now();
        while !pumps.over_cap() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(POLL);
        }
        let (_, stopped) = watch_fake(&pumps, &caps(Duration::from_secs(3600), 100));
        assert_eq!(stopped, Some(Stopped::OutputCap));
        let (_, stdout, _) = pumps.finish();
        assert_eq!(stdout.len(), 100, "kept up to the cap");
    }

    #[test]
    fn the_held_process_is_moved_before_it_runs_the_command() {
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let procs = dir.path().join("cgroup.procs");
        let v2 = super::super::cgroup::V2::standing_in(
            dir.path(),
            std::fs::File::create(&procs).unwrap(),
        );
        // As in the sandbox: an outer process whose one child waits in
        // HELD, then becomes the command (which reports its pid, and what
        // the stand-in cgroup held when it ran).
        let script = format!(
            "/bin/sh -c '{HELD}' /bin/sh -c 'echo $$; cat {}'; true",
            procs.display()
        );
        let mut outer = Command::new("/bin/sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let gate = outer.stdin.take();
        assert!(release_into(&v2, outer.id(), gate).unwrap());
        let out = outer.wait_with_output().unwrap();
        let out = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert_eq!(
            lines[0], lines[1],
            "the command's own pid was moved, before it ran: {out}"
        );
    }

    #[test]
    fn a_sandbox_that_ends_before_its_first_process_is_released_is_reported_as_such() {
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let v2 = super::super::cgroup::V2::standing_in(
            dir.path(),
            std::fs::File::create(dir.path().join("cgroup.procs")).unwrap(),
        );
        let mut outer = Command::new("/bin/sh")
            .args(["-c", "exit 3"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let gate = outer.stdin.take();
        assert!(!release_into(&v2, outer.id(), gate).unwrap());
        assert_eq!(outer.wait().unwrap().code(), Some(3));
    }

    #[test]
    fn a_command_that_ends_in_time_is_not_stopped() {
        let pumps = Pumps::start(1 << 20, false, None, None);
        let mut members = Members::of(std::process::id(), true, None);
        let (status, stopped) = watch(
            &mut (),
            |_| Ok::<_, std::io::Error>(Some(0)),
            |_| panic!("nothing to kill"),
            &pumps,
            &mut members,
            &caps(Duration::from_secs(3600), 1 << 20),
        )
        .unwrap();
        assert_eq!((status, stopped), (0, None));
    }
}
