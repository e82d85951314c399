//! The sandbox: everything about wasmtime lives here and nowhere else.
//!
//! A property is a WASI Preview 2 component. This module compiles it (with an
//! on-disk cache of compiled code keyed by the component's sha256 and the
//! engine's compatibility hash, checked before use), refuses it when it imports
//! anything outside the allowlist (no `wasi:sockets`, no `wasi:http`), and runs
//! it with:
//!
//! - read-only preopens of the patched tree, the base tree and the inputs;
//!   no environment, no arguments, empty stdin;
//! - a fixed wall clock, a virtual monotonic clock that only moves when the
//!   guest sleeps (sleeping returns at once), and seeded randomness;
//! - a fuel budget (deterministic: it is recorded), an epoch-based wall-clock
//!   backstop, a memory cap, a stack cap and capped stdout/stderr.
//!
//! Every trap, exhausted budget, timeout, `exit` call, overflowing output or
//! malformed result becomes an `error` outcome with its reason.

use crate::record::{Finding, Outcome};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::{Component, HasData, Linker, Resource, ResourceTable};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder, Trap};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::p2::{DynPollable, Pollable};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({ path: "../wit", world: "plugin" });
}

use bindings::agent_ledger::property::types as wit;

/// WASI interfaces a property may import (version suffix stripped).
pub const ALLOWED_IMPORTS: &[&str] = &[
    // Types only: the records `check` takes and returns.
    "agent-ledger:property/types",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/wall-clock",
    "wasi:clocks/monotonic-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
];

/// The fixed wall clock every property sees: 2000-01-01T00:00:00Z.
pub const FIXED_WALL_CLOCK_SECS: u64 = 946_684_800;
/// How often the epoch advances for the wall-clock backstop.
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Bytes of stdout/stderr kept in the property record.
pub const OUTPUT_EXCERPT: usize = 4096;

/// Resource bounds for one property run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub fuel: u64,
    pub memory_bytes: usize,
    pub wall: Duration,
    /// Bytes a stream may take before the run is an error.
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 4_000_000_000,
            memory_bytes: 256 << 20,
            wall: Duration::from_secs(30),
            output_bytes: 1 << 20,
        }
    }
}

/// The WASM stack a property may use.
pub const MAX_WASM_STACK: usize = 1 << 20;

/// The directories a property sees, read-only.
pub struct Mounts<'a> {
    pub patched: &'a Path,
    pub base: &'a Path,
    pub inputs: &'a Path,
}

/// What the host hands to `check`.
pub struct TrialInput {
    pub run_id: String,
    pub base_revision: String,
    pub patch: Vec<u8>,
    pub changes: Vec<Change>,
    pub config: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    Renamed,
    Copied,
    TypeChanged,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
    pub old_path: Option<String>,
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub outcome: Outcome,
    pub findings: Vec<Finding>,
    pub error: Option<String>,
    pub fuel_used: u64,
    pub stdout: String,
    pub stderr: String,
}

/// A loaded, audited, pre-instantiated component.
pub struct Plugin {
    pub sha256: String,
    pub name: String,
    pub version: String,
    pub summary: String,
    pre: bindings::PluginPre<Host>,
}

/// Per-store state.
struct Host {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    /// Virtual monotonic time, in nanoseconds: advanced only by sleeps.
    monotonic_nanos: u64,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

pub struct Sandbox {
    engine: Engine,
    linker: Linker<Host>,
    cache_dir: Option<PathBuf>,
    engine_hash: String,
    loaded: Mutex<HashMap<String, Arc<Plugin>>>,
    ticker_alive: Arc<AtomicBool>,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.ticker_alive.store(false, Ordering::Relaxed);
    }
}

