//! `agent-ledger capture`: judge and store a model response, read from a
//! file or received from a model (live capture).

use crate::capture::live::{self, ApiKey, Settings};
use crate::capture::{CaptureInput, capture};
use crate::exit::{Error, ExitCode, Result};
use crate::input;
use crate::ledger::RunId;
use crate::output::{self, OutputFormat, inert};
use crate::provider::{BodyFormat, Provider};
use crate::resolve::{ConfigAt, Needs, ScopeArgs};
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod human;
use human::human;

#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("source").required(true).args(["body", "prompt_file", "git"])
))]
pub struct CaptureArgs {
    /// Run id for this trial (a retry is a new run id) [default, with
    /// `--git`: `git-` and the first 12 hex digits of the range's head
    /// commit; required otherwise].
    #[arg(long, value_name = "ID", required_unless_present = "git")]
    pub run: Option<String>,
    /// The response body: a file, or `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub body: Option<PathBuf>,
    /// Send this prompt (a UTF-8 file, or `-` for stdin) to a model and
    /// capture its response: live capture. Exactly one of `--body` and
    /// `--prompt-file` is given.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Take the patch from commits: `BASE..HEAD` (or `BASE...HEAD`, the
    /// same) is the diff from the merge base of BASE and HEAD to HEAD, as
    /// a pull request shows it. The receipt records the range, both commits
    /// and the merge base, and `check` judges the patch on that merge base
    /// (its `--base` may be left out).
    #[arg(long, value_name = "BASE..HEAD", conflicts_with_all = ["body_format", "extract", "declared_bytes", "request_id"])]
    pub git: Option<String>,
    /// How the body is encoded (a live capture's format follows from
    /// `--provider` and `--stream`).
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        conflicts_with = "prompt_file"
    )]
    pub body_format: Option<BodyFormat>,
    /// Output format (human, json). For one release it also accepts a body
    /// format (raw, openai-chat, ...), with a deprecation warning: use
    /// `--body-format` for that.
    #[arg(long = "format", value_name = "FORMAT", action = clap::ArgAction::Append)]
    pub formats: Vec<String>,
    /// Take the diff out of the model's answer: `patch-tags` (between a
    /// `<patch>` and a `</patch>` line, SWE-bench's convention) or `fence`
    /// (one fenced ```` ```diff ```` block). A missing closing delimiter is
    /// `unterminated_envelope`. Without it, a wrapped answer is incomplete.
    #[arg(long, value_enum, value_name = "ENVELOPE")]
    pub extract: Option<crate::envelope::Extract>,
    /// The byte length the server declared for the response (a live
    /// capture records the `Content-Length` header itself).
    #[arg(long, value_name = "N", conflicts_with = "prompt_file")]
    pub declared_bytes: Option<u64>,
    /// The provider's request id (a live capture records the `x-request-id`
    /// or `request-id` header itself).
    #[arg(long, value_name = "R", conflicts_with = "prompt_file")]
    pub request_id: Option<String>,
    /// The agent's tool-call trace (JSONL, see `agent-ledger trace`), stored
    /// beside the transcript for the `span_bijection` property.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The run key of a trace begun with `trace begin` [default: TRACE.key,
    /// when it exists]: every line's MAC is checked with it before the trace
    /// is stored, and its sha256 goes in the receipt.
    #[arg(long, value_name = "FILE", requires = "trace")]
    pub trace_key: Option<PathBuf>,
    #[command(flatten)]
    pub key_pin: crate::trace::KeyPin,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Last: its help heading applies to the flags after it.
    #[command(flatten)]
    pub live: LiveArgs,
}

