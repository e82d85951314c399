//! The on-disk cache of compiled components, keyed by the component's
//! sha256 and the engine's compatibility hash.
//!
//! Compiled code runs natively once deserialized, so the cache is an input
//! to trust only when this user's agent-ledger wrote it: every entry starts
//! with an HMAC-SHA256, under a per-user secret key, of the engine hash, the
//! component's sha256 and the compiled bytes. Anything in doubt (no key, a
//! key that is not this user's 0600 file, a wrong tag, a short or
//! unreadable entry) is recompiled. A digest beside the entry would not do:
//! whoever can write the entry can write its digest.
//!
//! The key lives at `$XDG_STATE_HOME/agent-ledger/cache.key` (else
//! `~/.local/state/agent-ledger/cache.key`), 0600 in a 0700 directory,
//! outside every tree a plugin or the test command can see; it is made on
//! first use. A cache shared between machines (CI runs restoring one cache
//! directory) needs one key for all of them: `AGENT_LEDGER_CACHE_KEY` (64
//! hex digits, a CI secret) then replaces the file. It is read and removed
//! from the environment before anything else starts, so no process
//! agent-ledger runs (the agent, the test command, git) inherits it.

use super::{Refusal, Sandbox, root_cause};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use wasmtime::component::Component;

const KEY_LEN: usize = 32;
const TAG_LEN: usize = 32;
/// Separates this use of the key from any other.
const DOMAIN: &[u8] = b"agent-ledger compiled-component cache v1\0";

/// The per-user cache key's path, or `None` when neither `$XDG_STATE_HOME`
/// nor `$HOME` is set (then nothing is cached on disk).
pub fn key_path() -> Option<PathBuf> {
    let env = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    env("XDG_STATE_HOME")
        .or_else(|| env("HOME").map(|h| h.join(".local/state")))
        .map(|d| d.join("agent-ledger/cache.key"))
}

/// The variable that carries a shared cache key.
pub const KEY_ENV: &str = "AGENT_LEDGER_CACHE_KEY";

/// The key `AGENT_LEDGER_CACHE_KEY` carried, once [`preload_env_key`] ran.
static ENV_KEY: OnceLock<Option<[u8; KEY_LEN]>> = OnceLock::new();

/// Takes `AGENT_LEDGER_CACHE_KEY` out of the environment and keeps it as
/// this process's cache key. Called first thing in `main`, while the
/// process has one thread (so removing a variable races nothing).
pub fn preload_env_key() -> Result<(), String> {
    let Some(value) = std::env::var_os(KEY_ENV) else {
        let _ = ENV_KEY.set(None);
        return Ok(());
    };
    // Removing the variable takes it out of libc's list only: the kernel
    // still shows the environment block the process started with in
    // `/proc/PID/environ`, to any process of this user. So the value's
    // bytes are overwritten where they lie first, and no core file is
    // written (it would hold the key). The process stays dumpable: a
    // non-dumpable one's `/proc` files are root's, and a sandbox made by
    // an ordinary user needs to write its child's `uid_map` there. So a
    // process of this user that may `ptrace` agent-ledger (Yama's
    // `ptrace_scope` 0) can read the key from its memory
    // (docs/design/threat-model.md, "What each layer guarantees").
    // SAFETY: `main` calls this before it starts any thread; `getenv`
    // returns the value's bytes in the environment block (NUL-terminated),
    // which this process may write.
    unsafe {
        let name = std::ffi::CString::new(KEY_ENV).expect("no NUL in the name");
        let at = nix::libc::getenv(name.as_ptr());
        if !at.is_null() {
            let len = nix::libc::strlen(at);
            std::ptr::write_bytes(at, 0, len);
        }
        std::env::remove_var(KEY_ENV);
    }
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0)
        .map_err(|e| format!("cannot turn core files off to hold {KEY_ENV}: {e}"))?;
    let key = value
        .to_str()
        .and_then(|v| hex::decode(v.trim()).ok())
        .and_then(|d| <[u8; KEY_LEN]>::try_from(d).ok())
        .ok_or_else(|| {
            format!(
                "{KEY_ENV} must be 64 hex digits (32 random bytes, e.g. `openssl rand -hex 32`); \
                 it holds {} characters",
                value.len()
            )
        })?;
    // A placeholder left in place of a secret (all zeros, one repeated
    // byte) is no key.
    if key.iter().all(|&b| b == key[0]) {
        return Err(format!(
            "{KEY_ENV} is one byte repeated, not a secret: use 32 random bytes (`openssl rand -hex 32`)"
        ));
    }
    let _ = ENV_KEY.set(Some(key));
    Ok(())
}