/// Why a component was not loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl Sandbox {
    /// Makes the engine and linker. `cache_dir` holds compiled components.
    pub fn new(cache_dir: Option<PathBuf>) -> wasmtime::Result<Sandbox> {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        config.consume_fuel(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(MAX_WASM_STACK);
        config.wasm_backtrace_max_frames(None);
        config.cranelift_nan_canonicalization(true);
        config.parallel_compilation(true);
        let engine = Engine::new(&config)?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_hash = format!("{:016x}", hasher.finish());
        let linker = make_linker(&engine)?;

        let ticker_alive = Arc::new(AtomicBool::new(true));
        let (alive, weak) = (ticker_alive.clone(), engine.weak());
        std::thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while alive.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })?;
        Ok(Sandbox {
            engine,
            linker,
            cache_dir,
            engine_hash,
            loaded: Mutex::new(HashMap::new()),
            ticker_alive,
        })
    }

    /// Loads a component: compile (or take from the cache), audit imports,
    /// pre-instantiate, and ask it to describe itself.
    pub fn load(&self, bytes: &[u8]) -> Result<Arc<Plugin>, Refusal> {
        let sha256 = crate::digest::sha256_hex(bytes);
        if let Some(p) = self.loaded.lock().expect("plugin map").get(&sha256) {
            return Ok(p.clone());
        }
        if !is_component(bytes) {
            return Err(Refusal("not a WebAssembly component (a core module or not wasm at all); build it for wasm32-wasip2".into()));
        }
        let component = self.compile_cached(bytes, &sha256)?;
        audit_imports(&self.engine, &component)?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| Refusal(format!("cannot link: {}", root_cause(&e))))?;
        let pre = bindings::PluginPre::new(pre).map_err(|e| {
            Refusal(format!(
                "does not export `agent-ledger:property/property`: {}",
                root_cause(&e)
            ))
        })?;
        let mut store = self
            .store(&Limits::default(), None, [0; 32], None)
            .map_err(|e| Refusal(format!("cannot set up a store: {}", root_cause(&e))))?;
        let info = pre
            .instantiate(&mut store)
            .and_then(|p| p.agent_ledger_property_property().call_describe(&mut store))
            .map_err(|e| {
                Refusal(format!(
                    "`describe` failed: {}",
                    describe_error(&e, &Limits::default())
                ))
            })?;
        let plugin = Arc::new(Plugin {
            sha256: sha256.clone(),
            name: info.name,
            version: info.version,
            summary: info.summary,
            pre,
        });
        self.loaded
            .lock()
            .expect("plugin map")
            .insert(sha256, plugin.clone());
        Ok(plugin)
    }

    fn compile_cached(&self, bytes: &[u8], sha256: &str) -> Result<Component, Refusal> {
        let compile = || {
            Component::new(&self.engine, bytes)
                .map_err(|e| Refusal(format!("does not compile: {}", root_cause(&e))))
        };
        let Some(dir) = &self.cache_dir else {
            return compile();
        };
        let path = dir.join(format!("{sha256}-{}.cwasm", self.engine_hash));
        if let Some(component) = self.read_cache(&path) {
            return Ok(component);
        }
        let component = compile()?;
        if let Ok(serialized) = component.serialize() {
            // The cache is an optimisation: failing to write it is not an error.
            let _ = write_cache(dir, &path, &serialized);
        }
        Ok(component)
    }

    /// A cache entry is trusted only when its bytes match the digest written
    /// beside it; anything else is recompiled.
    fn read_cache(&self, path: &Path) -> Option<Component> {
        let bytes = std::fs::read(path).ok()?;
        let expected = std::fs::read_to_string(path.with_extension("cwasm.sha256")).ok()?;
        if crate::digest::sha256_hex(&bytes) != expected.trim() {
            return None;
        }
        // SAFETY: the bytes were produced by `Component::serialize` of this
        // engine configuration (the file name carries its compatibility hash)
        // and are unchanged since (their sha256 matches the sidecar written
        // with them); wasmtime also checks the header and engine settings.
        unsafe { Component::deserialize(&self.engine, &bytes) }.ok()
    }

    fn store(
        &self,
        limits: &Limits,
        mounts: Option<&Mounts<'_>>,
        seed: [u8; 32],
        pipes: Option<(&MemoryOutputPipe, &MemoryOutputPipe)>,
    ) -> wasmtime::Result<Store<Host>> {
        let mut b = WasiCtxBuilder::new();
        // Must come before the preopens, which capture it.
        b.allow_blocking_current_thread(true);
        b.wall_clock(FixedWallClock);
        let mut bytes = seed.to_vec();
        bytes.extend(crate::digest::sha256_hex(&seed).into_bytes());
        b.secure_random(wasmtime_wasi::Deterministic::new(bytes.clone()));
        b.insecure_random(wasmtime_wasi::Deterministic::new(bytes));
        b.insecure_random_seed(u128::from_le_bytes(
            seed[..16].try_into().expect("16 bytes"),
        ));
        if let Some((out, err)) = pipes {
            b.stdout(out.clone());
            b.stderr(err.clone());
        }
        if let Some(m) = mounts {
            b.preopened_dir(m.patched, "/patched", FsPerms::ReadOnly)?;
            b.preopened_dir(m.base, "/base", FsPerms::ReadOnly)?;
            b.preopened_dir(m.inputs, "/inputs", FsPerms::ReadOnly)?;
        }
        let host = Host {
            wasi: b.build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(limits.memory_bytes)
                .instances(64)
                .memories(16)
                .tables(64)
                .trap_on_grow_failure(true)
                .build(),
            monotonic_nanos: 0,
        };
        let mut store = Store::new(&self.engine, host);
        store.limiter(|h| &mut h.limits);
        store.set_fuel(limits.fuel)?;
        let ticks = (limits.wall.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64;
        store.set_epoch_deadline(ticks);
        store.epoch_deadline_trap();
        Ok(store)
    }

    /// Runs `check` on a trial. Never panics on guest behaviour; every
    /// failure is an `error` outcome.
    pub fn run(
        &self,
        plugin: &Plugin,
        trial: &TrialInput,
        mounts: &Mounts<'_>,
        limits: &Limits,
        seed: [u8; 32],
    ) -> RunResult {
        let out = MemoryOutputPipe::new(limits.output_bytes);
        let err = MemoryOutputPipe::new(limits.output_bytes);
        let mut result = RunResult {
            outcome: Outcome::Error,
            findings: Vec::new(),
            error: None,
            fuel_used: 0,
            stdout: String::new(),
            stderr: String::new(),
        };
        let mut store = match self.store(limits, Some(mounts), seed, Some((&out, &err))) {
            Ok(s) => s,
            Err(e) => {
                result.error = Some(format!("cannot set up the sandbox: {}", root_cause(&e)));
                return result;
            }
        };
        let wit_trial = to_wit(trial);
        let called = plugin.pre.instantiate(&mut store).and_then(|p| {
            p.agent_ledger_property_property()
                .call_check(&mut store, &wit_trial)
        });
        result.fuel_used = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        drop(store);
        let (stdout, stdout_full) = excerpt(&out.contents(), limits.output_bytes);
        let (stderr, stderr_full) = excerpt(&err.contents(), limits.output_bytes);
        result.stdout = stdout;
        result.stderr = stderr;
        match called {
            Err(e) => result.error = Some(describe_error(&e, limits)),
            Ok(Err(msg)) => {
                result.error = Some(format!("the property could not judge the trial: {msg}"))
            }
            Ok(Ok(outcome)) => match from_wit(outcome) {
                Ok((o, findings)) => {
                    result.outcome = o;
                    result.findings = findings;
                }
                Err(msg) => result.error = Some(format!("malformed result: {msg}")),
            },
        }
        for (full, name) in [(stdout_full, "stdout"), (stderr_full, "stderr")] {
            if full {
                result.outcome = Outcome::Error;
                result.error = Some(format!(
                    "{name} exceeded its {}-byte cap",
                    limits.output_bytes
                ));
            }
        }
        if result.error.is_some() {
            result.outcome = Outcome::Error;
        }
        result
    }
}

