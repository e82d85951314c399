//! `--repo`, `--config` and `--ledger`, resolved once, by one function, for
//! every command that needs them.
//!
//! - The repository is `--repo DIR` (its top level), else the repository
//!   holding the current directory. Commands that only keep records or hash
//!   a tree work outside a repository too: their root is then that directory.
//! - The configuration is `--config FILE`, else `agent-ledger.toml` where the
//!   command reads it (`config::At`): at the base revision for a trial, at
//!   `HEAD` for `reconcile` (the working tree is the agent's), in the working
//!   tree for the operator's bookkeeping commands.
//! - The ledger is `--ledger DIR`, else the configuration's `ledger`,
//!   relative to the root.

mod flags;
mod links;
use crate::config::{self, At};
use crate::exit::{Error, Result};
use crate::git::Repo;
use crate::ledger::Ledger;
pub use flags::{CacheArgs, CacheDirArg, TestEnvArgs, TestLimits, test_env};
pub use links::refuse_linked_entries;
use links::refuse_linked_ledger;
use std::path::{Path, PathBuf};

/// `--repo DIR`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RepoArgs {
    /// The git repository [default: the one holding the current directory].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
}

/// `--config FILE`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// Read the configuration from FILE instead of `agent-ledger.toml` (for
    /// `check` and `replay`, FILE must lie outside the repository).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `--repo DIR` and `--config FILE`: what every command that reads the
/// configuration takes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ScopeArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
}

impl ScopeArgs {
    /// Resolves these flags and `--ledger` as `needs` asks.
    pub fn resolve(&self, ledger: Option<&Path>, needs: Needs<'_>) -> Result<Resolved> {
        resolve(
            self.repo.repo.as_deref(),
            self.config.config.as_deref(),
            ledger,
            needs,
        )
    }

    /// [`ScopeArgs::resolve`] with [`resolve_beside`]'s `beside`.
    pub fn resolve_beside<T: Send>(
        &self,
        ledger: Option<&Path>,
        needs: Needs<'_>,
        beside: impl FnOnce(&Repo) -> T + Send,
    ) -> Result<(Resolved, Option<T>)> {
        resolve_beside(
            self.repo.repo.as_deref(),
            self.config.config.as_deref(),
            ledger,
            needs,
            beside,
        )
    }

    /// [`ScopeArgs::ledger`] for a command that starts a ledger
    /// (`capture`): outside a repository, only an explicit `--ledger` (a
    /// stray `./.agent-ledger` would hold the run where no `check` finds
    /// it).
    pub fn new_ledger(&self, ledger: Option<&Path>) -> Result<Ledger> {
        let needs = Needs {
            repo: false,
            config_at: ConfigAt::LedgerOnly,
        };
        let resolved = self.resolve(ledger, needs)?;
        if resolved.repo.is_none() && ledger.is_none() {
            return Err(Error::Usage(format!(
                "`{}` is not in a git repository: pass `--repo DIR` for the repository the patch is for, or `--ledger DIR`",
                resolved.root.display()
            )));
        }
        Ok(resolved.ledger)
    }

    /// The ledger, for a command that reads the configuration only to find
    /// it (`capture`, `classify`, `sign`, `pack`).
    pub fn ledger(&self, ledger: Option<&Path>) -> Result<Ledger> {
        let needs = Needs {
            repo: false,
            config_at: ConfigAt::LedgerOnly,
        };
        Ok(self.resolve(ledger, needs)?.ledger)
    }
}

/// What a command asks of the resolution.
#[derive(Debug, Clone, Copy)]
pub struct Needs<'a> {
    /// Fail when there is no repository (else fall back to the current
    /// directory).
    pub repo: bool,
    /// Where `agent-ledger.toml` is read when no `--config` is given.
    pub config_at: ConfigAt<'a>,
}

/// Where the configuration comes from, before revisions are resolved.
#[derive(Debug, Clone, Copy)]
pub enum ConfigAt<'a> {
    /// A revision named on the command line (`--base REV`).
    Revision(&'a str),
    /// `HEAD`; no configuration when the repository has no commit yet.
    Head,
    /// The working tree at the root.
    WorkingTree,
    /// The working tree, and only to find the ledger: not read at all when
    /// `--ledger` is given without `--config` (`capture`, `classify`,
    /// `sign`, `pack`, `verify`).
    LedgerOnly,
    /// Nothing: the command reads no configuration (`verify ARCHIVE`).
    Unused,
}

