//! One run of a plugin: the store it runs in (WASI context, limits, fuel
//! and the epoch deadline) and `check` on a trial, every failure an `error`
//! outcome.

use super::*;

impl Sandbox {
    pub(super) fn store(
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
        b.max_random_size(HOST_CALL_BYTES);
        if let Some((out, err)) = pipes {
            b.stdout(out.clone());
            b.stderr(err.clone());
        }
        if let Some(m) = mounts {
            b.preopened_dir(m.patched, "/patched", FsPerms::ReadOnly)?;
            b.preopened_dir(m.base, "/base", FsPerms::ReadOnly)?;
            b.preopened_dir(m.inputs, "/inputs", FsPerms::ReadOnly)?;
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits.handles);
        let host = Host {
            wasi: b.build(),
            table,
            budget: Budget::new(limits.memory_bytes),
            fs: FsState::new(limits.descriptors),
            monotonic_nanos: 0,
        };
        let mut store = Store::new(&self.engine, host);
        store.limiter(|h| &mut h.budget);
        store.set_max_component_handles(limits.handles);
        store.set_hostcall_fuel(limits.hostcall_bytes());
        store.set_fuel(limits.fuel)?;
        // Host calls draw on the fuel: a flat cost on the way in, the work
        // they did (bytes read) on the way out.
        store.call_hook(|mut ctx, hook| {
            let cost = match hook {
                wasmtime::CallHook::CallingHost => HOSTCALL_FUEL,
                wasmtime::CallHook::ReturningFromHost => {
                    std::mem::take(&mut ctx.data_mut().fs.host_work)
                        .saturating_mul(FUEL_PER_HOST_BYTE)
                }
                _ => return Ok(()),
            };
            let left = ctx.get_fuel()?;
            if cost > left {
                ctx.set_fuel(0)?;
                return Err(wasmtime::Trap::OutOfFuel.into());
            }
            ctx.set_fuel(left - cost)
        });
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
            completion_ids: Vec::new(),
            details: RunDetails::default(),
        };
        let mut store = match self.store(limits, Some(mounts), seed, Some((&out, &err))) {
            Ok(s) => s,
            Err(e) => {
                result.error = Some(format!("cannot set up the sandbox: {}", root_cause(&e)));
                return result;
            }
        };
        let wit_trial = to_wit(trial);
        let started = Instant::now();
        let called = plugin.pre.instantiate(&mut store).and_then(|p| {
            p.agent_ledger_property_property()
                .call_check(&mut store, &wit_trial)
        });
        result.details = RunDetails {
            wall: started.elapsed(),
            peak_memory_bytes: store.data().budget.used() as u64,
            stderr_tail: String::new(),
        };
        result.fuel_used = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        drop(store);
        let (stdout, stdout_full) = excerpt(&out.contents(), limits.output_bytes);
        let (stderr, stderr_full) = excerpt(&err.contents(), limits.output_bytes);
        result.stdout = stdout;
        result.stderr = stderr;
        result.details.stderr_tail = tail(&err.contents());
        match called {
            Err(e) => result.error = Some(describe_error(&e, limits)),
            Ok(Err(msg)) if msg.len() > limits.findings_bytes => {
                result.error = Some(format!(
                    "findings cap reached: the property's error message of {} bytes is over the {}-byte cap",
                    msg.len(),
                    limits.findings_bytes
                ))
            }
            Ok(Err(msg)) => {
                result.error = Some(format!("the property could not judge the trial: {msg}"))
            }
            Ok(Ok(outcome)) => match from_wit(outcome, limits) {
                Ok((o, findings)) => {
                    result.outcome = o;
                    result.findings = findings;
                }
                Err(msg) => result.error = Some(msg),
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
        let mut ids = std::collections::BTreeSet::new();
        crate::completion_ids::scan(&out.contents(), &mut ids);
        crate::completion_ids::scan(&err.contents(), &mut ids);
        for f in &result.findings {
            crate::completion_ids::scan(f.message.as_bytes(), &mut ids);
        }
        if let Some(e) = &result.error {
            crate::completion_ids::scan(e.as_bytes(), &mut ids);
        }
        result.completion_ids = ids.into_iter().collect();
        result
    }
}
