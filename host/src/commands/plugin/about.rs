//! What `plugin inspect` prints about a component (and `plugin test`
//! first): what it says about itself, its imports, how loading went, and
//! the hints that name a toolchain's fix.

use crate::output::inert;
use crate::wasm::{Disposition, Import, Inspection};
use serde::Serialize;
use std::path::Path;

/// What `plugin inspect` prints, and the head of what `plugin test` prints.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PluginAbout {
    pub(super) plugin: String,
    sha256: String,
    /// What it says about itself; absent when it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) summary: Option<String>,
    /// Why it was refused (it never runs then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) refused: Option<String>,
    pub(super) imports: Vec<Import>,
    pub(super) stubbed_imports: Vec<String>,
    /// Whether this load compiled the component (else it came from the
    /// compile cache), and how long loading and `describe` took.
    pub(super) compiled: bool,
    pub(super) load_ms: u64,
    /// The end of what `describe` wrote to stderr, when it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) describe_stderr: Option<String>,
    pub(super) hints: Vec<String>,
}

impl PluginAbout {
    pub(super) fn new(plugin: &Path, inspection: Inspection) -> PluginAbout {
        let mut imports = inspection.imports;
        imports.sort_by(|a, b| a.name.cmp(&b.name));
        let stubbed_imports = imports
            .iter()
            .filter(|i| i.disposition == Disposition::Stubbed)
            .map(|i| i.name.clone())
            .collect();
        let (info, refused) = match &inspection.loaded {
            Ok(p) => (
                Some((p.name.clone(), p.version.clone(), p.summary.clone())),
                None,
            ),
            Err(r) => (None, Some(r.0.clone())),
        };
        let describe_stderr = refused
            .as_ref()
            .filter(|_| !inspection.describe_stderr.is_empty())
            .map(|_| inspection.describe_stderr.clone());
        let hints = hints(
            &imports,
            refused.as_deref(),
            describe_stderr.as_deref().unwrap_or(""),
        );
        PluginAbout {
            plugin: plugin.display().to_string(),
            sha256: inspection.sha256,
            name: info.as_ref().map(|i| i.0.clone()),
            version: info.as_ref().map(|i| i.1.clone()),
            summary: info.map(|i| i.2),
            refused,
            imports,
            stubbed_imports,
            compiled: inspection.compiled,
            load_ms: inspection.load_wall.as_millis() as u64,
            describe_stderr,
            hints,
        }
    }

    /// The human report; hints last, unless a run's report follows.
    pub(super) fn human(&self, hints: bool) -> String {
        let mut text = format!("plugin: {}\n", inert(&self.plugin));
        text.push_str(&format!("  sha256: {}\n", self.sha256));
        if let (Some(name), Some(version)) = (&self.name, &self.version) {
            text.push_str(&format!("  name: {} {}\n", inert(name), inert(version)));
        }
        if let Some(summary) = &self.summary {
            text.push_str(&format!("  summary: {}\n", inert(summary)));
        }
        text.push_str(&format!(
            "  loaded in {} ms ({})\n",
            self.load_ms,
            if self.compiled {
                "compiled now"
            } else {
                "already compiled"
            }
        ));
        if let Some(why) = &self.refused {
            text.push_str(&format!("refused: {}\n", inert(why)));
        }
        text.push_str(&format!("imports ({}):\n", self.imports.len()));
        for i in &self.imports {
            let (word, note) = match i.disposition {
                Disposition::Linked => ("linked", String::new()),
                Disposition::Stubbed => (
                    "stubbed",
                    "  (calls trap: network access is refused)".to_string(),
                ),
                Disposition::Refused => (
                    "refused",
                    format!("  ({})", inert(i.reason.as_deref().unwrap_or(""))),
                ),
            };
            text.push_str(&format!("  {word:8} {}{note}\n", inert(&i.name)));
        }
        if let Some(stderr) = &self.describe_stderr {
            text.push_str("stderr of `describe` (its end):\n");
            text.push_str(&indented(stderr));
        }
        if hints {
            text.push_str(&self.hints());
        }
        text
    }

    pub(super) fn hints(&self) -> String {
        self.hints
            .iter()
            .map(|hint| format!("hint: {}\n", inert(hint)))
            .collect()
    }
}

/// Each line of untrusted text, made inert and indented.
pub(super) fn indented(text: &str) -> String {
    text.lines()
        .map(|l| format!("  | {}\n", inert(l)))
        .collect()
}

/// What fixes a failure, when a toolchain is known to cause it. Refusals
/// of single imports carry their own fix in their reason.
pub(super) fn hints(imports: &[Import], error: Option<&str>, stderr: &str) -> Vec<String> {
    let mut hints = Vec::new();
    let stubbed = |prefix: &str| {
        imports
            .iter()
            .any(|i| i.disposition == Disposition::Stubbed && i.name.starts_with(prefix))
    };
    let error = error.unwrap_or("");
    if stubbed("wasi:http/") {
        hints.push(
            "its `wasi:http` imports are stubbed (a call traps with \"network access is refused\"); \
             jco: build with `--disable http fetch-event` to drop them"
                .into(),
        );
    }
    if stubbed("wasi:sockets/") {
        hints.push(
            "its `wasi:sockets` imports are stubbed (a call traps with \"network access is refused\"): \
             CPython's libc and Rust's std import them unused; no `--stub-wasi` is needed"
                .into(),
        );
    }
    if error.contains("unreachable") && stderr.contains("Traceback (most recent call last)") {
        hints.push(
            "an uncaught Python exception: its traceback is the stderr shown (raise `Err(...)` \
             from `componentize_py_types` to report an error instead)"
                .into(),
        );
    } else if error.contains("unreachable")
        && !imports
            .iter()
            .any(|i| i.name.starts_with("wasi:cli/") || i.name.starts_with("wasi:filesystem/"))
    {
        hints.push(
            "it traps and imports no WASI at all: a componentize-py build with `--stub-wasi` \
             traps on every WASI call (file reads, print); build without it"
                .into(),
        );
    }
    hints
}