/// The resolved repository, configuration and ledger.
pub struct Resolved {
    pub repo: Option<Repo>,
    /// The repository's top level, or the directory given (or the current
    /// one) when it is not in a repository.
    pub root: PathBuf,
    /// The full commit id the configuration was read at, when it was read
    /// at a revision.
    pub revision: Option<String>,
    pub config: config::LoadedConfig,
    pub ledger: Ledger,
}

impl Resolved {
    /// The repository, which `Needs::repo` guaranteed.
    pub fn repo(&self) -> Result<&Repo> {
        self.repo
            .as_ref()
            .ok_or_else(|| Error::Internal("a repository was required but not resolved".into()))
    }
}

/// The repository at `repo` with the configuration its HEAD holds (never
/// its working copy's, which an agent may have written): what every
/// `trace` call reads.
pub fn at_head(repo: &Path) -> Result<Resolved> {
    resolve(
        Some(repo),
        None,
        None,
        Needs {
            repo: true,
            config_at: ConfigAt::Head,
        },
    )
}

/// Resolves `--repo`, `--config` and `--ledger` for one command.
pub fn resolve(
    repo: Option<&Path>,
    config_file: Option<&Path>,
    ledger: Option<&Path>,
    needs: Needs<'_>,
) -> Result<Resolved> {
    resolve_with(repo, config_file, ledger, needs, None::<fn(&Repo)>).map(|(r, _)| r)
}

/// [`resolve`], running `beside` on the repository (when there is one)
/// while the configuration is read: `beside` gets no configuration, only
/// what git found.
pub fn resolve_beside<T: Send>(
    repo: Option<&Path>,
    config_file: Option<&Path>,
    ledger: Option<&Path>,
    needs: Needs<'_>,
    beside: impl FnOnce(&Repo) -> T + Send,
) -> Result<(Resolved, Option<T>)> {
    resolve_with(repo, config_file, ledger, needs, Some(beside))
}

/// [`resolve`] and [`resolve_beside`]: without `beside`, on this thread
/// alone (`batch` resolves before it leaves the network, which the kernel
/// refuses to a process with a second thread: no pool may start here).
fn resolve_with<T: Send>(
    repo: Option<&Path>,
    config_file: Option<&Path>,
    ledger: Option<&Path>,
    needs: Needs<'_>,
    beside: Option<impl FnOnce(&Repo) -> T + Send>,
) -> Result<(Resolved, Option<T>)> {
    let dir = repo.unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(Error::Missing(format!(
            "`{}` is not a directory",
            dir.display()
        )));
    }
    // Commands that only keep records or hash a tree work in any directory.
    let repo = if needs.repo {
        Some(Repo::open(dir)?)
    } else {
        Repo::open(dir).ok()
    };
    let root = repo
        .as_ref()
        .map_or_else(|| dir.to_path_buf(), |r| r.root.clone());
    let revision = match (needs.config_at, &repo) {
        (ConfigAt::Revision(rev), Some(r)) => Some(r.resolve_commit(rev)?),
        (ConfigAt::Revision(rev), None) => {
            return Err(Error::Usage(format!(
                "`{rev}` names a revision, but there is no repository: pass --repo DIR"
            )));
        }
        // An unborn HEAD (no commit yet) has no configuration.
        (ConfigAt::Head, Some(r)) => r.head().map(str::to_string),
        _ => None,
    };
    let at = match (&revision, needs.config_at) {
        (Some(rev), _) => At::Revision(rev),
        // `reconcile` outside a repository, or before the first commit: the
        // configuration may still come from `--config`; the working tree's
        // own file is the agent's and is never read for it.
        (None, ConfigAt::Head) => At::Revision("HEAD"),
        _ => At::WorkingTree,
    };
    let unread = match needs.config_at {
        ConfigAt::Unused => true,
        ConfigAt::LedgerOnly => ledger.is_some() && config_file.is_none(),
        _ => false,
    };
    let config = || match (at, &revision, config_file) {
        _ if unread => Ok(config::LoadedConfig::absent(
            "no configuration is read".into(),
        )),
        (At::Revision(_), None, None) => Ok(config::LoadedConfig::absent(
            "no commit to read agent-ledger.toml from".into(),
        )),
        _ => config::load(repo.as_ref(), &root, at, config_file),
    };
    let (config, beside) = match (beside, &repo) {
        (Some(beside), Some(r)) => {
            let (config, beside) = rayon::join(config, || beside(r));
            (config?, Some(beside))
        }
        _ => (config()?, None),
    };
    let ledger = match ledger {
        Some(dir) => Ledger::new(dir),
        None => Ledger::new(root.join(&config.config.ledger)),
    };
    refuse_linked_ledger(&root, ledger.root())?;
    Ok((
        Resolved {
            repo,
            root,
            revision,
            config,
            ledger,
        },
        beside,
    ))
}

