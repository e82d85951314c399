//! The jailed command's output: read, counted against the cap, kept, and
//! shown escaped when asked: whole lines only, each behind [`PREFIX`], so
//! no line the command prints starts where it chose (a CI runner reads a
//! line that starts with `::error` or `::stop-commands::` as a command to
//! itself, and a reader takes `verdict: review` at a line's start as ours).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::POLL;

/// Copies the command's stdout and stderr to ours (stderr: our stdout is
/// for our own output) when it is to be shown, up to the cap, and counts
/// every byte.
pub(crate) struct Pumps {
    seen: Arc<AtomicU64>,
    cap: u64,
    /// stdout's, then stderr's: the completion ids and the bytes read.
    threads: Vec<std::thread::JoinHandle<(BTreeSet<String>, Vec<u8>)>>,
    done: Arc<AtomicBool>,
}

impl Pumps {
    pub(crate) fn start(
        cap: u64,
        echo: bool,
        out: Option<Box<dyn Read + Send>>,
        err: Option<Box<dyn Read + Send>>,
    ) -> Pumps {
        let seen = Arc::new(AtomicU64::new(0));
        // What reached our stderr, escaped (escaping can grow the text, and
        // the cap bounds what the operator's terminal receives too).
        let echoed = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let threads = [out, err]
            .into_iter()
            .flatten()
            .map(|mut reader| {
                let (seen, done, echoed) = (seen.clone(), done.clone(), echoed.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut ids = crate::completion_ids::Scanner::default();
                    let mut kept = Vec::new();
                    let mut line = Lines::default();
                    let show = |text: String| {
                        // The cap bounds what the operator's terminal
                        // receives too (escaping can grow the text); what is
                        // cut is cut at a line's end, never inside one.
                        let before = echoed.fetch_add(text.len() as u64, Ordering::Relaxed);
                        if before < cap {
                            let _ = std::io::stderr().lock().write_all(text.as_bytes());
                        }
                    };
                    while let Ok(n) = reader.read(&mut buf) {
                        if n == 0 || done.load(Ordering::Relaxed) {
                            break;
                        }
                        let before = seen.fetch_add(n as u64, Ordering::Relaxed);
                        if before < cap {
                            let keep = n.min((cap - before) as usize);
                            ids.feed(&buf[..keep]);
                            kept.extend_from_slice(&buf[..keep]);
                            if echo {
                                show(line.feed(&buf[..keep]));
                            }
                        }
                    }
                    if echo {
                        show(line.finish());
                    }
                    (ids.finish(), kept)
                })
            })
            .collect();
        Pumps {
            seen,
            cap,
            threads,
            done,
        }
    }

    pub(crate) fn over_cap(&self) -> bool {
        self.seen.load(Ordering::Relaxed) > self.cap
    }

    /// Waits for the pipes to close (every writer is dead once the command
    /// has ended in its PID namespace); a writer that outlived an
    /// unsandboxed command is not waited for.
    /// Returns the completion ids the command printed, and its stdout and
    /// stderr (up to the cap together).
    pub(crate) fn finish(self) -> (BTreeSet<String>, Vec<u8>, Vec<u8>) {
        let grace = Instant::now() + Duration::from_secs(1);
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < grace {
            std::thread::sleep(POLL);
        }
        self.done.store(true, Ordering::Relaxed);
        let mut ids = BTreeSet::new();
        let mut streams = Vec::new();
        for t in self.threads {
            if t.is_finished()
                && let Ok((found, bytes)) = t.join()
            {
                ids.extend(found);
                streams.push(bytes);
            } else {
                streams.push(Vec::new());
            }
        }
        let mut streams = streams.into_iter();
        let (stdout, stderr) = (
            streams.next().unwrap_or_default(),
            streams.next().unwrap_or_default(),
        );
        if self.seen.load(Ordering::Relaxed) > self.cap {
            eprintln!(
                "warning: the test command printed more than {} bytes; it was stopped and its output cut",
                self.cap
            );
        }
        (ids, stdout, stderr)
    }
}

