//! The run key of an authenticated trace: made, written beside the trace,
//! read from a descriptor (`AGENT_LEDGER_TRACE_KEY_FD`), pinned by its
//! sha256 (`--trace-key-sha256`), and the HMAC it puts on each line.

use crate::exit::{Error, Result};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Bytes in a run key.
pub const KEY_LEN: usize = 32;

/// A span id unique across processes: pid, time and a counter, hashed.
pub fn new_span_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    crate::digest::sha256_hex(seed.as_bytes())[..16].to_string()
}

/// Where the key of the trace at `trace` lives: `TRACE.key`.
pub fn key_path(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_os_string();
    name.push(".key");
    PathBuf::from(name)
}

/// A run key.
#[derive(Clone)]
pub struct Key([u8; KEY_LEN]);

/// The environment variable naming a file descriptor to read the run key
/// from, instead of `TRACE.key`: for a harness that keeps the key off disk
/// (`trace begin --key-fd N` hands it over the same way).
pub const KEY_FD_ENV: &str = "AGENT_LEDGER_TRACE_KEY_FD";

static FD_KEY: std::sync::OnceLock<Option<Key>> = std::sync::OnceLock::new();

/// Reads the key from the descriptor [`KEY_FD_ENV`] names, if set, and
/// closes the descriptor, so nothing this process starts inherits it. The
/// process is made non-dumpable first: no other process of this user can
/// then read its memory or descriptors through `/proc`. Call once, before
/// anything else runs.
pub fn preload_fd_key() -> Result<()> {
    let Some(value) = std::env::var_os(KEY_FD_ENV) else {
        let _ = FD_KEY.set(None);
        return Ok(());
    };
    let fd: i32 = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .filter(|&fd| fd > 2)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{KEY_FD_ENV} must name an open file descriptor above 2, not `{}`",
                value.to_string_lossy()
            ))
        })?;
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| Error::Internal(format!("cannot make the process non-dumpable: {e}")))?;
    let proc_fd = PathBuf::from(format!("/proc/self/fd/{fd}"));
    let mut text = Vec::new();
    std::fs::File::open(&proc_fd)
        .and_then(|f| f.take(KEY_LEN as u64 * 2 + 2).read_to_end(&mut text))
        .map_err(|e| {
            Error::Usage(format!(
                "{KEY_FD_ENV}={fd}: cannot read the run key from that descriptor: {e}"
            ))
        })?;
    let _ = nix::unistd::close(fd);
    let text = std::str::from_utf8(&text).unwrap_or("");
    let key = hex::decode(text.trim_end_matches('\n'))
        .ok()
        .and_then(|d| <[u8; KEY_LEN]>::try_from(d).ok())
        .map(Key)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{KEY_FD_ENV}={fd}: not a run key (64 hex digits and a newline)"
            ))
        })?;
    let _ = FD_KEY.set(Some(key));
    Ok(())
}

/// The key handed over on a descriptor ([`preload_fd_key`]), if any.
pub fn fd_key() -> Option<&'static Key> {
    FD_KEY.get().and_then(Option::as_ref)
}

impl Key {
    /// 32 bytes from the kernel's random source.
    pub fn generate() -> Result<Key> {
        let mut key = [0u8; KEY_LEN];
        let urandom = Path::new("/dev/urandom");
        std::fs::File::open(urandom)
            .and_then(|mut f| f.read_exact(&mut key))
            .map_err(|e| Error::read(urandom, e))?;
        Ok(Key(key))
    }

    /// Writes the key to a new file, mode 0600; an existing file is never
    /// overwritten.
    pub fn create(&self, path: &Path) -> Result<()> {
        let mut text = hex::encode(self.0);
        text.push('\n');
        crate::atomic::write(
            path,
            text.as_bytes(),
            crate::atomic::Access::Private,
            crate::atomic::Clobber::Never(
                "a run key is made once, by `trace begin`, for a new trace",
            ),
        )
    }

    /// Writes the key (64 hex digits and a newline) to the file descriptor
    /// `fd`, which the caller handed over for it, and closes it.
    pub fn write_to_fd(&self, fd: i32) -> Result<()> {
        if fd <= 2 {
            return Err(Error::Usage(format!(
                "--key-fd {fd}: name a descriptor above 2, opened for writing"
            )));
        }
        let proc_fd = PathBuf::from(format!("/proc/self/fd/{fd}"));
        let mut text = hex::encode(self.0);
        text.push('\n');
        let written = OpenOptions::new()
            .write(true)
            .open(&proc_fd)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        let _ = nix::unistd::close(fd);
        written.map_err(|e| {
            Error::Usage(format!(
                "--key-fd {fd}: cannot write the run key to that descriptor: {e}"
            ))
        })
    }

    /// Reads a key file: 64 hex digits and a newline.
    pub fn read(path: &Path) -> Result<Key> {
        let bytes = crate::input::read_file(path, crate::input::KEY_CAP)?;
        let text = std::str::from_utf8(&bytes).unwrap_or("");
        let decoded = hex::decode(text.trim_end_matches('\n')).ok();
        match decoded.and_then(|d| <[u8; KEY_LEN]>::try_from(d).ok()) {
            Some(key) => Ok(Key(key)),
            None => Err(Error::data(
                path,
                "not a trace key: expected 64 hex digits and a newline",
            )),
        }
    }

    /// sha256 (hex) of the key: what the begin line and the receipt name.
    pub fn sha256(&self) -> String {
        crate::digest::sha256_hex(&self.0)
    }

    fn hmac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length")
    }

    /// HMAC-SHA256 (hex) of `input`.
    pub fn mac(&self, input: &[u8]) -> String {
        let mut mac = self.hmac();
        mac.update(input);
        hex::encode(mac.finalize().into_bytes())
    }

    /// Whether `mac_hex` is the HMAC of `input` (compared in constant time).
    pub fn verifies(&self, input: &[u8], mac_hex: &str) -> bool {
        let Ok(tag) = hex::decode(mac_hex) else {
            return false;
        };
        let mut mac = self.hmac();
        mac.update(input);
        mac.verify_slice(&tag).is_ok()
    }
}

/// `--trace-key-sha256`: the sha256 of a run's key, as `trace begin`
/// printed it, pinned by whoever judges the run.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KeyPin {
    /// The sha256 of the run's key as `trace begin` printed it. Keep it where
    /// the agent cannot write: a trace begun with another key (the trace and
    /// its key replaced together) or with none is then forged.
    #[arg(long = "trace-key-sha256", value_name = "HEX", env = "AGENT_LEDGER_TRACE_KEY_SHA256", value_parser = parse_pin)]
    pub sha256: Option<String>,
}

fn parse_pin(s: &str) -> std::result::Result<String, String> {
    if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(s.to_string())
    } else {
        Err("expected 64 lowercase hex digits (the key sha256 `trace begin` printed)".into())
    }
}
