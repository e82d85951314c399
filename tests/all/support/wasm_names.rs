//! Components made from other components: top-level imports renamed or
//! re-versioned (so one component built here stands for what another
//! toolchain or another WASI release emits), and a minimal component that
//! uses component-model async. Shared by the integration tests and the
//! benches.

use wasm_encoder::reencode::{Error, Reencode, ReencodeComponent};

struct Renamer<'f> {
    depth: usize,
    rename: &'f dyn Fn(&str) -> String,
}

impl Reencode for Renamer<'_> {
    type Error = std::convert::Infallible;
}

impl ReencodeComponent for Renamer<'_> {
    fn push_depth(&mut self) {
        self.depth += 1;
    }

    fn pop_depth(&mut self) {
        self.depth -= 1;
    }

    fn parse_component_import_section(
        &mut self,
        imports: &mut wasm_encoder::ComponentImportSection,
        section: wasmparser::ComponentImportSectionReader<'_>,
    ) -> Result<(), Error<Self::Error>> {
        for import in section {
            let import = import?;
            let ty = self.component_type_ref(import.ty)?;
            // Only the outer component's imports are the host's business;
            // a nested component's are wired up inside by name.
            if self.depth == 0 {
                imports.import((self.rename)(import.name.name), ty);
            } else {
                imports.import(import.name, ty);
            }
        }
        Ok(())
    }
}

/// `bytes` with every top-level import `name` renamed to `rename(name)`.
pub fn rename_imports(bytes: &[u8], rename: impl Fn(&str) -> String) -> Vec<u8> {
    let mut component = wasm_encoder::Component::new();
    Renamer {
        depth: 0,
        rename: &rename,
    }
    .parse_component(&mut component, wasmparser::Parser::new(0), bytes)
    .expect("re-encode the component");
    component.finish()
}

/// `bytes` with every `wasi:` import at `version` (`wasi:io/streams@0.2.6`
/// becomes `wasi:io/streams@VERSION`).
pub fn with_wasi_version(bytes: &[u8], version: &str) -> Vec<u8> {
    rename_imports(bytes, |name| match name.split_once('@') {
        Some((bare, _)) if bare.starts_with("wasi:") => format!("{bare}@{version}"),
        _ => name.to_string(),
    })
}

/// The top-level import names of a component.
pub fn import_names(bytes: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.expect("a well-formed component") {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth -= 1,
            wasmparser::Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    names.push(import.unwrap().name.name.to_string());
                }
            }
            _ => {}
        }
    }
    names
}

/// A component that imports `f: func()` and lowers it with the `async`
/// option: what a component-model async build (jco's QuickJS backend
/// without `--backend-qjs-disable-async`) contains.
pub fn async_component() -> Vec<u8> {
    use wasm_encoder::{
        CanonicalFunctionSection, CanonicalOption, Component, ComponentImportSection,
        ComponentTypeRef, ComponentTypeSection,
    };
    let mut component = Component::new();
    let mut types = ComponentTypeSection::new();
    types
        .function()
        .params(std::iter::empty::<(&str, wasm_encoder::ComponentValType)>())
        .result(None);
    component.section(&types);
    let mut imports = ComponentImportSection::new();
    imports.import("f", ComponentTypeRef::Func(0));
    component.section(&imports);
    let mut canon = CanonicalFunctionSection::new();
    canon.lower(0, [CanonicalOption::Async]);
    component.section(&canon);
    component.finish()
}

/// A component that imports `name` (an instance with nothing in it) and
/// embeds a core module that fails validation: compiling it fails, so a
/// refusal that names the import was made before compiling.
pub fn uncompilable_importing(name: &str) -> Vec<u8> {
    use wasm_encoder::{
        CodeSection, Component, ComponentImportSection, ComponentTypeRef, ComponentTypeSection,
        Function, FunctionSection, InstanceType, Instruction, Module, ModuleSection, TypeSection,
        ValType,
    };
    let mut module = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([], [ValType::I32]);
    module.section(&types);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    module.section(&funcs);
    // Declared to return an i32, returns nothing: invalid.
    let mut body = Function::new([]);
    body.instruction(&Instruction::End);
    let mut code = CodeSection::new();
    code.function(&body);
    module.section(&code);

    let mut component = Component::new();
    let mut ctypes = ComponentTypeSection::new();
    ctypes.instance(&InstanceType::new());
    component.section(&ctypes);
    let mut imports = ComponentImportSection::new();
    imports.import(name, ComponentTypeRef::Instance(0));
    component.section(&imports);
    component.section(&ModuleSection(&module));
    component.finish()
}
