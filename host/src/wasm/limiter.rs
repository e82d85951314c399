//! One memory budget per plugin instance: every linear memory and every
//! table, at creation and at each growth, is charged against the same
//! `memory_bytes`, so sixteen memories or one huge `table.grow` cost what
//! they would cost the host. (wasmtime's `StoreLimits` caps each memory
//! separately and leaves tables uncapped unless told an element count.)

use wasmtime::ResourceLimiter;

/// What one table element is charged: a pointer, which is what wasmtime
/// stores per element of a `funcref` or `externref` table on a 64-bit host.
pub const TABLE_ELEMENT_BYTES: usize = 8;

/// Core instances one plugin may create (a component is a handful).
const INSTANCES: usize = 64;
/// Tables and memories one plugin may create: each reserves address space
/// beyond what the budget counts.
const TABLES: usize = 64;
const MEMORIES: usize = 16;

pub(super) struct Budget {
    cap: usize,
    used: usize,
}

/// A growth past the budget: the guest traps with this as the reason.
#[derive(Debug)]
pub(super) struct MemoryCapReached {
    pub cap: usize,
    pub wanted: usize,
}

impl std::fmt::Display for MemoryCapReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "memory cap of {} bytes reached (all memories and tables together; {} bytes wanted)",
            self.cap, self.wanted
        )
    }
}

impl std::error::Error for MemoryCapReached {}

impl Budget {
    pub(super) fn new(cap: usize) -> Budget {
        Budget { cap, used: 0 }
    }

    /// Bytes charged so far: memories and tables never shrink, so this is
    /// the instance's peak.
    pub(super) fn used(&self) -> usize {
        self.used
    }

    /// Charges `current -> desired` bytes, or refuses with a trap. A growth
    /// past the object's own declared maximum is an ordinary failed grow
    /// (wasm says `-1`), which is not the budget's business.
    fn charge(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if maximum.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        let wanted = self.used.saturating_add(desired.saturating_sub(current));
        if wanted > self.cap {
            return Err(MemoryCapReached {
                cap: self.cap,
                wanted,
            }
            .into());
        }
        self.used = wanted;
        Ok(true)
    }
}

impl ResourceLimiter for Budget {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.charge(current, desired, maximum)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        // The host could not map memory it had allowed: fail closed.
        Err(error.context("growing a memory failed"))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let bytes = |n: usize| n.saturating_mul(TABLE_ELEMENT_BYTES);
        self.charge(bytes(current), bytes(desired), maximum.map(bytes))
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error.context("growing a table failed"))
    }

    fn instances(&self) -> usize {
        INSTANCES
    }

    fn tables(&self) -> usize {
        TABLES
    }

    fn memories(&self) -> usize {
        MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_and_tables_share_one_budget() {
        let mut b = Budget::new(64 << 20);
        for _ in 0..4 {
            assert!(b.memory_growing(0, 16 << 20, None).unwrap());
        }
        let err = b.memory_growing(0, 64 << 10, None).unwrap_err();
        assert!(err.to_string().contains("memory cap of 67108864 bytes"));
        let mut b = Budget::new(64 << 20);
        assert!(b.memory_growing(0, 32 << 20, None).unwrap());
        assert!(b.table_growing(0, 4 << 20, None).unwrap());
        assert!(b.table_growing(4 << 20, 5 << 20, None).is_err());
    }

    /// A core module: the wasm preamble, then `(id, contents)` sections.
    fn module(sections: &[(u8, &[u8])]) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        for (id, body) in sections {
            m.push(*id);
            m.push(u8::try_from(body.len()).expect("small section"));
            m.extend_from_slice(body);
        }
        m
    }

    fn limits_64_mb() -> crate::wasm::Limits {
        crate::wasm::Limits {
            memory_bytes: 64 << 20,
            ..Default::default()
        }
    }

    /// What a run of `bytes` ends with: instantiation, then its `run` export
    /// when it has one.
    fn run_core(bytes: &[u8]) -> String {
        let sandbox = crate::wasm::Sandbox::new(None).unwrap();
        let limits = limits_64_mb();
        let mut store = sandbox.store(&limits, None, [0; 32], None).unwrap();
        let module = wasmtime::Module::new(&sandbox.engine, bytes).unwrap();
        let ran = wasmtime::Instance::new(&mut store, &module, &[]).and_then(|i| {
            match i.get_typed_func::<(), ()>(&mut store, "run") {
                Ok(f) => f.call(&mut store, ()),
                Err(_) => Ok(()),
            }
        });
        match ran {
            Ok(()) => "ok".into(),
            Err(e) => super::super::convert::describe_error(&e, &limits),
        }
    }

    #[test]
    fn sixteen_small_memories_exceed_a_64_mb_budget_together() {
        // Regression: each memory was capped separately, so 16 memories of
        // 8 MiB (each under the cap) took 128 MiB under `memory_mb = 64`.
        let mut mems = vec![16u8];
        for _ in 0..16 {
            mems.extend([0x00, 0x80, 0x01]); // no maximum, minimum 128 pages
        }
        let reason = run_core(&module(&[(5, &mems)]));
        assert!(
            reason.contains("memory cap of 67108864 bytes reached"),
            "{reason}"
        );
        // Seven of them fit.
        mems[0] = 7;
        mems.truncate(1 + 7 * 3);
        assert_eq!(run_core(&module(&[(5, &mems)])), "ok");
    }

    #[test]
    fn one_big_table_grow_is_charged_against_the_memory_budget() {
        // Regression: tables were not capped at all; `table.grow` of 2^28
        // elements reached 2 GiB under `memory_mb = 64`.
        let body: &[u8] = &[
            0x0e, // body size
            0x00, // no locals
            0xd0, 0x70, // ref.null func
            0x41, 0x80, 0x80, 0x80, 0x80, 0x01, // i32.const 1 << 28
            0xfc, 0x0f, 0x00, // table.grow 0
            0x1a, // drop
            0x0b, // end
        ];
        let mut code = vec![1u8];
        code.extend_from_slice(body);
        let bytes = module(&[
            (1, &[1, 0x60, 0, 0]),                // type 0: [] -> []
            (3, &[1, 0]),                         // one function of type 0
            (4, &[1, 0x70, 0x00, 0]),             // a funcref table, 0 elements, no maximum
            (7, &[1, 3, b'r', b'u', b'n', 0, 0]), // export "run" = func 0
            (10, &code),
        ]);
        let reason = run_core(&bytes);
        assert!(
            reason.contains("memory cap of 67108864 bytes reached"),
            "{reason}"
        );
    }

    #[test]
    fn growth_past_a_declared_maximum_is_a_plain_failure() {
        let mut b = Budget::new(64 << 20);
        assert!(!b.memory_growing(0, 2 << 20, Some(1 << 20)).unwrap());
        assert!(!b.table_growing(0, 10, Some(5)).unwrap());
    }
}
