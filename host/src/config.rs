//! `agent-ledger.toml`: read from the base revision (or an explicit file
//! outside the tree), never from the patched tree. Field meanings are in
//! `docs/guide/configuration.md`.

use crate::exit::{Error, Result};
use crate::git::Repo;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The configuration file's name at the repository root.
pub const FILE_NAME: &str = "agent-ledger.toml";
/// The schema version this build reads.
pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub schema: u32,
    #[serde(default = "default_ledger")]
    pub ledger: String,
    #[serde(default)]
    pub fixtures: Fixtures,
    #[serde(default)]
    pub tests: Tests,
    #[serde(default)]
    pub protect: Protect,
    #[serde(default)]
    pub flakes: Flakes,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub capture: CaptureConfig,
    #[serde(default)]
    pub trace: TraceConfig,
    #[serde(default, rename = "property")]
    pub properties: Vec<PropertyConfig>,
}

fn default_ledger() -> String {
    ".agent-ledger".into()
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fixtures {
    #[serde(default)]
    pub roots: Vec<String>,
    /// Why the repository has no fixture directory: a trial then locks no
    /// files and says why, rather than failing the lock (never with
    /// `roots`).
    #[serde(default)]
    pub none: Option<String>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tests {
    /// Globs of test files; a `[tests]` table without `globs` keeps the
    /// built-in defaults (what `init` writes when it recognises no test).
    #[serde(default = "default_test_globs")]
    pub globs: Vec<String>,
    /// Host paths the test command's sandbox shows read-only (as
    /// `--test-ro`, which adds to these).
    #[serde(default)]
    pub read_only: Vec<std::path::PathBuf>,
    /// Variables passed to the test command (as `--test-env`: `NAME` or
    /// `NAME=VALUE`).
    #[serde(default)]
    pub env: Vec<String>,
}

/// A test glob as every reader takes it (the host here and in `check`'s
/// note, the built-in properties through `agent_ledger_guest::Globs`):
/// `globset`, `*` inside one segment, `**` across segments, `{a,b}`.
pub fn test_glob(pattern: &str) -> std::result::Result<globset::GlobMatcher, String> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("`{pattern}` is not a glob: {e}"))
}

fn default_test_globs() -> Vec<String> {
    Tests::default().globs
}

impl Default for Tests {
    fn default() -> Self {
        Tests {
            globs: [
                "tests/**",
                "**/*_test.go",
                "**/test_*.py",
                "**/*_test.py",
                "**/*.test.ts",
                "**/*.test.js",
                "**/*.spec.ts",
                "**/*.spec.js",
                "**/src/test/**",
            ]
            .map(String::from)
            .to_vec(),
            read_only: Vec::new(),
            env: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Protect {
    #[serde(default)]
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flakes {
    #[serde(default = "default_flakes_file")]
    pub file: String,
    #[serde(default = "default_max_days")]
    pub max_days: u32,
}

fn default_flakes_file() -> String {
    "flakes.toml".into()
}
fn default_max_days() -> u32 {
    30
}

impl Default for Flakes {
    fn default() -> Self {
        Flakes {
            file: default_flakes_file(),
            max_days: default_max_days(),
        }
    }
}

/// Default bounds for every property; a `[[property]]` may lower or raise its own.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub fuel: Option<u64>,
    pub memory_mb: Option<u64>,
    pub timeout_ms: Option<u64>,
}

/// How `reconcile`, `trace exec` and `trace end` read the working tree.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// `deny` (the default): a change to a git-ignored path is part of the
    /// delta like any other, so an untraced one is a ghost; `allow`:
    /// git-ignored paths are not read.
    #[serde(default)]
    pub ignored: IgnoredPolicy,
}

/// Whether changes to git-ignored paths count (`[trace] ignored`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IgnoredPolicy {
    #[default]
    Deny,
    Allow,
}

/// Defaults for a live capture (`capture --prompt-file`); each key has the
/// flag of the same name (`api_key_env` is `--api-key-env`), which wins.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureConfig {
    /// The API base, e.g. `https://api.openai.com/v1`.
    pub endpoint: Option<String>,
    pub provider: Option<crate::provider::Provider>,
    pub model: Option<String>,
    pub stream: Option<bool>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Used when neither `--max-tokens` nor `MODEL_TOKEN_BUDGET` is set.
    pub max_tokens: Option<u64>,
    /// Seconds.
    pub connect_timeout: Option<u64>,
    /// Seconds.
    pub idle_timeout: Option<u64>,
    /// Seconds for the whole exchange, the body's last byte included
    /// (`--total-timeout`).
    pub total_timeout: Option<u64>,
    /// Never a key: parsed only to refuse it, without keeping the value.
    /// Left out of the schema, whose closed object then refuses it too.
    #[serde(default)]
    #[schemars(skip)]
    api_key: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropertyConfig {
    pub name: String,
    /// `builtin:NAME`, a path in the base tree, or an absolute path outside it.
    pub plugin: String,
    /// A patch this property must miss on (self-test).
    pub known_bad: Option<String>,
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    pub fuel: Option<u64>,
    pub memory_mb: Option<u64>,
    pub timeout_ms: Option<u64>,
}

/// Where the configuration came from, and its bytes' digest.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    /// The exact bytes (archived in the ledger by sha256).
    pub bytes: Vec<u8>,
    pub sha256: String,
    /// Human description: `agent-ledger.toml at <rev>` or the file path.
    pub source: String,
}

impl LoadedConfig {
    /// Parses configuration bytes read from `source`.
    pub fn from_bytes(bytes: Vec<u8>, source: String) -> Result<LoadedConfig> {
        Ok(LoadedConfig {
            config: Config::parse(&bytes, Path::new(&source))?,
            sha256: crate::digest::sha256_hex(&bytes),
            bytes,
            source,
        })
    }