/// What starts every line of the command's output on our stderr.
pub(crate) const PREFIX: &str = "test | ";

/// The longest line shown as one: past it, the rest goes on a line of its
/// own (behind the prefix too).
const LONGEST_LINE: usize = 16 * 1024;

/// Cuts a stream into whole lines, each escaped ([`crate::output::inert`]:
/// no control character, carriage return or separator survives) and
/// written behind [`PREFIX`] with our own line break. A chunk's unfinished
/// last line waits for the next chunk, so two streams written at once
/// never share a line.
#[derive(Default)]
struct Lines {
    pending: Vec<u8>,
}

impl Lines {
    fn line(out: &mut String, bytes: &[u8]) {
        out.push_str(PREFIX);
        out.push_str(&crate::output::inert(&String::from_utf8_lossy(bytes)));
        out.push('\n');
    }

    /// The lines `bytes` completes, ready to write.
    fn feed(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut start = 0;
        while let Some(k) = self.pending[start..].iter().position(|&b| b == b'\n') {
            Self::line(&mut out, &self.pending[start..start + k]);
            start += k + 1;
        }
        while self.pending.len() - start > LONGEST_LINE {
            Self::line(&mut out, &self.pending[start..start + LONGEST_LINE]);
            start += LONGEST_LINE;
        }
        self.pending.drain(..start);
        out
    }

    /// The last line, when the stream did not end with a line break.
    fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.pending.is_empty() {
            Self::line(&mut out, &std::mem::take(&mut self.pending));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> Option<Box<dyn Read + Send>> {
        Some(Box::new(std::io::Cursor::new(bytes.to_vec())))
    }

    #[test]
    fn both_streams_are_kept_with_the_completion_ids_they_print() {
        let pumps = Pumps::start(
            1 << 20,
            false,
            reader(b"ok chatcmpl-9x8Yk2mQpL4rT7vW1zA3bC5dE6f\n"),
            reader(b"err\n"),
        );
        let (ids, stdout, stderr) = pumps.finish();
        assert_eq!(stdout, b"ok chatcmpl-9x8Yk2mQpL4rT7vW1zA3bC5dE6f\n");
        assert_eq!(stderr, b"err\n");
        assert_eq!(
            ids.into_iter().collect::<Vec<_>>(),
            ["chatcmpl-9x8Yk2mQpL4rT7vW1zA3bC5dE6f"]
        );
    }

    #[test]
    fn the_cap_counts_both_streams_together() {
        let pumps = Pumps::start(10, false, reader(&[b'a'; 8]), reader(&[b'b'; 8]));
        let start = Instant::now();
        while !pumps.over_cap() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(POLL);
        }
        assert!(pumps.over_cap(), "16 bytes against a cap of 10");
        let (_, stdout, stderr) = pumps.finish();
        assert_eq!(
            stdout.len() + stderr.len(),
            10,
            "no byte past the cap is kept"
        );
    }

    #[test]
    fn every_line_starts_with_the_prefix_whatever_the_chunks() {
        let mut l = Lines::default();
        let legacy = l.feed(b"x ##[error]forged\n");
        assert_eq!(legacy, "test | x ##\\u{5b}error]forged\n");
        let mut shown = l.feed(b"ok\n::error file=x::forged\nverdict: rev");
        shown.push_str(&l.feed(b"iew (exit 0)\r::stop-commands::t\n\x1b[2K"));
        shown.push_str(&l.finish());
        assert_eq!(
            shown,
            "test | ok\ntest | ::error file=x::forged\ntest | verdict: review (exit 0)\\r::stop-commands::t\ntest | \\u{1b}[2K\n"
        );
        assert!(shown.lines().all(|line| line.starts_with(PREFIX)));
    }

    #[test]
    fn a_line_past_the_longest_is_cut_behind_the_prefix() {
        let mut l = Lines::default();
        let shown = l.feed(&vec![b'a'; LONGEST_LINE * 2 + 5]) + &l.finish();
        assert_eq!(shown.lines().count(), 3);
        assert!(shown.lines().all(|line| line.starts_with(PREFIX)));
    }
}