fn is_component(bytes: &[u8]) -> bool {
    // The component binary preamble: magic, then version 0x0d and layer 1.
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [0x01, 0x00]
}

fn write_cache(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    let mut sidecar = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut sidecar, crate::digest::sha256_hex(bytes).as_bytes())?;
    sidecar
        .persist(path.with_extension("cwasm.sha256"))
        .map_err(|e| e.error)?;
    Ok(())
}

/// Refuses a component that imports anything outside [`ALLOWED_IMPORTS`].
fn audit_imports(engine: &Engine, component: &Component) -> Result<(), Refusal> {
    let mut refused = Vec::new();
    for (name, _) in component.component_type().imports(engine) {
        let bare = name.split('@').next().unwrap_or(name);
        if !ALLOWED_IMPORTS.contains(&bare) {
            refused.push(name.to_string());
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    let network = refused
        .iter()
        .any(|n| n.starts_with("wasi:sockets/") || n.starts_with("wasi:http/"));
    Err(Refusal(format!(
        "imports {} {}; properties run with no network and only the allowlisted WASI interfaces",
        refused
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        if network {
            "(network access is refused)"
        } else {
            "(not on the allowlist)"
        }
    )))
}

fn root_cause(e: &wasmtime::Error) -> String {
    e.root_cause().to_string()
}

/// A reason for a failed call, naming the budget that ran out.
fn describe_error(e: &wasmtime::Error, limits: &Limits) -> String {
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return format!("called exit({}) instead of returning a result", exit.0);
    }
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::OutOfFuel => format!("fuel budget of {} exhausted", limits.fuel),
            Trap::Interrupt => format!(
                "wall-clock backstop of {} ms reached",
                limits.wall.as_millis()
            ),
            Trap::StackOverflow => format!("stack overflow (cap {} bytes)", MAX_WASM_STACK),
            Trap::UnreachableCodeReached => {
                "trap: unreachable code reached (a panic or abort)".to_string()
            }
            other => format!("trap: {other}"),
        };
    }
    let msg = root_cause(e);
    if msg.contains("growing memory") {
        return format!("memory cap of {} bytes reached", limits.memory_bytes);
    }
    format!("trap: {msg}")
}