    /// No configuration file: the defaults, recorded as the empty file.
    pub fn absent(source: String) -> LoadedConfig {
        LoadedConfig {
            config: Config::absent(),
            sha256: crate::digest::sha256_hex(b""),
            bytes: Vec::new(),
            source,
        }
    }
}

/// Where a command reads `agent-ledger.toml` from when no `--config FILE`
/// is given.
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    /// A revision of the repository: the trusted base of a trial. A
    /// `--config FILE` must then lie outside the repository, so the tree
    /// under judgement never supplies its own configuration.
    Revision(&'a str),
    /// The working tree at the repository root (or the current directory
    /// outside a repository): the operator's own bookkeeping commands.
    WorkingTree,
}

/// Reads the configuration: `file` when given, else `agent-ledger.toml` as
/// `at` says. `root` is the repository root (or the current directory when
/// there is no repository); `repo` is needed for `At::Revision`.
pub fn load(
    repo: Option<&Repo>,
    root: &Path,
    at: At<'_>,
    file: Option<&Path>,
) -> Result<LoadedConfig> {
    if let Some(path) = file {
        if let (At::Revision(_), Some(repo)) = (at, repo)
            && crate::paths::is_inside(&repo.root, path)
        {
            return Err(Error::Usage(format!(
                "`--config {}` is inside the repository; the patched tree must not supply its own configuration: name a file outside it, or let agent-ledger read `{FILE_NAME}` from the base revision",
                path.display(),
            )));
        }
        let bytes = crate::input::read_file(path, crate::input::CONFIG_CAP)?;
        return LoadedConfig::from_bytes(bytes, path.display().to_string());
    }
    match (at, repo) {
        (At::Revision(rev), Some(repo)) => {
            let source = format!("{FILE_NAME} at {rev}");
            match repo.read_at(rev, FILE_NAME)? {
                Some(bytes) => LoadedConfig::from_bytes(bytes, source),
                None => Ok(LoadedConfig::absent(format!("no {source}"))),
            }
        }
        (At::Revision(rev), None) => Err(Error::Internal(format!(
            "the configuration at `{rev}` needs a repository"
        ))),
        (At::WorkingTree, _) => {
            let path = root.join(FILE_NAME);
            match crate::input::read_optional(&path, crate::input::CONFIG_CAP)? {
                Some(bytes) => LoadedConfig::from_bytes(bytes, path.display().to_string()),
                None => Ok(LoadedConfig::absent(format!("no {}", path.display()))),
            }
        }
    }
}

impl Config {
    /// The configuration used when the base revision has none: no fixture
    /// roots (so the trial cannot pass the lock) and the built-in properties.
    pub fn absent() -> Config {
        Config {
            schema: SCHEMA,
            ledger: default_ledger(),
            fixtures: Fixtures::default(),
            tests: Tests::default(),
            protect: Protect::default(),
            flakes: Flakes::default(),
            limits: LimitsConfig::default(),
            capture: CaptureConfig::default(),
            trace: TraceConfig::default(),
            properties: Vec::new(),
        }
    }

    pub fn parse(bytes: &[u8], source: &Path) -> Result<Config> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Error::data(source, "configuration is not UTF-8"))?;
        // The message and position only: toml's own rendering quotes the
        // offending line, which may hold a value that should not be printed.
        let config: Config = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or_else(String::new, |span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(" (line {line}, column {column})")
            });
            Error::data(
                source,
                format!("invalid configuration: {}{at}", e.message().trim()),
            )
        })?;
        if config.schema > SCHEMA || config.schema == 0 {
            return Err(Error::data(
                source,
                format!(
                    "field `schema` is {}; this build reads schema {SCHEMA}",
                    config.schema
                ),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in config.properties.iter().enumerate() {
            if p.name.is_empty()
                || !p
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(Error::data(
                    source,
                    format!(
                        "`property[{i}].name` `{}` must be letters, digits, `_` or `-`",
                        p.name
                    ),
                ));
            }
            if p.name == "patch_applies" {
                return Err(Error::data(
                    source,
                    format!("`property[{i}].name`: `patch_applies` is the host's own property"),
                ));
            }
            if !seen.insert(p.name.as_str()) {
                return Err(Error::data(
                    source,
                    format!("`property[{i}].name`: `{}` is listed twice", p.name),
                ));
            }
        }
        let c = &config.capture;
        if c.api_key.is_some() {
            return Err(Error::data(
                source,
                "`capture.api_key`: the configuration never holds an API key; name the environment variable that does with `api_key_env`",
            ));
        }
        for (key, value) in [
            ("max_tokens", c.max_tokens),
            ("connect_timeout", c.connect_timeout),
            ("idle_timeout", c.idle_timeout),
        ] {
            if value == Some(0) {
                return Err(Error::data(
                    source,
                    format!("`capture.{key}` is 0; it must be 1 or more"),
                ));
            }
        }
        for glob in &config.tests.globs {
            test_glob(glob).map_err(|e| Error::data(source, format!("`tests.globs`: {e}")))?;
        }
        for root in &config.fixtures.roots {
            crate::lock::normalize_root(root)
                .map_err(|e| Error::data(source, format!("`fixtures.roots`: {e}")))?;
        }
        match &config.fixtures.none {
            Some(_) if !config.fixtures.roots.is_empty() => {
                return Err(Error::data(
                    source,
                    "`fixtures.none` says there is no fixture directory, but `fixtures.roots` names some: keep one",
                ));
            }
            Some(reason) if reason.trim().is_empty() => {
                return Err(Error::data(
                    source,
                    "`fixtures.none` must say why the repository has no fixture directory",
                ));
            }
            _ => {}
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests;
