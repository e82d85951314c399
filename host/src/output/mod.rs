//! What commands print: the output format flag, the writers, and the human
//! renderers (`human`). A closed pipe (`| head`) is not an error: the
//! judgement is already made, so the command still exits with its verdict
//! code rather than 0, which would be a false green.

pub mod human;

use crate::exit::{Error, Result};
use std::borrow::Cow;
use std::io::{self, Write};

/// How a command prints its result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Sentences for people.
    #[default]
    Human,
    /// One JSON document on stdout.
    Json,
}

#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
}

pub fn print(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::write(std::path::Path::new("<stdout>"), e)),
    }
}

pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Internal(format!("cannot serialise output: {e}")))?;
    text.push('\n');
    print(&text)
}

/// Prints `value` as JSON or `text()` for people, as `format` asks.
pub fn emit<T: serde::Serialize>(
    format: OutputFormat,
    value: &T,
    text: impl FnOnce() -> String,
) -> Result<()> {
    match format {
        OutputFormat::Json => print_json(value),
        OutputFormat::Human => print(&text()),
    }
}

/// Bytes an untrusted process printed, made inert for a terminal: as
/// [`inert`], but newlines and tabs are kept (output is read line by line);
/// invalid UTF-8 is replaced.
pub fn inert_stream(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (c == '\n' || c == '\t') || !needs_escape(c) {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    out
}

/// Untrusted text made inert for a terminal: every control character (C0,
/// DEL, C1), every bidirectional formatting character and every line or
/// paragraph separator is written as a Rust escape (`\n`, `\u{1b}`,
/// `\u{202e}`), so a value cannot move the cursor, recolour the screen,
/// reorder what is shown, or start a line of its own. Text with none of
/// them is returned as it is. JSON output needs none of this: serde
/// escapes control characters, and it must carry the exact value.
pub fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Arabic letter mark; zero width space; left-to-right and
            // right-to-left marks.
            '\u{061c}' | '\u{200b}' | '\u{200e}' | '\u{200f}'
            // Line and paragraph separators; the embeddings and overrides.
            | '\u{2028}'..='\u{202e}'
            // The isolates; the byte order mark.
            | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::inert;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "src/r\u{e9}try.py: assertion count fell (3 -> 2) \\ `x`";
        assert!(matches!(inert(text), std::borrow::Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn control_bidi_and_separators_are_escaped() {
        assert_eq!(inert("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(inert("one\nverdict: review"), "one\\nverdict: review");
        assert_eq!(inert("\r\t\0\x7f"), "\\r\\t\\0\\u{7f}");
        assert_eq!(inert("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(inert("abc\u{202e}txt.exe"), "abc\\u{202e}txt.exe");
        assert_eq!(inert("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(inert("a\u{2028}b"), "a\\u{2028}b");
    }
}
