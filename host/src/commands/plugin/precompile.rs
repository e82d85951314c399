//! `agent-ledger plugin precompile`: compile components into the compile
//! cache ahead of the first `check`, so that a CI image (or a cache that
//! `actions/cache` restores) starts warm.
//!
//! Each component is loaded exactly as `check` loads it (imports audited,
//! compiled under the sandbox's settings, `describe` run), so a refused one
//! is reported and never cached. Then a second engine loads it again from
//! the cache: a component that had to be compiled twice was not cached
//! (no key, a directory that cannot be written), which is an error here
//! rather than a slow first `check` later.

use crate::exit::{Error, ExitCode, Result, Sysexit};
use crate::output::{self, OutputArgs, inert};
use crate::wasm::{Limits, Sandbox};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct PrecompileArgs {
    /// Components to compile: paths to `.wasm` files, or `builtin:NAME`
    /// [default: every built-in property].
    #[arg(value_name = "PLUGIN")]
    pub plugins: Vec<String>,
    #[command(flatten)]
    pub cache: crate::resolve::CacheDirArg,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// What `plugin precompile` prints.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PrecompileOutput {
    cache_dir: String,
    /// Where the key that authenticates the entries comes from: the
    /// `AGENT_LEDGER_CACHE_KEY` variable or the per-user key file's path.
    key: String,
    plugins: Vec<Entry>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Entry {
    plugin: String,
    sha256: String,
    /// What it says about itself; absent when it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// Whether this run compiled it (else the cache already held it).
    compiled: bool,
    /// Loading it: compiling (or reading the cache), linking, `describe`.
    load_ms: u64,
    /// Why it was refused (nothing is cached then).
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<String>,
}

impl PrecompileArgs {
    pub fn execute(self) -> Result<ExitCode> {
        let dir = self.cache.dir().ok_or_else(|| {
            Error::Usage(
                "no cache directory: pass --cache-dir or set AGENT_LEDGER_CACHE_DIR".into(),
            )
        })?;
        let key = crate::wasm::cache_key_source().ok_or_else(|| {
            Error::Usage(format!(
                "no key to authenticate cache entries: set {} or HOME",
                crate::wasm::CACHE_KEY_ENV
            ))
        })?;
        let components = self.components()?;
        let engine = |what: &str| {
            Sandbox::new(Some(dir.clone())).map_err(|e| {
                Error::Internal(format!("cannot start the WebAssembly engine ({what}): {e}"))
            })
        };
        let (first, second) = (engine("compile")?, engine("re-read")?);
        let limits = Limits::default();
        let mut plugins = Vec::new();
        for (label, bytes) in &components {
            let inspection = first.inspect(bytes, &limits);
            let refused = inspection.loaded.as_ref().err().map(|r| r.0.clone());
            if refused.is_none() && second.inspect(bytes, &limits).compiled {
                return Err(Error::Internal(format!(
                    "`{label}` compiled, but no entry for it could be read back from `{}`: \
                     is the directory writable, and the key ({key}) usable?",
                    dir.display()
                )));
            }
            plugins.push(Entry {
                plugin: label.clone(),
                sha256: inspection.sha256,
                name: inspection.loaded.as_ref().ok().map(|p| p.name.clone()),
                compiled: inspection.compiled,
                load_ms: inspection.load_wall.as_millis() as u64,
                refused,
            });
        }
        let report = PrecompileOutput {
            cache_dir: dir.display().to_string(),
            key,
            plugins,
        };
        output::emit(self.output.format, &report, || report.human())?;
        Ok(if report.plugins.iter().any(|p| p.refused.is_some()) {
            ExitCode::Sysexit(Sysexit::Data)
        } else {
            ExitCode::Ok
        })
    }

    /// Each named component's label and bytes.
    fn components(&self) -> Result<Vec<(String, Vec<u8>)>> {
        if self.plugins.is_empty() {
            return Ok(crate::plugins::BUILTINS
                .iter()
                .map(|b| (format!("builtin:{}", b.name), b.component.to_vec()))
                .collect());
        }
        self.plugins
            .iter()
            .map(|p| match p.strip_prefix("builtin:") {
                Some(name) => crate::plugins::builtin(name)
                    .map(|b| (p.clone(), b.component.to_vec()))
                    .ok_or_else(|| {
                        let known: Vec<&str> =
                            crate::plugins::BUILTINS.iter().map(|b| b.name).collect();
                        Error::Usage(format!(
                            "no built-in property `{}` (there are: {})",
                            inert(name),
                            known.join(", ")
                        ))
                    }),
                None => {
                    let path = PathBuf::from(p);
                    crate::input::read_file(&path, crate::input::OBJECT_CAP)
                        .map(|bytes| (path.display().to_string(), bytes))
                }
            })
            .collect()
    }
}

impl PrecompileOutput {
    fn human(&self) -> String {
        let mut text = format!(
            "compile cache: {} (entries authenticated with {})\n",
            inert(&self.cache_dir),
            inert(&self.key)
        );
        for p in &self.plugins {
            let what = match (&p.refused, p.compiled) {
                (Some(why), _) => format!("refused: {}", inert(why)),
                (None, true) => format!("compiled in {} ms", p.load_ms),
                (None, false) => format!("already compiled ({} ms to load)", p.load_ms),
            };
            text.push_str(&format!(
                "  {}  {}  {what}\n",
                &p.sha256[..12],
                inert(&p.plugin)
            ));
        }
        text
    }
}
