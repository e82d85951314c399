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

/// Refuses a component that imports anything outside [`ALLOWED_IMPORTS`].
pub(super) fn audit_imports(engine: &Engine, component: &Component) -> Result<(), Refusal> {
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
