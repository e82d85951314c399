//! What commands print: the output format flag, the writers, and the human
//! renderers (`human`). A closed pipe (`| head`) is not an error: the
//! judgement is already made, so the command still exits with its verdict
//! code rather than 0, which would be a false green.

pub mod documents;
pub mod human;

pub use documents::Document;

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

/// Set once a JSON document went to stdout: a command that then fails
/// (`report` on a broken chain) has given its one document already, and
/// no error document follows it.
static JSON_PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn print_json<T: Document + ?Sized>(value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Internal(format!("cannot serialise output: {e}")))?;
    text.push('\n');
    JSON_PRINTED.store(true, std::sync::atomic::Ordering::SeqCst);
    print(&text)
}

/// Whether a JSON document already went to stdout.
pub fn json_printed() -> bool {
    JSON_PRINTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Prints `value` as JSON or `text()` for people, as `format` asks.
pub fn emit<T: Document + ?Sized>(
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
            push_escaped(&mut out, c);
        }
    }
    no_legacy_commands(out)
}

/// GitHub's runner obeys a legacy workflow command (`##[error]…`,
/// `##[add-mask]…`) anywhere in a line, not only at its start: its `[` is
/// written as an escape.
fn no_legacy_commands(text: String) -> String {
    if text.contains("##[") {
        text.replace("##[", "##\\u{5b}")
    } else {
        text
    }
}

/// Untrusted text made inert for a terminal: every control character (C0,
/// DEL, C1), every bidirectional formatting character and every line or
/// paragraph separator is written as a Rust escape (`\n`, `\u{1b}`,
/// `\u{202e}`), so a value cannot move the cursor, recolour the screen,
/// reorder what is shown, or start a line of its own. Text with none of
/// them is returned as it is. JSON output needs none of this: serde
/// escapes control characters, and it must carry the exact value.
pub fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) && !text.contains("##[") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(no_legacy_commands(out))
}

/// `c` as a Rust escape: `escape_debug`'s (`\n`, `\u{1b}`), or its code
/// point where `escape_debug` would print it as it is (a soft hyphen).
fn push_escaped(out: &mut String, c: char) {
    let debug: String = c.escape_debug().collect();
    if debug.chars().eq([c]) {
        out.extend(c.escape_unicode());
    } else {
        out.push_str(&debug);
    }
}

/// Whether `c` could move the cursor, recolour the screen, reorder what
/// is shown or start a line: what [`inert`] escapes. Other escapers of
/// untrusted text (`reconcile::display_path`) ask this one question.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Soft hyphen; Arabic letter mark; Mongolian vowel separator;
            // zero width space, non-joiner and joiner; left-to-right and
            // right-to-left marks: invisible, so two names could look one.
            '\u{00ad}' | '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}'
            // Line and paragraph separators; the embeddings and overrides.
            | '\u{2028}'..='\u{202e}'
            // Word joiner and invisible operators; the isolates and the
            // deprecated format controls; the byte order mark.
            | '\u{2060}'..='\u{206f}' | '\u{feff}'
            // Interlinear annotation controls; the tag characters.
            | '\u{fff9}'..='\u{fffb}' | '\u{e0000}'..='\u{e007f}'
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

    /// Invisible characters cannot make two names look one.
    #[test]
    fn invisible_format_characters_are_escaped() {
        for c in [
            '\u{ad}',
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{206a}',
            '\u{fff9}',
            '\u{e0041}',
        ] {
            let shown = inert(&format!("test_x{c}.py")).into_owned();
            assert_eq!(shown, format!("test_x\\u{{{:x}}}.py", c as u32), "{c:?}");
        }
        assert_eq!(
            crate::reconcile::display_path("tests/test_x\u{200d}.py".as_bytes()),
            "\"tests/test_x\\342\\200\\215.py\""
        );
    }
}

/// What a command that fails prints on stdout under `--format json`
/// (`schemas/error.schema.json`): one document, so a caller that asked
/// for JSON always gets JSON, whatever happened. The message is also on
/// stderr, as without `--format json`.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorDocument {
    /// The version of this document's shape: 1.
    pub schema: u32,
    pub error: ErrorBody,
}

/// The failure itself.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorBody {
    /// The process exit status (64 usage, 65 data, 66 no input, 70
    /// internal, 73 cannot create, 74 I/O).
    pub exit_code: i32,
    /// The exit status's name.
    pub kind: ErrorKind,
    /// The message, as printed on stderr (without `error: `).
    pub message: String,
}

/// The name of a failing exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Usage,
    Data,
    NoInput,
    Internal,
    CantCreate,
    Io,
}

impl ErrorDocument {
    pub fn new(exit: crate::exit::Sysexit, message: &str) -> ErrorDocument {
        use crate::exit::Sysexit;
        ErrorDocument {
            schema: 1,
            error: ErrorBody {
                exit_code: exit.code(),
                kind: match exit {
                    Sysexit::Usage => ErrorKind::Usage,
                    Sysexit::Data => ErrorKind::Data,
                    Sysexit::NoInput => ErrorKind::NoInput,
                    Sysexit::Software => ErrorKind::Internal,
                    Sysexit::CantCreate => ErrorKind::CantCreate,
                    Sysexit::Io => ErrorKind::Io,
                },
                message: message.to_string(),
            },
        }
    }
}

/// Whether the command line asks for `--format json` (as one argument or
/// two), before any `--`: known even when the arguments do not parse.
pub fn json_requested(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    let mut previous_was_format = false;
    for arg in args {
        let Some(arg) = arg.to_str().map(str::to_string) else {
            previous_was_format = false;
            continue;
        };
        if arg == "--" {
            return false;
        }
        if (previous_was_format && arg == "json") || arg == "--format=json" {
            return true;
        }
        previous_was_format = arg == "--format";
    }
    false
}
