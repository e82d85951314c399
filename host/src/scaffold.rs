//! New property projects (`agent-ledger plugin new`): a standalone project
//! per language, from the templates in `host/templates/LANG/` plus this
//! host's `wit/` (and, for Rust, the guest helpers), embedded at build time.
//! A project needs nothing from this repository: its toolchain is pinned in
//! the project and its one build command writes the component.

use crate::exit::{Error, Result};
use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/templates.rs"));

/// The languages a project can be written in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// Rust with wit-bindgen (`cargo build --release`).
    Rust,
    /// Python with componentize-py (`./build.sh`).
    Python,
    /// JavaScript with jco and componentize-js (`npm run build`).
    #[value(alias = "javascript")]
    Js,
}

impl Lang {
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }

    /// The one command, run in the project, that builds the component.
    pub fn build_command(self) -> &'static str {
        match self {
            Lang::Rust => "cargo build --release",
            Lang::Python => "./build.sh",
            Lang::Js => "npm run build",
        }
    }

    /// Where that command writes the component, relative to the project.
    pub fn component(self, name: &str) -> String {
        match self {
            Lang::Rust => format!("target/wasm32-wasip2/release/{name}.wasm"),
            Lang::Python | Lang::Js => format!("build/{name}.wasm"),
        }
    }
}

/// One file of a new project.
#[derive(Debug, Clone)]
pub struct File {
    /// `/`-separated, relative to the project.
    pub path: &'static str,
    pub bytes: Cow<'static, [u8]>,
    pub executable: bool,
}

/// Names Cargo, npm or a file system reserve, whatever the language: Rust
/// keywords and standard crates, npm's own, Windows device names.
const RESERVED: &str = "\
    abstract as async await become box break const continue crate do dyn else enum extern \
    false final fn for gen if impl in let loop macro match mod move mut override priv pub ref \
    return self static struct super trait true try type typeof unsafe unsized use virtual where \
    while yield alloc core std test proc_macro build \
    node_modules favicon_ico \
    con prn aux nul com1 com2 com3 com4 com5 com6 com7 com8 com9 \
    lpt1 lpt2 lpt3 lpt4 lpt5 lpt6 lpt7 lpt8 lpt9";

/// A property name: snake_case ASCII (`[a-z][a-z0-9_]*`, at most 64
/// bytes, no `__`, no trailing `_`), usable as it is as a crate name, an
/// npm package name, a file name and the property's `name`.
pub fn validate_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::Usage(format!(
            "`{}` is not a property name: {why}; use snake_case such as `no_test_file_deleted`",
            crate::output::inert(name)
        )))
    };
    if name.is_empty() || name.len() > 64 {
        return bad("it must be 1 to 64 characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return bad("it must start with a lowercase ASCII letter");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return bad("it may hold only lowercase ASCII letters, digits and `_`");
    }
    if name.ends_with('_') || name.contains("__") {
        return bad("it may not end with `_` or hold `__`");
    }
    if RESERVED.split_whitespace().any(|r| r == name) {
        return bad("Cargo, npm or a file system reserves it");
    }
    Ok(())
}

/// The files of a new `lang` project named `name` (validated first).
pub fn files(lang: Lang, name: &str) -> Result<Vec<File>> {
    validate_name(name)?;
    Ok(TEMPLATE_FILES
        .iter()
        .filter(|(l, ..)| *l == lang.as_str())
        .map(|&(_, path, bytes, executable, render)| File {
            path,
            bytes: match (render, path) {
                (true, "Cargo.lock") => Cow::Owned(sort_lock(&fill(bytes, name))),
                (true, _) => Cow::Owned(fill(bytes, name)),
                (false, _) => Cow::Borrowed(bytes),
            },
            executable,
        })
        .collect())
}

/// A template with its placeholders filled: `{{name}}` (the property name)
/// and `{{agent_ledger_version}}` (this host's version, which is also the
/// version of the WIT package).
fn fill(template: &[u8], name: &str) -> Vec<u8> {
    let text = std::str::from_utf8(template).expect("templates are UTF-8");
    text.replace("{{name}}", name)
        .replace("{{agent_ledger_version}}", env!("CARGO_PKG_VERSION"))
        .into_bytes()
}

/// A `Cargo.lock` with its packages in Cargo's order (by name, then
/// version), so the project's own package sits where Cargo puts it whatever
/// its name, and `cargo build --locked` accepts the file as written.
fn sort_lock(lock: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(lock).expect("templates are UTF-8");
    let mut parts = text.split("\n[[package]]\n");
    let head = parts.next().unwrap_or_default();
    let mut packages: Vec<&str> = parts.collect();
    let key = |p: &str| {
        let field = |f: &str| {
            p.lines()
                .find_map(|l| l.strip_prefix(f))
                .unwrap_or_default()
                .to_string()
        };
        (field("name = "), field("version = "))
    };
    packages.sort_by_key(|p| key(p));
    let mut out = head.to_string();
    for p in packages {
        out.push_str("\n[[package]]\n");
        out.push_str(p.trim_end_matches('\n'));
        out.push('\n');
    }
    out.into_bytes()
}

