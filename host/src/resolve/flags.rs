//! Flag groups several commands share, each one `clap` struct flattened
//! where it is used, with one set of defaults: the compile cache
//! (`check`, `replay`, `plugin`, `batch`), the test command's limits
//! (`check`, `replay`, `verify`, `batch`) and its environment.

use crate::exit::{Error, Result};
use std::path::PathBuf;

/// Where compiled components and the other sealed caches are kept.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CacheDirArg {
    /// Where compiled components are cached [default: $AGENT_LEDGER_CACHE_DIR,
    /// else $XDG_CACHE_HOME/agent-ledger, else ~/.cache/agent-ledger].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl CacheDirArg {
    /// The directory given, else the default one (`None` when there is no
    /// home to put it in).
    pub fn dir(&self) -> Option<PathBuf> {
        self.cache_dir.clone().or_else(super::default_cache_dir)
    }
}

/// [`CacheDirArg`], or no cache at all.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CacheArgs {
    #[command(flatten)]
    pub at: CacheDirArg,
    /// Do not cache compiled components on disk.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
}

impl CacheArgs {
    /// The cache to use: none with `--no-cache`.
    pub fn dir(&self) -> Option<PathBuf> {
        if self.no_cache { None } else { self.at.dir() }
    }
}

/// The test command's sandbox and limits: one definition and one set of
/// defaults for `check`, `replay`, `verify --rerun-tests` (in
/// [`TestEnvArgs`]) and `batch`. The limits are options so that giving one
/// without a test command to apply it to is a usage error
/// ([`TestLimits::refuse_unused`]); the accessors apply the defaults.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TestLimits {
    /// Run the test command even when the kernel refuses the namespaces of
    /// its sandbox: as this user, with this user's files and network (the
    /// record says `sandbox: "none"`). `--allow-network` is an alias.
    #[arg(long, alias = "allow-network")]
    pub allow_unsandboxed: bool,
    /// Kill the test command after this many seconds (the trial is then
    /// not `review`) [default: 1800].
    #[arg(long, value_name = "SECONDS")]
    pub test_timeout: Option<u64>,
    /// Kill the test command once it has printed more than this many MiB,
    /// stdout and stderr together (the trial is then not `review`)
    /// [default: 16].
    #[arg(long, value_name = "MIB")]
    pub test_output_cap: Option<u64>,
    /// Kill the test command once its processes together hold more than
    /// this many MiB (anonymous memory plus its private `/tmp` and
    /// `/dev/shm`; the trial is then not `review`) [default: 4096]. Exact
    /// (a cgroup) where one can be made: as root, or in a cgroup v2
    /// subtree delegated to this user (`AGENT_LEDGER_CGROUP`); else
    /// sampled every 100 ms.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    pub test_memory: Option<u64>,
    /// At most this many processes and threads of the test command at
    /// once; a fork past it fails inside the sandbox [default: 512].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub test_max_procs: Option<u64>,
}

impl TestLimits {
    /// The first of these flags given on the command line, if any.
    pub fn given(&self) -> Option<&'static str> {
        [
            (self.allow_unsandboxed, "--allow-unsandboxed"),
            (self.test_timeout.is_some(), "--test-timeout"),
            (self.test_output_cap.is_some(), "--test-output-cap"),
            (self.test_memory.is_some(), "--test-memory"),
            (self.test_max_procs.is_some(), "--test-max-procs"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.test_timeout
                .unwrap_or(crate::replay::DEFAULT_TEST_TIMEOUT_SECS),
        )
    }

    /// In bytes.
    pub fn output_cap(&self) -> u64 {
        self.test_output_cap
            .unwrap_or(crate::replay::DEFAULT_TEST_OUTPUT_CAP_MIB)
            .saturating_mul(1 << 20)
    }

    /// In bytes.
    pub fn memory(&self) -> u64 {
        self.test_memory
            .unwrap_or(crate::replay::DEFAULT_TEST_MEMORY_MIB)
            .saturating_mul(1 << 20)
    }

    pub fn max_procs(&self) -> u64 {
        self.test_max_procs
            .unwrap_or(crate::replay::DEFAULT_TEST_MAX_PROCS)
    }

    /// A usage error when a limit was given but no test command runs
    /// (`needs`: the flag that would run one).
    pub fn refuse_unused(&self, needs: &str) -> Result<()> {
        match self.given() {
            Some(flag) => Err(Error::Usage(format!(
                "{flag} sets a limit of the test command, and no test command runs: give {needs} too, or drop {flag}"
            ))),
            None => Ok(()),
        }
    }
}

