//! `trace begin` and `trace end`: the run's life (`crate::trace::session`)
//! printed: the begun run for people or machines; the judgement on stderr
//! and the patch on stdout.

use super::*;
pub use crate::trace::session::Placement;

pub(super) fn begin(
    repo: &Path,
    agent: &str,
    place: Placement<'_>,
    rev: &str,
    run: Option<String>,
    format: OutputFormat,
) -> Result<ExitCode> {
    let begun = crate::trace::session::begin(repo, agent, place, rev, run)?;
    output::emit(format, &begun, || {
        format!(
            "began run `{}` for agent `{}`\nworkspace: {} (at {})\ntrace: {} (key: {}, sha256 {})\nexport AGENT_LEDGER_TRACE={}\n",
            inert(&begun.run),
            inert(&begun.agent),
            inert(&begun.workspace.display().to_string()),
            begun.base,
            inert(&begun.trace.display().to_string()),
            match (begun.key_fd, &begun.key_file) {
                (Some(fd), _) => format!("handed over on descriptor {fd}"),
                (None, Some(file)) => inert(&file.display().to_string()).into_owned(),
                (None, None) => String::new(),
            },
            begun.key_sha256,
            inert(&shell_quote(&begun.trace.to_string_lossy()))
        )
    })?;
    Ok(ExitCode::Ok)
}

/// A word for a POSIX shell.
pub(super) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%=,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub(super) fn end(
    trace_file: &Path,
    require_mutation: bool,
    pin: Option<&str>,
    format: OutputFormat,
) -> Result<ExitCode> {
    let ended = crate::trace::session::end(trace_file, require_mutation, pin)?;
    let judged = &ended.judged;
    // The report goes to stderr: stdout is the patch.
    match format {
        OutputFormat::Json => eprintln!(
            "{}",
            serde_json::to_string(&judged.value)
                .map_err(|e| Error::Internal(format!("cannot encode the report: {e}")))?
        ),
        OutputFormat::Human => eprint!("{}", judged.human),
    }
    let Some((lines, patch)) = &ended.sealed else {
        eprintln!(
            "error: run `{}` is not ended (no end line written, no patch printed): exit {}",
            inert(&ended.run),
            judged.code.code()
        );
        return Ok(judged.code);
    };
    use std::io::Write;
    std::io::stdout()
        .lock()
        .write_all(patch)
        .map_err(|e| Error::write(Path::new("<stdout>"), e))?;
    eprintln!(
        "ended run `{}`: the trace is sealed after line {lines}; the patch ({} bytes) is on stdout",
        inert(&ended.run),
        patch.len()
    );
    Ok(ExitCode::Ok)
}
