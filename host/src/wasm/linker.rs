//! The linker, built interface by interface: exactly the allowlisted WASI
//! interfaces (never sockets or http), the fixed wall clock, the virtual
//! monotonic clock, the deterministic filesystem (`fs`); the import audit
//! that refuses anything else; and the network stubs.
//!
//! A component that imports `wasi:sockets/*` or `wasi:http/*` at a WASI
//! 0.2.x version (CPython's libc and StarlingMonkey import them whether they
//! are used or not) is linked, but those interfaces are never the host's:
//! every function in them is defined from the component's own import types
//! as a function that traps with "network access is refused
//! (INTERFACE#FUNCTION called)", and every resource they declare is a host
//! type nothing can construct. Resources they only use (`wasi:io`'s
//! streams, pollable and error) keep the host's real types, which is what
//! the component imported them as.
//!
//! Everything is decided from the component's bytes before it is compiled
//! ([`audit_import_names`]), so a refusal costs a parse; wasmtime's view of
//! the compiled component is checked against the same rule again
//! ([`link`]).

use super::fs::{DeterministicFs, DeterministicFsData};
use super::{FIXED_WALL_CLOCK_SECS, Host, Refusal};
use std::borrow::Cow;
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, HasData, Linker, Resource, ResourceTable, ResourceType};
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

/// Interface prefixes whose 0.2.x imports are linked to traps, never to the
/// host: nothing that can reach a network is ever linked.
pub const STUBBED_PREFIXES: &[&str] = &["wasi:sockets/", "wasi:http/"];

/// The WASI version the host links (wasmtime-wasi's); a guest's other 0.2.x
/// versions link to it by semver.
pub const HOST_WASI_VERSION: &str = "0.2.12";

/// What the host does with one import of a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Linked to the host's implementation.
    Linked,
    /// Linked to functions that trap with "network access is refused".
    Stubbed,
    /// The component is refused for it.
    Refused,
}

/// One import of a component, by its full name (`wasi:io/streams@0.2.9`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Import {
    pub name: String,
    pub disposition: Disposition,
    /// Why a refused import is refused, and what fixes it when that is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Whether `version` is a WASI 0.2.x release (`0.2.0` to `0.2.N`; no
/// pre-release or build suffix).
fn is_wasi_02(version: Option<&str>) -> bool {
    version
        .and_then(|v| v.strip_prefix("0.2."))
        .is_some_and(|patch| !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()))
}

/// What the host does with the import `name`.
pub fn classify(name: &str) -> Import {
    let (bare, version) = match name.split_once('@') {
        Some((bare, version)) => (bare, Some(version)),
        None => (name, None),
    };
    let refused = |reason: String| Import {
        name: name.to_string(),
        disposition: Disposition::Refused,
        reason: Some(reason),
    };
    let ok = |disposition| Import {
        name: name.to_string(),
        disposition,
        reason: None,
    };
    if STUBBED_PREFIXES.iter().any(|p| bare.starts_with(p)) {
        if is_wasi_02(version) {
            return ok(Disposition::Stubbed);
        }
        let mut reason = format!(
            "network access is refused, and only WASI 0.2.x network imports can be stubbed \
             (this host's is {HOST_WASI_VERSION})"
        );
        if bare.starts_with("wasi:http/") {
            reason.push_str("; jco: build with `--disable http fetch-event`");
        }
        return refused(reason);
    }
    if ALLOWED_IMPORTS.contains(&bare) {
        if bare.starts_with("wasi:") && !is_wasi_02(version) {
            return refused(format!(
                "not a WASI 0.2.x version: this host provides WASI {HOST_WASI_VERSION}; \
                 build for WASI 0.2 (`wasm32-wasip2`)"
            ));
        }
        return ok(Disposition::Linked);
    }
    if bare.starts_with("jco:node/") || bare.starts_with("node:") {
        return refused(
            "a Node.js built-in bundled by jco: use `wasi:filesystem` instead of `node:fs`".into(),
        );
    }
    refused("not on the allowlist".into())
}

/// The audit of a component's imports, from its bytes.
pub(super) struct Audit {
    /// Every top-level import, in the component's order.
    pub imports: Vec<Import>,
    /// The first component-model async (or threads) construct found, if any.
    pub async_use: Option<String>,
}

