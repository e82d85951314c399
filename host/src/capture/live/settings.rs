//! A live capture's settings ([`settings`]): the provider, endpoint, key,
//! timeouts and token budget, resolved from flags, the environment and the
//! configuration before anything is sent.

use super::*;

/// A live capture's settings, resolved from flags, the environment and
/// the configuration, before anything is sent.
pub struct Settings {
    pub provider: Provider,
    pub endpoint: Endpoint,
    pub model: String,
    pub stream: bool,
    pub api_key_env: String,
    pub max_tokens: u64,
    pub connect_timeout: u64,
    pub idle_timeout: u64,
    pub total_timeout: u64,
}

/// What the command line says about a live capture (`capture`'s flags;
/// `batch` has none and takes everything from the configuration).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub provider: Option<Provider>,
    pub endpoint: Option<String>,
    pub model: Option<String>,
    /// `--stream` (true) or `--no-stream` (false).
    pub stream: Option<bool>,
    pub api_key_env: Option<String>,
    pub max_tokens: Option<u64>,
    pub connect_timeout: Option<u64>,
    pub idle_timeout: Option<u64>,
    pub total_timeout: Option<u64>,
}

/// Flags first, then (for the token limit) `MODEL_TOKEN_BUDGET`, then
/// `[capture]` from `source`. Whatever is missing or invalid refuses the
/// call before it is made.
pub fn settings(flags: &Flags, config: &CaptureConfig, source: &str) -> Result<Settings> {
    {
        let needed = |flag: &str, key: &str| {
            Error::Usage(format!(
                "a live capture needs `--{flag}` (or `{key}` in the `[capture]` table of the configuration)"
            ))
        };
        let provider = flags
            .provider
            .or(config.provider)
            .ok_or_else(|| needed("provider", "provider"))?;
        let endpoint = match (&flags.endpoint, &config.endpoint) {
            (Some(flag), _) => {
                Endpoint::parse(flag).map_err(|why| Error::Usage(format!("`--endpoint`: {why}")))?
            }
            (None, Some(configured)) => Endpoint::parse(configured).map_err(|why| {
                Error::data(Path::new(source), format!("`capture.endpoint`: {why}"))
            })?,
            (None, None) => return Err(needed("endpoint", "endpoint")),
        };
        let model = flags
            .model
            .clone()
            .or_else(|| config.model.clone())
            .filter(|m| !m.is_empty())
            .ok_or_else(|| needed("model", "model"))?;
        let stream = flags.stream.or(config.stream).unwrap_or(false);
        let api_key_env = flags
            .api_key_env
            .clone()
            .or_else(|| config.api_key_env.clone())
            .unwrap_or_else(|| provider.default_key_env().to_string());
        let max_tokens = match flags.max_tokens {
            Some(n) => n,
            None => match token_budget()? {
                Some(n) => n,
                None => config.max_tokens.ok_or_else(|| {
                    Error::Usage(format!(
                        "no token budget: give `--max-tokens N`, set `{}`, or set `max_tokens` in `[capture]`; capture never picks a number itself, and no request was sent",
                        TOKEN_BUDGET_ENV
                    ))
                })?,
            },
        };
        Ok(Settings {
            provider,
            endpoint,
            model,
            stream,
            api_key_env,
            max_tokens,
            connect_timeout: flags
                .connect_timeout
                .or(config.connect_timeout)
                .unwrap_or(DEFAULT_CONNECT_TIMEOUT_SECS),
            idle_timeout: flags
                .idle_timeout
                .or(config.idle_timeout)
                .unwrap_or(DEFAULT_IDLE_TIMEOUT_SECS),
            total_timeout: flags
                .total_timeout
                .or(config.total_timeout)
                .unwrap_or(DEFAULT_TOTAL_TIMEOUT_SECS),
        })
    }
}

/// `MODEL_TOKEN_BUDGET`: unset or empty is no budget; anything but a whole
/// number of 1 or more is refused.
fn token_budget() -> Result<Option<u64>> {
    let name = TOKEN_BUDGET_ENV;
    match std::env::var_os(name) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v.to_str().and_then(|s| s.trim().parse::<u64>().ok()) {
            Some(n) if n > 0 => Ok(Some(n)),
            _ => Err(Error::Usage(format!(
                "`{name}` is `{}`: expected a whole number of tokens, 1 or more",
                v.to_string_lossy()
            ))),
        },
    }
}
