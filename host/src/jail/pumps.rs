//! The jailed command's output: read, counted against the cap, kept, and
//! shown escaped when asked.

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
                                // Untrusted text: escaped, as every other.
                                let text = crate::output::inert_stream(&buf[..keep]);
                                let before = echoed.fetch_add(text.len() as u64, Ordering::Relaxed);
                                let room = cap.saturating_sub(before) as usize;
                                let mut end = room.min(text.len());
                                while !text.is_char_boundary(end) {
                                    end -= 1;
                                }
                                let _ = std::io::stderr().lock().write_all(&text.as_bytes()[..end]);
                            }
                        }
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
}