/// The flags of a live capture. Each may also be set in the `[capture]`
/// table of the configuration (same name, snake_case); a flag wins.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Live capture (with --prompt-file)")]
pub struct LiveArgs {
    /// The API base the provider's path is appended to, e.g.
    /// `https://api.openai.com/v1`. https, or http to this machine only.
    #[arg(long, value_name = "URL", conflicts_with = "body")]
    pub endpoint: Option<String>,
    /// The provider's API.
    #[arg(long, value_enum, value_name = "API", conflicts_with = "body")]
    pub provider: Option<Provider>,
    /// The model to ask.
    #[arg(long, value_name = "M", conflicts_with = "body")]
    pub model: Option<String>,
    /// Ask for a server-sent-event stream.
    #[arg(long, conflicts_with = "body", overrides_with = "no_stream")]
    pub stream: bool,
    /// Ask for one JSON response (overrides `stream = true` in the
    /// configuration).
    #[arg(long, conflicts_with = "body", overrides_with = "stream")]
    pub no_stream: bool,
    /// The environment variable holding the API key [default:
    /// OPENAI_API_KEY, or ANTHROPIC_API_KEY for `anthropic`]. The key is
    /// sent in one header and never written anywhere.
    #[arg(long, value_name = "NAME", conflicts_with = "body")]
    pub api_key_env: Option<String>,
    /// The output token limit sent with the request [default:
    /// $MODEL_TOKEN_BUDGET, else `max_tokens` in `[capture]`; with none,
    /// no request is sent].
    #[arg(long, value_name = "N", conflicts_with = "body",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Seconds allowed to resolve the host and connect (TLS included)
    /// [default: 10].
    #[arg(long, value_name = "SECS", conflicts_with = "body",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub connect_timeout: Option<u64>,
    /// Seconds allowed for any one wait for the response: its head, or the
    /// next bytes of its body [default: 300]. A stream that stalls longer
    /// is cut and its receipt is `incomplete` (`transport_error`).
    #[arg(long, value_name = "SECS", conflicts_with = "body",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: Option<u64>,
    /// Seconds allowed for the whole exchange, from resolving the host to
    /// the body's last byte [default: 1200]. A server that trickles bytes
    /// never trips `--idle-timeout`; past this the answer is cut and its
    /// receipt is `incomplete` (`transport_error`).
    #[arg(long, value_name = "SECS", conflicts_with = "body",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub total_timeout: Option<u64>,
}

impl LiveArgs {
    /// The flags, for `capture::live::settings`.
    fn flags(&self) -> live::Flags {
        live::Flags {
            provider: self.provider,
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            stream: if self.stream {
                Some(true)
            } else if self.no_stream {
                Some(false)
            } else {
                None
            },
            api_key_env: self.api_key_env.clone(),
            max_tokens: self.max_tokens,
            connect_timeout: self.connect_timeout,
            idle_timeout: self.idle_timeout,
            total_timeout: self.total_timeout,
        }
    }
}

/// The two sides of `--git BASE..HEAD` (or `BASE...HEAD`: the diff from
/// the merge base is what both mean to a pull request).
fn split_range(range: &str) -> Result<(&str, &str)> {
    let (base, head) = match range.split_once("...") {
        Some(sides) => sides,
        None => range.split_once("..").ok_or_else(|| {
            Error::Usage(format!(
                "`--git {}` is not a range: give BASE..HEAD (for a pull request, e.g. `origin/main..HEAD`)",
                inert(range)
            ))
        })?,
    };
    if base.is_empty() || head.is_empty() || head.contains("..") {
        return Err(Error::Usage(format!(
            "`--git {}` is not a range: give BASE..HEAD with both sides named",
            inert(range)
        )));
    }
    Ok((base, head))
}

