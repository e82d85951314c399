//! The sandbox: everything about wasmtime lives here and nowhere else.
//!
//! A property is a WASI Preview 2 component. This module compiles it (with an
//! on-disk cache of compiled code keyed by the component's sha256 and the
//! engine's compatibility hash, checked before use), refuses it when it imports
//! anything outside the allowlist, links the `wasi:sockets` and `wasi:http`
//! 0.2.x interfaces it imports to functions that trap ("network access is
//! refused", see `linker`: nothing networked is ever linked), and runs it
//! with:
//!
//! - read-only preopens of the patched tree, the base tree and the inputs;
//!   no environment, no arguments, empty stdin;
//! - a fixed wall clock, a virtual monotonic clock that only moves when the
//!   guest sleeps (sleeping returns at once), and seeded randomness;
//! - file metadata with nothing of the host in it (`fs`): fixed timestamps,
//!   link counts of 1, metadata hashes from paths, sorted directory entries;
//! - a fuel budget (deterministic: it is recorded) that host calls draw on
//!   too ([`HOSTCALL_FUEL`] each, plus [`FUEL_PER_HOST_BYTE`] for each byte a
//!   file read returns and 1 KiB's worth for each entry of a directory read
//!   whole; every other call's host work is capped at 64 KiB), so the
//!   work a plugin makes the host do is paid for in fuel and load cannot
//!   change where it stops; an epoch-based wall-clock backstop far above
//!   what any default budget reaches; a stack cap, and caps that are totals
//!   per plugin instance:
//!   memory (all memories and tables, `limiter`), open descriptors and
//!   resource handles, stdout/stderr, and findings.
//!
//! `describe` and `check` run under the same limits: the property's own.
//!
//! Every trap, exhausted budget, timeout, `exit` call, overflowing output or
//! malformed result becomes an `error` outcome with its reason.

mod cache;
pub use cache::key_path as cache_key_path;
pub use cache::{
    KEY_ENV as CACHE_KEY_ENV, env_key_for_child, key_source as cache_key_source,
    open_entry as open_cache_entry, preload_env_key, read_entry as read_cache_entry,
};
pub use cache::{
    SEALED_AT, open as open_sealed, seal, sealed_body, write_entry as write_cache_entry,
};
mod convert;
mod fs;
mod limiter;
mod linker;
mod run;

pub use limiter::TABLE_ELEMENT_BYTES;
pub use linker::{
    ALLOWED_IMPORTS, Disposition, HOST_WASI_VERSION, Import, STUBBED_PREFIXES, classify,
};

use crate::record::{Finding, Outcome};
use convert::{describe_error, excerpt, from_wit, root_cause, tail, to_wit};
use fs::FsState;
use limiter::Budget;
use linker::{FixedWallClock, audit_import_names, make_linker};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({ path: "wit", world: "plugin" });
}

use bindings::agent_ledger::property::types as wit;

/// The fixed wall clock every property sees: 2000-01-01T00:00:00Z.
pub const FIXED_WALL_CLOCK_SECS: u64 = 946_684_800;
/// Fuel one host call costs, whatever it does: about what 64 KiB of host
/// work (the most one call may ask for: reads and random bytes are capped
/// there) costs in wasm instructions on a current core.
pub const HOSTCALL_FUEL: u64 = 50_000;
/// Fuel for each byte a file read returns, on top of [`HOSTCALL_FUEL`].
pub const FUEL_PER_HOST_BYTE: u64 = 1;
/// Host work a directory entry costs when `read-directory` reads and sorts
/// a whole directory in one call (as bytes of a read: a name and its stat).
const FUEL_PER_DIR_ENTRY: u64 = 1024;
/// The most one host call may produce: random bytes, a file read.
const HOST_CALL_BYTES: u64 = 64 << 10;
/// How often the epoch advances for the wall-clock backstop.
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Bytes of stdout/stderr kept in the property record.
pub const OUTPUT_EXCERPT: usize = 4096;