/// The shared key as `AGENT_LEDGER_CACHE_KEY` would carry it, for a child
/// that is agent-ledger itself (`batch`'s replay phase), which takes it out
/// of its environment again first thing.
pub fn env_key_for_child() -> Option<(&'static str, String)> {
    match ENV_KEY.get() {
        Some(Some(key)) => Some((KEY_ENV, hex::encode(key))),
        _ => None,
    }
}

/// Reads a cache entry of at most `cap` bytes, or `None`: never through a
/// symlink, never anything but a regular file (a FIFO would block, a device
/// would never end), never more than `cap`. Whoever can write the cache
/// directory can put anything there; this only bounds what reading costs,
/// the tag decides what is believed.
pub fn read_entry(path: &Path, cap: u64) -> Option<Vec<u8>> {
    let (file, len) = open_entry(path, cap).ok()?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(cap + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= cap).then_some(bytes)
}

/// Opens a cache entry to read, with its length: only a regular file of at
/// most `cap` bytes, reached without following a link, and never waiting
/// (a FIFO opens at once, to be refused).
pub fn open_entry(path: &Path, cap: u64) -> std::io::Result<(std::fs::File, u64)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > cap {
        return Err(std::io::Error::other(
            "not a regular file within the entry's bound",
        ));
    }
    Ok((file, meta.len()))
}

/// The largest compiled component read back from the cache.
const COMPILED_CAP: u64 = 2 << 30;

/// Where this process's key comes from: `AGENT_LEDGER_CACHE_KEY`, else the
/// per-user file (`None` when there is neither a variable nor a home).
pub fn key_source() -> Option<String> {
    if ENV_KEY.get().is_some_and(Option::is_some) {
        return Some(KEY_ENV.into());
    }
    key_path().map(|p| p.display().to_string())
}

/// This process's key: the shared one, else the per-user file's, read (or
/// made) once.
fn key() -> Option<&'static [u8; KEY_LEN]> {
    if let Some(Some(key)) = ENV_KEY.get() {
        return Some(key);
    }
    static KEY: OnceLock<Option<[u8; KEY_LEN]>> = OnceLock::new();
    KEY.get_or_init(|| load_or_create_key(&key_path()?))
        .as_ref()
}

/// Reads the key at `path`, making it first when there is none. Returns
/// `None` (no disk cache) for anything but this user's own regular file of
/// the right length, unreadable by others, in a directory only this user
/// can write.
fn load_or_create_key(path: &Path) -> Option<[u8; KEY_LEN]> {
    let dir = path.parent()?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .ok()?;
    let me = nix::unistd::geteuid().as_raw();
    let dir_meta = std::fs::symlink_metadata(dir).ok()?;
    if !dir_meta.is_dir() || dir_meta.uid() != me || dir_meta.mode() & 0o022 != 0 {
        return None;
    }
    match read_key(path, me) {
        Ok(key) => return key,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    // Made under a temporary name and linked into place, so two processes
    // racing here end with one key, and nobody reads a half-written one.
    let mut fresh = [0u8; KEY_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut fresh))
        .ok()?;
    let tmp = dir.join(format!("cache.key.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, &fresh)?;
            f.sync_all()
        });
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Some(fresh),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(path, me).ok()?,
        Err(_) => None,
    }
}