/// What identifies a trial on the command line (`check`, `replay`).
#[derive(Debug, Clone, clap::Args)]
pub struct TrialArgs {
    /// Run id of the captured trial [default: `git-` and the first 12 hex
    /// digits of the checkout's HEAD: the run `capture --git BASE..HEAD`
    /// makes without `--run`].
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The base revision the patch applies to [default: the merge base a
    /// `capture --git` receipt records; required otherwise].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// A JUnit XML report of the project's suite on the patched tree, for
    /// the `tests_pass` property; stored in the ledger with its digest.
    #[arg(long, value_name = "FILE", conflicts_with = "test_cmd")]
    pub junit: Option<PathBuf>,
    /// Run the project's suite in a temporary patched tree with no network;
    /// it must write a JUnit report to the path in `$AGENT_LEDGER_JUNIT`.
    #[arg(long, value_name = "CMD")]
    pub test_cmd: Option<String>,
    #[command(flatten)]
    pub test_env: TestEnvArgs,
    /// Do not run `--test-cmd` on the base revision too. By default it runs
    /// there first (once per base in a `batch`), and `tests_pass` then
    /// requires every test that passed on the base to pass after the
    /// patch, so a test the patch stopped from running (skipped, no longer
    /// collected) is a miss.
    #[arg(long, requires = "test_cmd")]
    pub no_test_baseline: bool,
    /// The instant flake-freeze expiry is judged against (RFC 3339 or a
    /// date) [default: the transcript's `captured_at`].
    #[arg(long, value_name = "T")]
    pub now: Option<String>,
    /// The evaluator's test patch (SWE-bench's `test_patch`): in the trees
    /// `--test-cmd` runs in, the paths it touches are reset to the base and
    /// it is applied after the agent's patch (and alone on the base for the
    /// baseline). Locked with the fixtures and stored in the ledger; never
    /// judged as the agent's change.
    #[arg(long, value_name = "FILE", requires = "test_cmd")]
    pub eval_patch: Option<PathBuf>,
    /// A test that must be in the report and pass (repeatable): a pytest
    /// node id, `classname::name`, `name (module.Class)` or a bare name.
    #[arg(long, value_name = "ID")]
    pub require_pass: Vec<String>,
    /// Turn the test command's output into its report when it writes none:
    /// `sympy` (bin/test), `django` (runtests.py), `pytest` (-rA).
    #[arg(long, value_name = "RUNNER", requires = "test_cmd")]
    pub test_log_parser: Option<crate::logparse::LogParser>,
}

/// The evaluator's inputs of a trial: its test patch (a file) and the
/// required tests.
pub fn evaluation(
    eval_patch: Option<crate::evaluation::TestPatch>,
    required: crate::record::RequiredTests,
) -> crate::evaluation::Inputs {
    let norm = |ids: Vec<String>| -> Vec<String> {
        ids.iter()
            .map(|id| agent_ledger_junit::Required::parse(id).id)
            .filter(|id| !id.is_empty())
            .collect()
    };
    crate::evaluation::Inputs {
        patch: eval_patch,
        required: crate::record::RequiredTests {
            fail_to_pass: norm(required.fail_to_pass),
            pass_to_pass: norm(required.pass_to_pass),
            require_pass: norm(required.require_pass),
        },
    }
}

impl TrialArgs {
    /// The merge base a `capture --git` receipt records, found in the
    /// ledger `capture` wrote to, for a trial given without `--base`. The
    /// trial checks it again against the receipt it then reads (`check`
    /// refuses a base other than the recorded merge base).
    fn recorded_base(
        &self,
        run: &crate::ledger::RunId,
        ledger: Option<&Path>,
    ) -> Result<(String, PathBuf)> {
        let found = resolve(
            self.repo.repo.as_deref(),
            self.config.config.as_deref(),
            ledger,
            Needs {
                repo: true,
                config_at: ConfigAt::LedgerOnly,
            },
        )?;
        let transcript = crate::chain::require_transcript(&found.ledger, run)?;
        match &transcript.loaded.record.git {
            Some(g) => Ok((g.merge_base.clone(), found.ledger.root().to_path_buf())),
            None => Err(Error::Usage(format!(
                "run `{run}` was not captured from commits (`capture --git`), so its base is not recorded: pass `--base REV`"
            ))),
        }
    }

