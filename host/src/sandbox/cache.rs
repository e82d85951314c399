//! The on-disk cache of compiled components, keyed by the component's
//! sha256 and the engine's compatibility hash. An entry is used only when its
//! bytes match the digest written beside it; anything else is recompiled.

use super::{Refusal, Sandbox, root_cause};
use std::path::Path;
use wasmtime::component::Component;

impl Sandbox {
    pub(super) fn compile_cached(&self, bytes: &[u8], sha256: &str) -> Result<Component, Refusal> {
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