fn read_key(path: &Path, me: u32) -> std::io::Result<Option<[u8; KEY_LEN]>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file()
        || meta.uid() != me
        || meta.permissions().mode() & 0o077 != 0
        || meta.len() != KEY_LEN as u64
    {
        return Ok(None);
    }
    let mut key = [0u8; KEY_LEN];
    (&file).read_exact(&mut key)?;
    Ok(Some(key))
}

fn mac(key: &[u8; KEY_LEN], engine_hash: &str, sha256: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(DOMAIN);
    mac.update(engine_hash.as_bytes());
    mac.update(b"\0");
    mac.update(sha256.as_bytes());
    mac.update(b"\0");
    mac
}

/// Whether a component came from the cache or was compiled now (and so
/// may be cached once it has been accepted).
pub(super) enum Compiled {
    Cached,
    Fresh,
}

impl Sandbox {
    fn cache_path(&self, sha256: &str) -> Option<PathBuf> {
        let dir = self.cache_dir.as_ref()?;
        Some(dir.join(format!("{sha256}-{}.cwasm", self.engine_hash)))
    }

    /// The component from an authenticated cache entry, else compiled now.
    /// Nothing is written here: [`Sandbox::store_cached`] writes the entry
    /// once the component has been accepted, so a refused component is
    /// never cached.
    pub(super) fn compile_cached(
        &self,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<(Component, Compiled), Refusal> {
        if let (Some(path), Some(key)) = (self.cache_path(sha256), key())
            && let Some(component) = self.read_cache(&path, key, sha256)
        {
            return Ok((component, Compiled::Cached));
        }
        let component = Component::new(&self.engine, bytes)
            .map_err(|e| Refusal(format!("does not compile: {}", root_cause(&e))))?;
        Ok((component, Compiled::Fresh))
    }

    /// Writes an accepted, freshly compiled component to the cache. The
    /// cache is an optimisation: failing to write it is not an error.
    pub(super) fn store_cached(&self, component: &Component, sha256: &str) {
        let (Some(path), Some(key)) = (self.cache_path(sha256), key()) else {
            return;
        };
        let Ok(code) = component.serialize() else {
            return;
        };
        let mut mac = mac(key, &self.engine_hash, sha256);
        mac.update(&code);
        let mut entry = mac.finalize().into_bytes().to_vec();
        entry.extend_from_slice(&code);
        let _ = write_cache(&path, &entry);
    }

    /// An entry is deserialized only when its tag verifies under this
    /// user's key for this engine and this component's sha256.
    fn read_cache(&self, path: &Path, key: &[u8; KEY_LEN], sha256: &str) -> Option<Component> {
        let entry = read_entry(path, COMPILED_CAP)?;
        if entry.len() <= TAG_LEN {
            return None;
        }
        let (tag, code) = entry.split_at(TAG_LEN);
        let mut mac = mac(key, &self.engine_hash, sha256);
        mac.update(code);
        mac.verify_slice(tag).ok()?;
        // SAFETY: the bytes carry a valid HMAC under this user's secret key
        // (0600, outside every sandbox) over this engine's compatibility
        // hash, the source component's sha256 and the code, so this process
        // or an earlier one of this user produced them with
        // `Component::serialize` for this very component; wasmtime also
        // checks the header and engine settings.
        unsafe { Component::deserialize(&self.engine, code) }.ok()
    }
}

/// An entry of another on-disk cache under the same per-user key (the
/// test command's base-revision runs): `domain` separates its uses, `id`
/// is what the entry is for. The entry is the tag, then `body`.
pub fn seal(domain: &str, id: &str, body: &[u8]) -> Option<Vec<u8>> {
    let mut entry = entry_mac(domain, id, body)?.as_bytes().to_vec();
    entry.extend_from_slice(body);
    Some(entry)
}

/// The body of an entry [`seal`] made for `domain` and `id`, when its tag
/// verifies under this user's key; `None` for anything in doubt.
pub fn open(domain: &str, id: &str, mut entry: Vec<u8>) -> Option<Vec<u8>> {
    if !sealed_body(domain, id, &entry) {
        return None;
    }
    // In place: a large entry (a tree's listing) is not copied whole.
    entry.drain(..TAG_LEN);
    Some(entry)
}

/// Where a [`seal`]ed entry's body starts.
pub const SEALED_AT: usize = TAG_LEN;

/// Whether `entry` is one [`seal`] made for `domain` and `id` under this
/// user's key (its body from [`SEALED_AT`] on); `false` for anything in
/// doubt. For a caller that reads the body where it lies (a large listing
/// is decoded while its tag is checked, and never moved).
pub fn sealed_body(domain: &str, id: &str, entry: &[u8]) -> bool {
    if entry.len() <= TAG_LEN {
        return false;
    }
    let (tag, body) = entry.split_at(TAG_LEN);
    let Ok(tag) = <[u8; TAG_LEN]>::try_from(tag) else {
        return false;
    };
    // `blake3::Hash` compares in constant time.
    entry_mac(domain, id, body).is_some_and(|mac| mac == blake3::Hash::from_bytes(tag))
}

/// The tag of a [`seal`]ed entry under this user's key ([`tag`]).
fn entry_mac(domain: &str, id: &str, body: &[u8]) -> Option<blake3::Hash> {
    static SEAL_KEY: OnceLock<Option<[u8; KEY_LEN]>> = OnceLock::new();
    let key = SEAL_KEY
        .get_or_init(|| key().map(|k| blake3::derive_key(SEAL_CONTEXT, k)))
        .as_ref()?;
    Some(tag(key, domain, id, body))
}

/// The context the sealing key is derived from the cache key in: the
/// compile cache's HMAC and the seals never share a key.
const SEAL_CONTEXT: &str = "agent-ledger sealed cache entry v1";

/// Keyed BLAKE3 over the domain, the id and the body, the first two each
/// after its length (8 bytes, little-endian), so that no split of the same
/// bytes into another domain, id and body has the same tag (ids hold NULs:
/// `commit NUL format`).
fn tag(key: &[u8; KEY_LEN], domain: &str, id: &str, body: &[u8]) -> blake3::Hash {
    let mut mac = blake3::Hasher::new_keyed(key);
    for field in [domain.as_bytes(), id.as_bytes()] {
        mac.update(&(field.len() as u64).to_le_bytes());
        mac.update(field);
    }
    mac.update(body);
    mac.finalize()
}

#[cfg(test)]
#[test]
fn a_seal_tag_binds_key_domain_id_and_body() {
    let key = [7u8; KEY_LEN];
    let base = tag(&key, "d", "id", b"body");
    assert_eq!(base, tag(&key, "d", "id", b"body"));
    for other in [
        tag(&[8u8; KEY_LEN], "d", "id", b"body"),
        tag(&key, "e", "id", b"body"),
        tag(&key, "d", "ie", b"body"),
        tag(&key, "d", "id", b"bodY"),
        tag(&key, "d", "id", b"body\0"),
        // The lengths keep domain, id and body apart.
        tag(&key, "d", "idb", b"ody"),
        tag(&key, "di", "d", b"body"),
        tag(&key, "d", "id\0x", b"body"),
        tag(&key, "d", "id", b"\0xbody"),
    ] {
        assert_ne!(base, other);
    }
    // Keyed BLAKE3 as its reference defines it: the key changes the hash.
    assert_ne!(
        tag(&[0u8; KEY_LEN], "", "", b"").as_bytes(),
        blake3::hash(&[0u8; 16]).as_bytes()
    );
}

/// Writes a cache entry atomically (a 0700 directory made as needed).
pub fn write_entry(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    crate::atomic::write_cache(path, bytes)
}

fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_entry(path, bytes)?;
    // The entry's plain digest, as before the tag: for operators checking
    // entries with `sha256sum`. Never read when loading (anyone who can
    // write an entry can write its digest).
    crate::atomic::write_cache(
        &path.with_extension("cwasm.sha256"),
        crate::digest::sha256_hex(bytes).as_bytes(),
    )
}