/// Splits the values of `--format` into the output format and, deprecated,
/// a body format.
fn resolve_formats(
    body_flag: Option<BodyFormat>,
    values: &[String],
) -> Result<(Option<BodyFormat>, OutputFormat)> {
    let mut body = body_flag;
    let mut out = None;
    for v in values {
        if let Ok(f) = OutputFormat::from_str(v, false) {
            if out.replace(f).is_some() {
                return Err(Error::Usage("`--format` names two output formats".into()));
            }
        } else if let Ok(f) = BodyFormat::from_str(v, false) {
            if body.replace(f).is_some() {
                return Err(Error::Usage(
                    "the body format is given twice (`--body-format` and `--format`, or `--format` twice)".into(),
                ));
            }
            let v = inert(v);
            eprintln!(
                "warning: `--format {v}` names the body format; use `--body-format {v}` (from the next release `--format` names only the output format)"
            );
        } else {
            return Err(Error::Usage(format!(
                "invalid value `{v}` for `--format`: expected human or json (body formats go to `--body-format`)"
            )));
        }
    }
    Ok((body, out.unwrap_or_default()))
}

impl CaptureArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        // With `--git` and no `--run`, the id comes from the head commit
        // (below); every other source needs `--run` (clap enforces it).
        let given = self.run.as_deref().map(RunId::parse).transpose()?;
        let (body_format, output) = resolve_formats(self.body_format, &self.formats)?;
        let (trace, trace_auth) = match &self.trace {
            Some(path) => {
                let bytes = input::read_file(path, input::TRACE_CAP)?;
                let auth = match crate::trace::verify(
                    path,
                    &bytes,
                    self.trace_key.as_deref(),
                    self.key_pin.sha256.as_deref(),
                )? {
                    Ok(v) => v.auth,
                    Err(forged) => {
                        return Err(Error::data(
                            path,
                            format!("does not verify, so it is not stored: {forged}"),
                        ));
                    }
                };
                let auth = auth.map(|a| crate::record::TraceAuth {
                    run: a.run,
                    agent: a.agent,
                    key_sha256: a.key_sha256,
                    base: a.base,
                    sealed: a.sealed,
                    lines: a.lines as u64,
                    verified: crate::record::TraceVerification::HmacSha256,
                });
                (Some(bytes), auth)
            }
            None => (None, None),
        };
        let mut retry = None;
        let receipt = match (&self.body, &self.prompt_file) {
            (None, None) if self.git.is_some() => {
                let range = self.git.as_deref().unwrap_or_default();
                let (base, head) = split_range(range)?;
                let found = self.scope.resolve(
                    ledger,
                    Needs {
                        repo: true,
                        config_at: ConfigAt::Unused,
                    },
                )?;
                let repo = found.repo()?;
                let base = repo.commit_of(base, "`--git` base")?;
                let head = repo.commit_of(head, "`--git` head")?;
                let (merge_base, patch) = repo.range_patch(&base, &head)?;
                let run = match &given {
                    Some(r) => r.clone(),
                    None => RunId::of_commit(&head)?,
                };
                if patch.len() as u64 > input::BODY_CAP {
                    return Err(Error::data(
                        Path::new(range),
                        format!(
                            "the range's diff is {} bytes, past the cap of {} bytes a captured patch may have",
                            patch.len(),
                            input::BODY_CAP
                        ),
                    ));
                }
                // The ledger the configuration at the merge base names, as
                // `check` will read it: never one the branch's own
                // `agent-ledger.toml` moves (it could point `check` at a
                // receipt the branch commits).
                let ledger_dir = match ledger {
                    Some(_) => found.ledger.clone(),
                    None => {
                        self.scope
                            .resolve(
                                None,
                                Needs {
                                    repo: true,
                                    config_at: ConfigAt::Revision(&merge_base),
                                },
                            )?
                            .ledger
                    }
                };
                // A receipt already there that the branch itself commits is
                // not a retry: say what it is.
                let receipt = ledger_dir.transcript(&run);
                if repo.head_holds(&receipt)? {
                    return Err(Error::Refused(format!(
                        "`{}` is committed in the checked-out HEAD: a receipt is written by `capture`, never taken from a commit; remove the ledger from the branch",
                        receipt.display()
                    )));
                }
                capture(
                    &ledger_dir,
                    CaptureInput {
                        run: &run,
                        format: BodyFormat::Raw,
                        extract: None,
                        body: &patch,
                        declared_bytes: None,
                        request_id: None,
                        trace: trace.as_deref(),
                        trace_auth: trace_auth.clone(),
                        captured_at: crate::clock::format_time(crate::clock::now()),
                        access: crate::ledger::Access::Shared,
                        git: Some(crate::record::GitRange {
                            range: range.to_string(),
                            base,
                            head,
                            merge_base,
                        }),
                        repository: repo.display_name(),
                    },
                )?
            }
            (Some(body), None) => {
                let run = required(&given)?;
                let ledger = self.scope.new_ledger(ledger)?;
                let body_path = body;
                let body = input::read_file_or_stdin(body, input::BODY_CAP)?;
                capture(
                    &ledger,
                    CaptureInput {
                        run: &run,
                        format: body_format.unwrap_or(BodyFormat::Raw),
                        extract: self.extract,
                        body: &body,
                        declared_bytes: self.declared_bytes,
                        request_id: self.request_id.clone(),
                        trace: trace.as_deref(),
                        trace_auth: trace_auth.clone(),
                        captured_at: crate::clock::format_time(crate::clock::now()),
                        access: if body_path.as_os_str() == "-" {
                            crate::ledger::Access::Shared
                        } else {
                            crate::ledger::Access::of(body_path)
                        },
                        git: None,
                        repository: self.repository(),
                    },
                )?
            }
            (None, Some(prompt_file)) => {
                let run = required(&given)?;
                if body_format.is_some() {
                    return Err(Error::Usage(
                        "a live capture's body format follows from `--provider` and `--stream`: drop the body format from `--format`".into(),
                    ));
                }
                // The `[capture]` table is read even with `--ledger`.
                let resolved = self.scope.resolve(
                    ledger,
                    Needs {
                        repo: false,
                        config_at: ConfigAt::WorkingTree,
                    },
                )?;
                if resolved.repo.is_none() && ledger.is_none() {
                    return Err(Error::Usage(format!(
                        "`{}` is not in a git repository: pass `--repo DIR` for the repository the patch is for, or `--ledger DIR`",
                        resolved.root.display()
                    )));
                }
                let settings = live::settings(
                    &self.live.flags(),
                    &resolved.config.config.capture,
                    &resolved.config.source,
                )?;
                let prompt = input::read_file_or_stdin(prompt_file, input::BODY_CAP)?;
                let prompt = String::from_utf8(prompt)
                    .map_err(|_| Error::data(prompt_file, "the prompt is not UTF-8"))?;
                let key = ApiKey::from_env(&settings.api_key_env)?;
                let receipt = live::capture(
                    &resolved.ledger,
                    live::Call {
                        run: &run,
                        provider: settings.provider,
                        endpoint: &settings.endpoint,
                        model: &settings.model,
                        stream: settings.stream,
                        key: &key,
                        max_tokens: settings.max_tokens,
                        connect_timeout: Duration::from_secs(settings.connect_timeout),
                        idle_timeout: Duration::from_secs(settings.idle_timeout),
                        total_timeout: Duration::from_secs(settings.total_timeout),
                        prompt: &prompt,
                        extract: self.extract,
                        trace: trace.as_deref(),
                        trace_auth: trace_auth.clone(),
                        captured_at: crate::clock::format_time(crate::clock::now()),
                        repository: resolved.repo.as_ref().and_then(|r| r.display_name()),
                    },
                )?;
                if !receipt.complete {
                    retry = Some((run.clone(), self.retry_command(&run, &settings, ledger)));
                }
                receipt
            }
            _ => {
                return Err(Error::Internal(
                    "clap lets exactly one of `--body`, `--prompt-file` and `--git` through".into(),
                ));
            }
        };
        output::emit(output, &receipt, || human(&receipt))?;
        if let Some((run, command)) = retry {
            // Each line made inert on its own: the command quotes paths,
            // which may hold anything, but the line break is ours.
            eprintln!(
                "note: run `{}` is incomplete and capture does not retry; a second attempt is a new run id:",
                inert(run.as_str())
            );
            eprintln!("  {}", inert(&command));
        }
        Ok(if receipt.complete {
            ExitCode::Ok
        } else {
            ExitCode::Incomplete
        })
    }

    /// The repository `--repo` (or the current directory) is in, as
    /// people name it; `None` outside a repository.
    fn repository(&self) -> Option<String> {
        let dir = self.scope.repo.repo.as_deref().unwrap_or(Path::new("."));
        crate::git::Repo::open(dir).ok()?.display_name()
    }

    /// What to run for a second attempt: capture never retries, and a
    /// retry is a new run id. Every setting is spelled out, so the
    /// command does the same call whatever the environment then holds.
    fn retry_command(&self, run: &RunId, s: &Settings, ledger: Option<&Path>) -> String {
        let mut args: Vec<String> = vec!["agent-ledger".into(), "capture".into()];
        let mut flag = |name: &str, value: &str| {
            args.push(format!("--{name}"));
            args.push(shell_quote(value));
        };
        if let Some(dir) = ledger {
            flag("ledger", &dir.to_string_lossy());
        }
        flag("run", &next_run_id(run));
        if let Some(p) = &self.prompt_file {
            flag("prompt-file", &p.to_string_lossy());
        }
        flag("provider", s.provider.as_str());
        flag("endpoint", s.endpoint.as_str());
        flag("model", &s.model);
        flag("api-key-env", &s.api_key_env);
        flag("max-tokens", &s.max_tokens.to_string());
        flag("connect-timeout", &s.connect_timeout.to_string());
        flag("idle-timeout", &s.idle_timeout.to_string());
        flag("total-timeout", &s.total_timeout.to_string());
        if let Some(t) = &self.trace {
            flag("trace", &t.to_string_lossy());
        }
        if let Some(c) = &self.scope.config.config {
            flag("config", &c.to_string_lossy());
        }
        if let Some(r) = &self.scope.repo.repo {
            flag("repo", &r.to_string_lossy());
        }
        args.push(if s.stream { "--stream" } else { "--no-stream" }.into());
        args.join(" ")
    }
}