/// Resource bounds for one plugin instance (one `describe` or one `check`);
/// each is a total for the instance, never per object.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub fuel: u64,
    /// Bytes of all linear memories and tables together, a table element
    /// counting [`TABLE_ELEMENT_BYTES`].
    pub memory_bytes: usize,
    pub wall: Duration,
    /// Bytes a stream may take before the run is an error.
    pub output_bytes: usize,
    /// Files and directories opened with `open-at` and not yet dropped (the
    /// three preopens do not count). Each holds a host descriptor, and the
    /// properties of a check share the process's descriptor limit: this
    /// times the number of properties run at once must stay under it.
    pub descriptors: usize,
    /// Live resource handles (descriptors, streams, pollables, directory
    /// streams), in the host's resource table and in the guest's handle
    /// tables alike.
    pub handles: usize,
    /// Findings one result may carry.
    pub findings: usize,
    /// Bytes of paths and messages across one result's findings (or of its
    /// `err` message).
    pub findings_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 4_000_000_000,
            memory_bytes: 256 << 20,
            // The default fuel runs out in seconds, host calls included (4e9
            // fuel is at most 80,000 host calls of at most 64 KiB each):
            // this backstop is for a machine loaded many times over.
            wall: Duration::from_secs(120),
            output_bytes: 1 << 20,
            descriptors: 64,
            handles: 4096,
            findings: 10_000,
            findings_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// The most a plugin may copy into the host in one call (wasmtime's
    /// "hostcall fuel", which also bounds lifting `check`'s result): the
    /// findings caps in the host's representation, so an oversized result
    /// traps while it is lifted instead of being built in host memory first.
    fn hostcall_bytes(&self) -> usize {
        self.findings
            .saturating_mul(std::mem::size_of::<wit::Finding>())
            .saturating_add(self.findings_bytes)
            .saturating_add(self.output_bytes)
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
    /// Completion ids in the whole output, findings and error, sorted.
    pub completion_ids: Vec<String>,
    pub details: RunDetails,
}

/// What `plugin test` shows of a run beyond the record: wall time differs
/// between machines and runs, so none of this is recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunDetails {
    /// Instantiation and the call, measured by the host.
    pub wall: Duration,
    /// The instance's peak bytes of linear memory and tables together, as
    /// the memory budget counted them.
    pub peak_memory_bytes: u64,
    /// The end of stderr (the record keeps its head), where a Python
    /// traceback or a panic message is.
    pub stderr_tail: String,
}

/// A loaded, audited, pre-instantiated component that has described itself.
pub struct Plugin {
    pub sha256: String,
    pub name: String,
    pub version: String,
    pub summary: String,
    /// Every import of the component, in its order, with what the host
    /// does with it.
    pub imports: Vec<Import>,
    /// The network imports linked to traps, sorted.
    pub stubbed: Vec<String>,
    pre: bindings::PluginPre<Host>,
}

/// A component audited, compiled and pre-instantiated once, with its
/// imports.
#[derive(Clone)]
struct Prepared {
    pre: bindings::PluginPre<Host>,
    imports: Vec<Import>,
    stubbed: Vec<String>,
}

/// What [`Sandbox::inspect`] found out about a component without running
/// `check`.
pub struct Inspection {
    pub sha256: String,
    /// The component's imports, read from its bytes; empty when it is not
    /// a well-formed component.
    pub imports: Vec<Import>,
    pub loaded: Result<Arc<Plugin>, Refusal>,
    /// The end of what `describe` wrote to stderr (a Python traceback, a
    /// panic message).
    pub describe_stderr: String,
    /// Whether the component was compiled by this call (else it came from
    /// the compile cache or this process had it already), and how long
    /// loading it took in all.
    pub compiled: bool,
    pub load_wall: Duration,
}

/// Per-store state.
pub(crate) struct Host {
    wasi: WasiCtx,
    table: ResourceTable,
    budget: Budget,
    fs: FsState,
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
    /// Compiled, audited and pre-instantiated components by sha256.
    compiled: Mutex<HashMap<String, Prepared>>,
    ticker_alive: Arc<AtomicBool>,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.ticker_alive.store(false, Ordering::Relaxed);
    }
}