/// Writes `files` into `dir`, which must not exist or be an empty
/// directory: nothing there is ever overwritten. The project is written
/// beside `dir` first and renamed into place, so a failure leaves no half
/// project (and a file that appears in `dir` meanwhile makes the rename
/// fail rather than be replaced).
pub fn write(dir: &Path, files: &[File]) -> Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(not_empty(dir));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Err(not_empty(dir)),
        Err(e) => return Err(Error::read(dir, e)),
    }
    let name = dir
        .file_name()
        .ok_or_else(|| Error::Usage(format!("`{}` names no directory", dir.display())))?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| Error::write(&parent, e))?;
    let mut staging_name = std::ffi::OsString::from(".");
    staging_name.push(name);
    staging_name.push(format!(".new-{}", std::process::id()));
    let staging = parent.join(staging_name);
    std::fs::create_dir(&staging).map_err(|e| Error::write(&staging, e))?;
    let result = write_all(&staging, files).and_then(|()| {
        std::fs::rename(&staging, dir).map_err(|e| match e.kind() {
            io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::AlreadyExists => not_empty(dir),
            _ => Error::write(dir, e),
        })
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn write_all(root: &Path, files: &[File]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    for file in files {
        let path = root.join(file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::write(parent, e))?;
        }
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::write(&path, e))?;
        out.write_all(&file.bytes)
            .map_err(|e| Error::write(&path, e))?;
        if file.executable {
            let meta = out.metadata().map_err(|e| Error::write(&path, e))?;
            let mode = meta.permissions().mode();
            // Executable by whoever may read it (the umask stays in force).
            let mode = mode | ((mode & 0o444) >> 2);
            out.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::write(&path, e))?;
        }
    }
    Ok(())
}

fn not_empty(dir: &Path) -> Error {
    Error::Write {
        path: dir.to_path_buf(),
        source: io::Error::new(
            io::ErrorKind::AlreadyExists,
            "it already exists and is not an empty directory; nothing was written (choose another --dir)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["no_test_file_deleted", "a", "p2", "oracle_v2"] {
            validate_name(ok).unwrap();
        }
        for bad in [
            "",
            "No",
            "2fast",
            "_x",
            "x_",
            "a__b",
            "has-dash",
            "dots.x",
            "../x",
            "a/b",
            "fn",
            "std",
            "test",
            "nul",
            "é",
            &"x".repeat(65),
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_language_has_the_wit_and_no_placeholder_is_left() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            let files = files(lang, "my_prop").unwrap();
            for wit in [
                "wit/property.wit",
                "wit/deps/wasi-filesystem-0.2.12/package.wit",
            ] {
                assert!(files.iter().any(|f| f.path == wit), "{lang:?} lacks {wit}");
            }
            for f in &files {
                let text = String::from_utf8_lossy(&f.bytes);
                assert!(
                    !text.contains("{{"),
                    "{lang:?} {} keeps a placeholder",
                    f.path
                );
                assert!(!f.path.ends_with(".tmpl"), "{}", f.path);
            }
        }
    }

    #[test]
    fn the_rust_lock_keeps_cargo_order_whatever_the_name() {
        let lock = |name| {
            let files = files(Lang::Rust, name).unwrap();
            let lock = files.iter().find(|f| f.path == "Cargo.lock").unwrap();
            String::from_utf8(lock.bytes.to_vec()).unwrap()
        };
        let names = |lock: &str| -> Vec<String> {
            lock.lines()
                .filter_map(|l| l.strip_prefix("name = "))
                .map(str::to_string)
                .collect()
        };
        for name in ["aaa", "no_test_file_deleted", "zzz"] {
            let lock = lock(name);
            let got = names(&lock);
            let mut sorted = got.clone();
            sorted.sort();
            assert_eq!(got, sorted, "{name}");
            assert!(got.contains(&format!("\"{name}\"")));
            assert!(lock.ends_with('\n') && !lock.ends_with("\n\n"));
        }
        // The name the template was locked with round-trips to the same bytes.
        assert_eq!(
            lock("no_test_file_deleted"),
            String::from_utf8(fill(
                TEMPLATE_FILES
                    .iter()
                    .find(|f| f.0 == "rust" && f.1 == "Cargo.lock")
                    .unwrap()
                    .2,
                "no_test_file_deleted"
            ))
            .unwrap()
        );
    }

    #[test]
    fn refuses_a_non_empty_directory_and_overwrites_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("p");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("app.py"), "mine").unwrap();
        let files = files(Lang::Python, "p").unwrap();
        let err = write(&dir, &files).unwrap_err();
        assert_eq!(err.exit_code().code(), 73, "{err}");
        assert_eq!(std::fs::read_to_string(dir.join("app.py")).unwrap(), "mine");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A file in the way is refused too; no staging directory is left.
        let file = tmp.path().join("f");
        std::fs::write(&file, "mine").unwrap();
        assert!(write(&file, &files).is_err());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
        // An empty directory is filled.
        let empty = tmp.path().join("e");
        std::fs::create_dir(&empty).unwrap();
        write(&empty, &files).unwrap();
        assert!(empty.join("app.py").is_file());
    }
}
