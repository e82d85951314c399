//! The linker, built interface by interface: exactly the allowlisted WASI
//! interfaces (never sockets or http), the fixed wall clock, the virtual
//! monotonic clock, the deterministic filesystem (`fs`); and the import audit
//! that refuses anything else.

use super::fs::{DeterministicFs, DeterministicFsData};
use super::{FIXED_WALL_CLOCK_SECS, Host, Refusal};
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::{Component, HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::{DynPollable, Pollable};

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

/// Refuses a component that imports anything outside [`ALLOWED_IMPORTS`],
/// from its bytes alone: the top-level import section is read with
/// `wasmparser` before anything is compiled, so a refused component costs a
/// parse and never reaches Cranelift (nor the compile cache).
pub(super) fn audit_import_names(bytes: &[u8]) -> Result<(), Refusal> {
    let mut names = Vec::new();
    // Nested modules and components arrive inline, between their own
    // `Version` and `End`: only the outer component's imports reach the host.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload =
            payload.map_err(|e| Refusal(format!("is not a well-formed component: {e}")))?;
        match payload {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import
                        .map_err(|e| Refusal(format!("is not a well-formed component: {e}")))?;
                    names.push(import.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    refuse_off_allowlist(names)
}

/// Refuses a compiled component that imports anything outside
/// [`ALLOWED_IMPORTS`] (the same rule as [`audit_import_names`], on
/// wasmtime's own view of the component).
pub(super) fn audit_imports(engine: &Engine, component: &Component) -> Result<(), Refusal> {
    refuse_off_allowlist(
        component
            .component_type()
            .imports(engine)
            .map(|(name, _)| name.to_string())
            .collect(),
    )
}

fn refuse_off_allowlist(names: Vec<String>) -> Result<(), Refusal> {
    let refused: Vec<String> = names
        .into_iter()
        .filter(|name| {
            let bare = name.split('@').next().unwrap_or(name);
            !ALLOWED_IMPORTS.contains(&bare)
        })
        .collect();
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

pub(super) struct FixedWallClock;

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

pub(super) fn deterministic_fs(h: &mut Host) -> DeterministicFs<'_> {
    DeterministicFs {
        inner: WasiFilesystemCtxView {
            ctx: h.wasi.filesystem(),
            table: &mut h.table,
        },
        state: &mut h.fs,
    }
}

/// Links exactly the allowlisted interfaces, one by one: never sockets or
/// http (`add_to_linker_sync` would link sockets too).
pub(super) fn make_linker(engine: &Engine) -> wasmtime::Result<Linker<Host>> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
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
    // Both filesystem interfaces go through `fs`, which rewrites metadata
    // and tracks each descriptor's path.
    sync::filesystem::types::add_to_linker::<Host, DeterministicFsData>(l, deterministic_fs)?;
    filesystem::preopens::add_to_linker::<Host, DeterministicFsData>(l, deterministic_fs)?;
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