/// A sandbox made on first use: a trial that never reaches its properties
/// (an incomplete transcript, no lock) never starts the engine.
pub struct Lazy {
    cache_dir: Option<PathBuf>,
    cell: OnceLock<Sandbox>,
}

impl Lazy {
    pub fn new(cache_dir: Option<PathBuf>) -> Lazy {
        Lazy {
            cache_dir,
            cell: OnceLock::new(),
        }
    }

    pub fn get(&self) -> crate::exit::Result<&Sandbox> {
        if let Some(s) = self.cell.get() {
            return Ok(s);
        }
        let made = Sandbox::new(self.cache_dir.clone()).map_err(|e| {
            crate::exit::Error::Internal(format!("cannot start the WebAssembly engine: {e}"))
        })?;
        Ok(self.cell.get_or_init(|| made))
    }
}

/// Why a component was not loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// Compiler settings other than the sandbox's own, measured against it by
/// `benches/plugin_compile.sh`; no command uses any of them.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tuning {
    /// What every command runs with.
    #[default]
    Current,
    /// One compiler thread.
    Serial,
    /// Cranelift without its optimisation passes.
    OptNone,
    /// Cranelift's single-pass register allocator (wasmtime does not
    /// consider it for security advisories).
    SinglePass,
    /// Both of the above.
    OptNoneSinglePass,
    // Not Winch: wasmtime 48 documents `epoch_interruption` (the wall-clock
    // backstop every plugin runs under) as not compatible with it.
}

impl Tuning {
    pub fn all() -> Vec<Tuning> {
        vec![
            Tuning::Current,
            Tuning::Serial,
            Tuning::OptNone,
            Tuning::SinglePass,
            Tuning::OptNoneSinglePass,
        ]
    }

    fn apply(self, config: &mut wasmtime::Config) {
        use wasmtime::{OptLevel, RegallocAlgorithm};
        match self {
            Tuning::Current => {}
            Tuning::Serial => {
                config.parallel_compilation(false);
            }
            Tuning::OptNone => {
                config.cranelift_opt_level(OptLevel::None);
            }
            Tuning::SinglePass => {
                config.cranelift_regalloc_algorithm(RegallocAlgorithm::SinglePass);
            }
            Tuning::OptNoneSinglePass => {
                config.cranelift_opt_level(OptLevel::None);
                config.cranelift_regalloc_algorithm(RegallocAlgorithm::SinglePass);
            }
        }
    }
}

impl Sandbox {
    /// Makes the engine and linker. `cache_dir` holds compiled components.
    pub fn new(cache_dir: Option<PathBuf>) -> wasmtime::Result<Sandbox> {
        Sandbox::tuned(cache_dir, Tuning::Current)
    }