impl Audit {
    /// The imports linked to traps, sorted.
    pub(super) fn stubbed(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .imports
            .iter()
            .filter(|i| i.disposition == Disposition::Stubbed)
            .map(|i| i.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Refuses a component that uses component-model async (first: what
    /// it imports then is beside the point) or has a refused import.
    pub(super) fn verdict(&self) -> Result<(), Refusal> {
        if let Some(construct) = &self.async_use {
            return Err(Refusal(format!(
                "uses component-model async ({construct}), which this host does not run; \
                 jco's QuickJS backend (`--backend qjs`): build with `--backend-qjs-disable-async`"
            )));
        }
        refuse_off_allowlist(&self.imports)
    }
}

/// Reads a component's top-level imports (and whether it uses
/// component-model async) from its bytes alone, with `wasmparser`, before
/// anything is compiled: a refused component costs a parse and never
/// reaches Cranelift (nor the compile cache).
pub(super) fn audit_import_names(bytes: &[u8]) -> Result<Audit, Refusal> {
    let malformed =
        |e: wasmparser::BinaryReaderError| Refusal(format!("is not a well-formed component: {e}"));
    let mut audit = Audit {
        imports: Vec::new(),
        async_use: None,
    };
    // Nested modules and components arrive inline, between their own
    // `Version` and `End`: only the outer component's imports reach the host.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.map_err(malformed)? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    audit
                        .imports
                        .push(classify(import.map_err(malformed)?.name.name));
                }
            }
            wasmparser::Payload::ComponentCanonicalSection(reader) if audit.async_use.is_none() => {
                for f in reader {
                    if let Some(found) = async_canonical(&f.map_err(malformed)?) {
                        audit.async_use = Some(found);
                        break;
                    }
                }
            }
            wasmparser::Payload::ComponentTypeSection(reader) if audit.async_use.is_none() => {
                for ty in reader {
                    if let Some(found) = async_type(&ty.map_err(malformed)?) {
                        audit.async_use = Some(found);
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(audit)
}

/// A canonical function that needs component-model async (or threads):
/// an `async` lift or lower, or any built-in beyond lift, lower and the
/// three resource built-ins.
fn async_canonical(f: &wasmparser::CanonicalFunction) -> Option<String> {
    use wasmparser::{CanonicalFunction as F, CanonicalOption as O};
    let async_option = |options: &[O]| {
        options
            .iter()
            .any(|o| matches!(o, O::Async | O::Callback(_)))
    };
    match f {
        F::Lift { options, .. } if async_option(options) => Some("`canon lift async`".into()),
        F::Lower { options, .. } if async_option(options) => Some("`canon lower async`".into()),
        F::Lift { .. }
        | F::Lower { .. }
        | F::ResourceNew { .. }
        | F::ResourceDrop { .. }
        | F::ResourceRep { .. } => None,
        other => {
            let debug = format!("{other:?}");
            let name = debug
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("")
                .to_string();
            Some(format!("the `{name}` built-in"))
        }
    }
}

/// A type that needs component-model async: an `async` function type, a
/// `future` or a `stream`, at any depth of instance and component types.
fn async_type(ty: &wasmparser::ComponentType) -> Option<String> {
    use wasmparser::{
        ComponentDefinedType as D, ComponentType as T, ComponentTypeDeclaration as C,
        InstanceTypeDeclaration as I,
    };
    match ty {
        T::Func(f) if f.async_ => Some("an `async` function type".into()),
        T::Defined(D::Future(_)) => Some("a `future` type".into()),
        T::Defined(D::Stream(_)) => Some("a `stream` type".into()),
        T::Instance(decls) => decls.iter().find_map(|d| match d {
            I::Type(t) => async_type(t),
            _ => None,
        }),
        T::Component(decls) => decls.iter().find_map(|d| match d {
            C::Type(t) => async_type(t),
            _ => None,
        }),
        _ => None,
    }
}

fn refuse_off_allowlist(imports: &[Import]) -> Result<(), Refusal> {
    let refused: Vec<&Import> = imports
        .iter()
        .filter(|i| i.disposition == Disposition::Refused)
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(Refusal(format!(
        "imports {}; properties run with no network and only the allowlisted WASI interfaces",
        refused
            .iter()
            .map(|i| format!(
                "`{}` ({})",
                i.name,
                i.reason.as_deref().unwrap_or("refused")
            ))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// A stubbed network function was called: the guest traps with this.
#[derive(Debug)]
pub(super) struct NetworkRefused {
    /// `INTERFACE#FUNCTION`, e.g.
    /// `wasi:sockets/tcp@0.2.9#[method]tcp-socket.start-connect`.
    pub called: String,
}

impl std::fmt::Display for NetworkRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "network access is refused ({} called)", self.called)
    }
}

impl std::error::Error for NetworkRefused {}

/// The linker for one compiled component: `base` itself, or, when the
/// component imports network interfaces, a copy of it with those imports
/// defined as traps. wasmtime's view of the component's imports is checked
/// against the same rule as its bytes were: a refused import here is a
/// refusal too.
pub(super) fn link<'a>(
    base: &'a Linker<Host>,
    engine: &Engine,
    component: &Component,
) -> Result<Cow<'a, Linker<Host>>, Refusal> {
    let ty = component.component_type();
    let imports: Vec<Import> = ty.imports(engine).map(|(n, _)| classify(n)).collect();
    refuse_off_allowlist(&imports)?;
    if imports
        .iter()
        .all(|i| i.disposition != Disposition::Stubbed)
    {
        return Ok(Cow::Borrowed(base));
    }
    let cannot = |e: wasmtime::Error| Refusal(format!("cannot stub a network import: {e}"));
    let mut linker = base.clone();
    // Resources in import order: the first import naming one declares it;
    // later ones (`use wasi:io/streams.{input-stream}`) refer to it, and
    // wasmtime links them to whatever the declaring import was given.
    let mut seen: Vec<ResourceType> = Vec::new();
    let mut fresh = 0u32;
    for (name, item) in ty.imports(engine) {
        let stub = classify(name).disposition == Disposition::Stubbed;
        match item.ty {
            ComponentItem::ComponentInstance(instance) => {
                let mut li = if stub {
                    Some(linker.instance(name).map_err(cannot)?)
                } else {
                    None
                };
                for (export, item) in instance.exports(engine) {
                    match (item.ty, li.as_mut()) {
                        (ComponentItem::Resource(r), li) => {
                            if seen.contains(&r) {
                                continue;
                            }
                            seen.push(r);
                            if let Some(li) = li {
                                // Distinct per resource, and made by no
                                // host function: no handle of it can exist.
                                fresh += 1;
                                li.resource(
                                    export,
                                    ResourceType::host_dynamic(STUB_RESOURCE_BASE + fresh),
                                    |_, _| Ok(()),
                                )
                                .map_err(cannot)?;
                            }
                        }
                        (ComponentItem::ComponentFunc(_), Some(li)) => {
                            let called = format!("{name}#{export}");
                            li.func_new(export, move |_, _, _, _| {
                                Err(NetworkRefused {
                                    called: called.clone(),
                                }
                                .into())
                            })
                            .map_err(cannot)?;
                        }
                        (ComponentItem::Type(_), _) | (_, None) => {}
                        (other, Some(_)) => {
                            return Err(Refusal(format!(
                                "cannot stub `{name}`: its export `{export}` is a {}, not a function or resource",
                                kind(&other)
                            )));
                        }
                    }
                }
            }
            ComponentItem::ComponentFunc(_) if stub => {
                let called = name.to_string();
                linker
                    .root()
                    .func_new(name, move |_, _, _, _| {
                        Err(NetworkRefused {
                            called: called.clone(),
                        }
                        .into())
                    })
                    .map_err(cannot)?;
            }
            ComponentItem::Resource(r) if !seen.contains(&r) => seen.push(r),
            other if stub => {
                return Err(Refusal(format!(
                    "cannot stub `{name}`: it is a {}, not an interface",
                    kind(&other)
                )));
            }
            _ => {}
        }
    }
    Ok(Cow::Owned(linker))
}

/// Stub resource types are `host_dynamic(STUB_RESOURCE_BASE + n)`: no
/// wasmtime-wasi type is dynamic, so none can be mistaken for them.
const STUB_RESOURCE_BASE: u32 = 0x6e65_0000;

fn kind(item: &ComponentItem) -> &'static str {
    match item {
        ComponentItem::ComponentFunc(_) => "function",
        ComponentItem::CoreFunc(_) => "core function",
        ComponentItem::Module(_) => "module",
        ComponentItem::Component(_) => "component",
        ComponentItem::ComponentInstance(_) => "instance",
        ComponentItem::Type(_) => "type",
        ComponentItem::Resource(_) => "resource",
    }
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