/// Where and under which limits the test command runs: shared by `check`
/// and `replay` (with `--test-cmd`) and `verify --rerun-tests` (whose flag
/// has the id `test_cmd`, so that these require it there).
#[derive(Debug, Clone, clap::Args)]
pub struct TestEnvArgs {
    #[command(flatten)]
    pub limits: TestLimits,
    /// Also copy the trial's test command output to stderr as it runs,
    /// each line escaped and behind `test | `, so no line of it starts
    /// where the suite chose. Without it the output goes only to the ledger, as
    /// `properties/ID.test.log`, and the record keeps its last 64 KiB.
    #[arg(long, requires = "test_cmd")]
    pub show_test_output: bool,
    /// Show a host path read-only inside the test command's sandbox
    /// (repeatable): a virtualenv, or an interpreter under `$HOME`, which
    /// the sandbox otherwise hides. It may not hold the ledger, the
    /// checkout or the compile cache.
    #[arg(long = "test-ro", value_name = "PATH", requires = "test_cmd")]
    pub read_only: Vec<PathBuf>,
    /// Pass a variable to the test command (repeatable): `NAME` takes this
    /// environment's value, `NAME=VALUE` sets one.
    #[arg(long = "test-env", value_name = "NAME[=VALUE]", requires = "test_cmd")]
    pub vars: Vec<String>,
}

impl TestEnvArgs {
    /// The test command `command` under these flags, with the
    /// configuration's `[tests]` paths and variables first.
    pub fn command(
        &self,
        command: String,
        config: &crate::config::Tests,
        cache_dir: Option<PathBuf>,
        hidden_cache: Option<PathBuf>,
    ) -> Result<crate::replay::TestCommand> {
        let mut read_only = config.read_only.clone();
        read_only.extend(self.read_only.iter().cloned());
        Ok(crate::replay::TestCommand {
            command,
            allow_unsandboxed: self.limits.allow_unsandboxed,
            timeout: self.limits.timeout(),
            output_cap: self.limits.output_cap(),
            memory: self.limits.memory(),
            max_procs: self.limits.max_procs(),
            baseline: true,
            // The user's cache stays out of sight even with --no-cache.
            hidden: hidden_cache.into_iter().collect(),
            read_only,
            env: test_env(&self.vars, &config.env)?,
            log_parser: None,
            cache_dir,
            echo: self.show_test_output,
        })
    }
}

/// `--test-env` values resolved: `NAME` from this environment (an error
/// when unset), `NAME=VALUE` as given. `HOME` and `AGENT_LEDGER_JUNIT` are
/// the sandbox's own.
pub fn test_env(specs: &[String], config_env: &[String]) -> Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for spec in config_env.iter().chain(specs) {
        let (name, value) = match spec.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => (
                spec.clone(),
                std::env::var(spec).map_err(|_| {
                    Error::Usage(format!(
                        "--test-env `{spec}`: the variable is not set in this environment (give `{spec}=VALUE`)"
                    ))
                })?,
            ),
        };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(Error::Usage(format!(
                "--test-env `{spec}`: `{name}` is not a variable name"
            )));
        }
        if name == "HOME" || name == "AGENT_LEDGER_JUNIT" {
            return Err(Error::Usage(format!(
                "--test-env `{spec}`: `{name}` is set by the sandbox"
            )));
        }
        out.retain(|(n, _)| *n != name);
        out.push((name, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::TestLimits;
    use clap::CommandFactory;

    /// The defaults the help states are the ones applied.
    #[test]
    fn the_stated_defaults_are_the_applied_ones() {
        #[derive(clap::Parser)]
        struct Probe {
            #[command(flatten)]
            limits: TestLimits,
        }
        let help = Probe::command().render_long_help().to_string();
        let none = TestLimits::default();
        for (flag, value) in [
            ("--test-timeout", none.timeout().as_secs()),
            ("--test-output-cap", none.output_cap() >> 20),
            ("--test-memory", none.memory() >> 20),
            ("--test-max-procs", none.max_procs()),
        ] {
            let at = help.find(flag).unwrap();
            let rest = &help[at..];
            let text = &rest[..rest[2..].find("\n  --").map_or(rest.len(), |i| i + 2)];
            assert!(
                text.contains(&format!("[default: {value}]")),
                "{flag}: {text}"
            );
        }
        assert_eq!(none.given(), None);
        let some = TestLimits {
            test_memory: Some(1),
            ..TestLimits::default()
        };
        assert_eq!(some.given(), Some("--test-memory"));
        assert!(some.refuse_unused("--test-cmd").is_err());
    }
}