    /// [`Sandbox::new`] with other compiler settings: for the compile-time
    /// bench only.
    #[doc(hidden)]
    pub fn tuned(cache_dir: Option<PathBuf>, tuning: Tuning) -> wasmtime::Result<Sandbox> {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        config.consume_fuel(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(MAX_WASM_STACK);
        config.wasm_backtrace_max_frames(None);
        config.cranelift_nan_canonicalization(true);
        config.parallel_compilation(true);
        tuning.apply(&mut config);
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
            compiled: Mutex::new(HashMap::new()),
            ticker_alive,
        })
    }

    /// The engine, for the first-load bench's floor (`wasmtime compile` of
    /// the same component under the same settings).
    #[doc(hidden)]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Loads a component under the default limits; see [`Sandbox::load_with`].
    pub fn load(&self, bytes: &[u8]) -> Result<Arc<Plugin>, Refusal> {
        self.load_with(bytes, &Limits::default())
    }

    /// Loads a component: audit its imports, compile it (or take it from
    /// the cache), pre-instantiate it (all three once per component bytes),
    /// and ask it to describe itself under `limits`, the same ones its
    /// `check` will run under, so a plugin cannot spend in `describe` what
    /// `check` may not.
    pub fn load_with(&self, bytes: &[u8], limits: &Limits) -> Result<Arc<Plugin>, Refusal> {
        self.load_inner(bytes, limits, None).map(|(p, _)| p)
    }

    /// Loads a component as [`Sandbox::load_with`] does, and reports its
    /// imports (also when it is refused), what `describe` wrote to stderr,
    /// and what loading cost: for `plugin test` and `plugin inspect`.
    pub fn inspect(&self, bytes: &[u8], limits: &Limits) -> Inspection {
        let started = Instant::now();
        let err = MemoryOutputPipe::new(limits.output_bytes);
        let imports = audit_import_names(bytes)
            .map(|a| a.imports)
            .unwrap_or_default();
        let loaded = self.load_inner(bytes, limits, Some(&err));
        let describe_stderr = tail(&err.contents());
        let (loaded, compiled) = match loaded {
            Ok((plugin, compiled)) => (Ok(plugin), compiled),
            Err(refusal) => (Err(refusal), false),
        };
        Inspection {
            sha256: crate::digest::sha256_hex(bytes),
            imports,
            loaded,
            describe_stderr,
            compiled,
            load_wall: started.elapsed(),
        }
    }

    fn load_inner(
        &self,
        bytes: &[u8],
        limits: &Limits,
        stderr: Option<&MemoryOutputPipe>,
    ) -> Result<(Arc<Plugin>, bool), Refusal> {
        let sha256 = crate::digest::sha256_hex(bytes);
        let (prepared, fresh) = self.prepare(bytes, &sha256)?;
        let out = MemoryOutputPipe::new(limits.output_bytes);
        let pipes = stderr.map(|err| (&out, err));
        let mut store = self
            .store(limits, None, [0; 32], pipes)
            .map_err(|e| Refusal(format!("cannot set up a store: {}", root_cause(&e))))?;
        let info = prepared
            .pre
            .instantiate(&mut store)
            .and_then(|p| p.agent_ledger_property_property().call_describe(&mut store))
            .map_err(|e| Refusal(format!("`describe` failed: {}", describe_error(&e, limits))))?;
        // Cached only once accepted: a refused component is never cached.
        let compiled = fresh.is_some();
        if let Some(component) = fresh {
            self.store_cached(&component, &sha256);
        }
        Ok((
            Arc::new(Plugin {
                sha256,
                name: info.name,
                version: info.version,
                summary: info.summary,
                imports: prepared.imports,
                stubbed: prepared.stubbed,
                pre: prepared.pre,
            }),
            compiled,
        ))
    }

    /// The audited, pre-instantiated component, and the component itself
    /// when it was compiled now (not yet written to the disk cache).
    fn prepare(
        &self,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<(Prepared, Option<Component>), Refusal> {
        if let Some(prepared) = self.compiled.lock().expect("plugin map").get(sha256) {
            return Ok((prepared.clone(), None));
        }
        if !is_component(bytes) {
            return Err(Refusal("not a WebAssembly component (a core module or not wasm at all); build it for wasm32-wasip2".into()));
        }
        // Refused before compiling: a refusal costs a parse, not a compile.
        let audit = audit_import_names(bytes)?;
        audit.verdict()?;
        let (component, compiled) = self.compile_cached(bytes, sha256)?;
        let linker = linker::link(&self.linker, &self.engine, &component)?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| Refusal(format!("cannot link: {}", root_cause(&e))))?;
        let pre = bindings::PluginPre::new(pre).map_err(|e| {
            Refusal(format!(
                "does not export `agent-ledger:property/property`: {}",
                root_cause(&e)
            ))
        })?;
        let prepared = Prepared {
            pre,
            stubbed: audit.stubbed(),
            imports: audit.imports,
        };
        self.compiled
            .lock()
            .expect("plugin map")
            .insert(sha256.to_string(), prepared.clone());
        let fresh = matches!(compiled, cache::Compiled::Fresh).then_some(component);
        Ok((prepared, fresh))
    }
}

fn is_component(bytes: &[u8]) -> bool {
    // The component binary preamble: magic, then version 0x0d and layer 1.
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [0x01, 0x00]
}