/// Keeps the head of a stream for the record; says whether it hit the cap.
fn excerpt(bytes: &[u8], cap: usize) -> (String, bool) {
    let full = bytes.len() >= cap;
    let kept = &bytes[..bytes.len().min(OUTPUT_EXCERPT)];
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if bytes.len() > OUTPUT_EXCERPT {
        text.push_str(&format!(
            "\n[... truncated: {} more bytes{}]",
            bytes.len() - OUTPUT_EXCERPT,
            if full { ", cap reached" } else { "" }
        ));
    }
    (text, full)
}

fn to_wit(t: &TrialInput) -> wit::Trial {
    wit::Trial {
        run_id: t.run_id.clone(),
        base_revision: t.base_revision.clone(),
        patch: t.patch.clone(),
        changes: t
            .changes
            .iter()
            .map(|c| wit::ChangedPath {
                path: c.path.clone(),
                kind: match c.kind {
                    ChangeKind::Added => wit::ChangeKind::Added,
                    ChangeKind::Modified => wit::ChangeKind::Modified,
                    ChangeKind::Deleted => wit::ChangeKind::Deleted,
                    ChangeKind::Renamed => wit::ChangeKind::Renamed,
                    ChangeKind::Copied => wit::ChangeKind::Copied,
                    ChangeKind::TypeChanged => wit::ChangeKind::TypeChanged,
                },
                old_path: c.old_path.clone(),
            })
            .collect(),
        config: t.config.clone(),
    }
}