    /// Resolves the trial: the repository (required), the base revision,
    /// the configuration at it, the ledger, the supplied report, and the
    /// sandbox (made on first use).
    pub fn resolve(
        &self,
        ledger: Option<&Path>,
    ) -> Result<(crate::check::TrialSpec, crate::wasm::Lazy)> {
        if self.test_cmd.is_none() {
            self.test_env.limits.refuse_unused("--test-cmd")?;
        }
        let run = match &self.run {
            Some(r) => crate::ledger::RunId::parse(r)?,
            None => {
                let repo = Repo::open(self.repo.repo.as_deref().unwrap_or(Path::new(".")))?;
                let head = repo.head().ok_or_else(|| {
                    Error::Usage(
                        "no `--run`, and the repository has no commit to derive one from: pass `--run ID`"
                            .into(),
                    )
                })?;
                crate::ledger::RunId::of_commit(head)?
            }
        };
        let (base, found_in) = match &self.base {
            Some(b) => (b.clone(), None),
            None => {
                let (b, at) = self.recorded_base(&run, ledger)?;
                (b, Some(at))
            }
        };
        let resolved = resolve(
            self.repo.repo.as_deref(),
            self.config.config.as_deref(),
            ledger,
            Needs {
                repo: true,
                config_at: ConfigAt::Revision(&base),
            },
        )?;
        // The base was read from a receipt in the ledger the working tree's
        // configuration names; the trial reads the ledger the base's names.
        // Two ledgers would mean two receipts: refuse rather than judge
        // one on the other's word.
        if let Some(at) = found_in
            && at != resolved.ledger.root()
        {
            return Err(Error::Refused(format!(
                "run `{run}`'s merge base was read from the ledger `{}`, but the configuration at that merge base keeps the ledger at `{}`: pass `--base REV` and `--ledger DIR`",
                at.display(),
                resolved.ledger.root().display()
            )));
        }
        let junit = match &self.junit {
            Some(path) => {
                let bytes = crate::input::read_file(path, crate::input::REPORT_CAP)?;
                crate::junit::parse(path, &bytes)?;
                Some(bytes)
            }
            None => None,
        };
        let now = self
            .now
            .as_deref()
            .map(|s| crate::clock::parse_flag("--now", s))
            .transpose()?;
        let cache_dir = self.cache.dir();
        let eval_patch = match &self.eval_patch {
            Some(path) => Some(crate::evaluation::TestPatch::new(
                crate::input::read_file(path, crate::input::BODY_CAP)?,
                path.display().to_string(),
            )?),
            None => None,
        };
        let evaluation = evaluation(
            eval_patch,
            crate::record::RequiredTests {
                require_pass: self.require_pass.clone(),
                ..Default::default()
            },
        );
        let tests_config = resolved.config.config.tests.clone();
        let (Some(repo), Some(base)) = (resolved.repo, resolved.revision) else {
            return Err(Error::Internal(
                "a trial needs a repository and a base".into(),
            ));
        };
        let spec = crate::check::TrialSpec {
            run,
            repo,
            base,
            config: resolved.config,
            ledger: resolved.ledger,
            junit,
            test: match self.test_cmd.clone() {
                Some(command) => Some(crate::replay::TestCommand {
                    baseline: !self.no_test_baseline,
                    log_parser: self.test_log_parser,
                    ..self.test_env.command(
                        command,
                        &tests_config,
                        cache_dir.clone(),
                        // Hidden from the test command even with --no-cache.
                        self.cache.at.dir(),
                    )?
                }),
                None => None,
            },
            now,
            evaluation,
        };
        Ok((spec, crate::wasm::Lazy::new(cache_dir)))
    }
}

/// `$AGENT_LEDGER_CACHE_DIR`, else `$XDG_CACHE_HOME/agent-ledger`, else
/// `~/.cache/agent-ledger`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let env = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("AGENT_LEDGER_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("agent-ledger")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/agent-ledger")))
}