/// `--run`, which every source but `--git` needs (clap says so first).
fn required(given: &Option<RunId>) -> Result<RunId> {
    given
        .clone()
        .ok_or_else(|| Error::Usage("`--run ID` is required without `--git`".into()))
}

/// A run id for the next attempt: `ID-retry1`, then `ID-retry2`, ...
fn next_run_id(run: &RunId) -> String {
    let id = run.as_str();
    if let Some((stem, n)) = id.rsplit_once("-retry")
        && let Ok(n) = n.parse::<u32>()
    {
        return format!("{stem}-retry{}", n.saturating_add(1));
    }
    let next = format!("{id}-retry1");
    if RunId::parse(&next).is_ok() {
        next
    } else {
        "NEW-RUN-ID".into()
    }
}

/// `value` as one word for a POSIX shell.
fn shell_quote(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=@%+,-".contains(&b));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_gets_the_next_run_id() {
        let id = |s| next_run_id(&RunId::parse(s).unwrap());
        assert_eq!(id("run-001"), "run-001-retry1");
        assert_eq!(id("run-001-retry1"), "run-001-retry2");
        assert_eq!(id("run-retryx"), "run-retryx-retry1");
        assert_eq!(id(&"a".repeat(128)), "NEW-RUN-ID");
    }

    #[test]
    fn shell_quote_leaves_plain_words_alone() {
        assert_eq!(shell_quote("https://h:1/v1"), "https://h:1/v1");
        assert_eq!(shell_quote("my prompt.txt"), "'my prompt.txt'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