/// Checks a guest result: a miss names at least one finding, and every
/// finding's path stays inside the repository.
fn from_wit(o: wit::Outcome) -> Result<(Outcome, Vec<Finding>), String> {
    let (outcome, findings) = match o {
        wit::Outcome::Holds(f) => (Outcome::Holds, f),
        wit::Outcome::Miss(f) => (Outcome::Miss, f),
    };
    if outcome == Outcome::Miss && findings.iter().all(|f| f.frozen) {
        return Err("a miss must name at least one finding that is not frozen".into());
    }
    let mut out = Vec::with_capacity(findings.len());
    for f in findings {
        let p = Path::new(&f.path);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(format!(
                "finding path `{}` is not inside the repository",
                f.path
            ));
        }
        out.push(Finding {
            path: f.path,
            line: f.line,
            message: f.message,
            frozen: f.frozen,
        });
    }
    out.sort();
    Ok((outcome, out))
}

struct FixedWallClock;

impl wasmtime_wasi::HostWallClock for FixedWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::from_secs(FIXED_WALL_CLOCK_SECS)
    }
}

/// A pollable that is ready at once: virtual time has already passed.
struct Ready;

#[wasmtime_wasi::async_trait]
impl Pollable for Ready {
    async fn ready(&mut self) {}
}

/// `wasi:clocks/monotonic-clock` on virtual time: a sleep advances the clock
/// and returns at once, so a guest can neither stall the host in a sleep nor
/// observe real time.
struct VirtualClock<'a> {
    nanos: &'a mut u64,
    table: &'a mut ResourceTable,
}

struct VirtualClockData;

impl HasData for VirtualClockData {
    type Data<'a> = VirtualClock<'a>;
}

use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;

impl monotonic_clock::Host for VirtualClock<'_> {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        Ok(*self.nanos)
    }
    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Duration> {
        Ok(1)
    }
    fn subscribe_instant(
        &mut self,
        when: monotonic_clock::Instant,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        *self.nanos = (*self.nanos).max(when);
        let ready = self.table.push(Ready)?;
        wasmtime_wasi::p2::subscribe(self.table, ready)
    }
    fn subscribe_duration(
        &mut self,
        d: monotonic_clock::Duration,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        *self.nanos = self.nanos.saturating_add(d);
        let ready = self.table.push(Ready)?;
        wasmtime_wasi::p2::subscribe(self.table, ready)
    }
}

struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links exactly the allowlisted interfaces, one by one: never sockets or
/// http (`add_to_linker_sync` would link sockets too).
fn make_linker(engine: &Engine) -> wasmtime::Result<Linker<Host>> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random, sync};
    use wasmtime_wasi::random::WasiRandom;

    let mut linker = Linker::new(engine);
    let l = &mut linker;
    sync::io::error::add_to_linker::<Host, HasIo>(l, |h| &mut h.table)?;
    sync::io::poll::add_to_linker::<Host, HasIo>(l, |h| &mut h.table)?;
    sync::io::streams::add_to_linker::<Host, HasIo>(l, |h| &mut h.table)?;
    clocks::wall_clock::add_to_linker::<Host, WasiClocks>(l, Host::clocks)?;
    monotonic_clock::add_to_linker::<Host, VirtualClockData>(l, |h| VirtualClock {
        nanos: &mut h.monotonic_nanos,
        table: &mut h.table,
    })?;
    sync::filesystem::types::add_to_linker::<Host, WasiFilesystem>(l, Host::filesystem)?;
    filesystem::preopens::add_to_linker::<Host, WasiFilesystem>(l, Host::filesystem)?;
    random::random::add_to_linker::<Host, WasiRandom>(l, |h| h.wasi.random())?;
    random::insecure::add_to_linker::<Host, WasiRandom>(l, |h| h.wasi.random())?;
    random::insecure_seed::add_to_linker::<Host, WasiRandom>(l, |h| h.wasi.random())?;
    cli::exit::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::environment::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::stdin::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::stdout::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::stderr::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_input::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_output::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_stdin::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_stdout::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_stderr::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    Ok(linker)
}
