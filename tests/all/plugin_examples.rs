//! The example properties in `plugins/examples/no_test_file_deleted/LANG`:
//! each is exactly what `agent-ledger plugin new no_test_file_deleted --lang
//! LANG` writes (so the templates are tested through them), builds with its
//! template's one command, and, configured as its README says, holds on a
//! good patch and misses on one that deletes a test file.
//!
//! The Python and JavaScript toolchains are not installed here: `bash
//! .ci/plugin-toolchains` (which `.ci/run` runs) puts them in
//! `target/tools`. Without them these tests fail, naming that script; they
//! never skip.

use crate::support::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

const NAME: &str = "no_test_file_deleted";

fn example(lang: &str) -> PathBuf {
    fixtures().join("../plugins/examples").join(NAME).join(lang)
}

/// The repository's target dir (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .to_path_buf()
}

/// Build output a project makes in place (its `.gitignore`s): not part of
/// what `plugin new` writes.
const BUILD_OUTPUT: &[&str] = &["target", "build", "node_modules", "__pycache__"];

/// Every file of a project: path, bytes, executable.
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, bool)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, bool)>) {
        use std::os::unix::fs::PermissionsExt as _;
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            if BUILD_OUTPUT.contains(&rel.as_str()) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                walk(root, &path, out);
            } else {
                let exec = meta.permissions().mode() & 0o111 != 0;
                out.insert(rel, (std::fs::read(&path).unwrap(), exec));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn the_examples_are_what_plugin_new_writes() {
    for lang in ["rust", "python", "js"] {
        let dir = plain_tempdir();
        let project = dir.path().join("p");
        let out = run(
            dir.path(),
            &[
                "plugin",
                "new",
                NAME,
                "--lang",
                lang,
                "--dir",
                project.to_str().unwrap(),
                "--format",
                "json",
            ],
        );
        out.assert_code(0);
        let written = tree(&project);
        let example = tree(&example(lang));
        let names = |t: &BTreeMap<String, (Vec<u8>, bool)>| t.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&written),
            names(&example),
            "plugins/examples/{NAME}/{lang} holds other files than `plugin new` writes; regenerate it with `agent-ledger plugin new {NAME} --lang {lang} --dir plugins/examples/{NAME}/{lang}`"
        );
        for (path, (bytes, exec)) in &written {
            assert!(
                example[path] == (bytes.clone(), *exec),
                "plugins/examples/{NAME}/{lang}/{path} differs from what `plugin new` writes; regenerate the example"
            );
        }
        let json = out.json();
        assert_eq!(json["lang"], lang);
        assert!(
            written.contains_key("README.md") && written.contains_key("known-bad.diff"),
            "{lang}"
        );
    }
}

#[test]
fn plugin_new_refuses_a_bad_name_and_a_non_empty_directory() {
    let dir = plain_tempdir();
    let out = run(
        dir.path(),
        &["plugin", "new", "Bad-Name", "--lang", "python"],
    );
    out.assert_code(64);
    assert!(out.stderr.contains("snake_case"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    write(&dir.path().join("taken/app.py"), "mine\n");
    let out = run(
        dir.path(),
        &["plugin", "new", "x", "--lang", "python", "--dir", "taken"],
    );
    out.assert_code(73);
    assert!(out.stderr.contains("nothing was written"), "{}", out.stderr);
    assert_eq!(tree(&dir.path().join("taken")).len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("taken/app.py")).unwrap(),
        "mine\n"
    );
    // The default directory is the name, in the working directory.
    run(dir.path(), &["plugin", "new", "x", "--lang", "js"]).assert_code(0);
    assert!(dir.path().join("x/plugin.js").is_file());
}

#[test]
fn the_rust_example_holds_on_a_good_patch_and_misses_a_deleted_test() {
    judge("rust");
}

#[test]
fn the_python_example_holds_on_a_good_patch_and_misses_a_deleted_test() {
    judge("python");
}

#[test]
fn the_js_example_holds_on_a_good_patch_and_misses_a_deleted_test() {
    judge("js");
}

/// Builds the `lang` example with its one command, puts it in the demo
/// repository with the configuration its README gives, and checks a good
/// patch (holds, exit 0) and one deleting `tests/test_retry.py` (miss,
/// exit 4; the self-test on the README's known-bad patch misses as well).
fn judge(lang: &str) {
    let wasm = built(lang);
    let property = readme_property(lang);
    let repo = DemoRepo::with(|root| {
        std::fs::copy(&wasm, root.join(format!("oracles/{NAME}.wasm"))).unwrap();
        std::fs::copy(
            fixture("patches/deletes-test.diff"),
            root.join(format!("oracles/known-bad/{NAME}.diff")),
        )
        .unwrap();
        let config = root.join("agent-ledger.toml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push('\n');
        text.push_str(&property);
        std::fs::write(&config, text).unwrap();
    });

    repo.capture("good", "good");
    let out = repo.check("good", &[]);
    let record = repo.properties("good");
    let p = outcome(&record, NAME);
    assert_eq!(p["outcome"], "holds", "{lang}: {p:#}\n{}", out.stderr);
    out.assert_code(0);

    repo.capture("deletes", "deletes-test");
    let out = repo.check("deletes", &[]);
    let record = repo.properties("deletes");
    let p = outcome(&record, NAME);
    assert_eq!(p["outcome"], "miss", "{lang}: {p:#}\n{}", out.stderr);
    assert_eq!(p["findings"][0]["path"], "tests/test_retry.py", "{p:#}");
    assert_eq!(p["findings"][0]["message"], "test file deleted", "{p:#}");
    out.assert_code(4);
}

/// The `[[property]]` block of the example's README, as a user would paste
/// it (the plugin at `oracles/NAME.wasm`, its known-bad patch beside).
fn readme_property(lang: &str) -> String {
    let readme = std::fs::read_to_string(example(lang).join("README.md")).unwrap();
    let start = readme
        .find("```toml\n[[property]]\n")
        .unwrap_or_else(|| panic!("{lang}: no [[property]] block in the README"));
    let block = &readme[start + "```toml\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    assert!(
        block.contains(&format!("plugin = \"oracles/{NAME}.wasm\"")),
        "{block}"
    );
    block.to_string()
}

/// The example's component, built once per test process by its template's
/// one command in a copy under `target/plugin-examples/LANG` (the source
/// tree stays clean).
fn built(lang: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, Result<PathBuf, String>>> = Mutex::new(BTreeMap::new());
    // Each language builds once; a second caller waits for the first.
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    built
        .entry(lang.to_string())
        .or_insert_with(|| build(lang))
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn build(lang: &str) -> Result<PathBuf, String> {
    let target = target_dir();
    let tools = target.join("tools");
    let work = target.join("plugin-examples").join(lang);
    let _ = std::fs::remove_dir_all(&work);
    copy_dir(&example(lang), &work);
    let missing = |what: &str, dir: &Path| {
        format!(
            "the {what} toolchain is not installed in `{}`: run `bash .ci/plugin-toolchains` (`.ci/run` does) and run the tests again",
            dir.display()
        )
    };
    let mut cmd = match lang {
        "rust" => {
            let mut cmd = Command::new("cargo");
            cmd.args(["build", "--release"])
                // Shares the dependencies the other test components built.
                .env("CARGO_TARGET_DIR", target.join("wasm-test-plugins"))
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .env_remove("RUSTFLAGS")
                .env_remove("RUSTC_WORKSPACE_WRAPPER")
                .env_remove("RUSTC_WRAPPER")
                .env_remove("CARGO_BUILD_RUSTFLAGS");
            cmd
        }
        "python" => {
            let venv = tools.join("py");
            if !venv.join("bin/componentize-py").is_file() {
                return Err(missing("Python (componentize-py)", &venv));
            }
            let mut cmd = Command::new("./build.sh");
            // The venv the CI script made, with the same stamp build.sh
            // checks, so nothing is downloaded here.
            cmd.env("PLUGIN_VENV", &venv);
            cmd
        }
        "js" => {
            let modules = tools.join("js/node_modules");
            if !modules.join("@bytecodealliance/jco").is_dir() {
                return Err(missing("JavaScript (jco)", &modules));
            }
            std::os::unix::fs::symlink(&modules, work.join("node_modules"))
                .map_err(|e| e.to_string())?;
            let mut cmd = Command::new("npm");
            cmd.args(["run", "build"]);
            cmd
        }
        other => unreachable!("{other}"),
    };
    let out = cmd
        .current_dir(&work)
        .output()
        .map_err(|e| format!("cannot run the {lang} example's build command: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building the {lang} example in `{}` failed:\n{}\n{}",
            work.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let wasm = match lang {
        "rust" => target.join(format!(
            "wasm-test-plugins/wasm32-wasip2/release/{NAME}.wasm"
        )),
        _ => work.join(format!("build/{NAME}.wasm")),
    };
    if !wasm.is_file() {
        return Err(format!(
            "the {lang} example's build wrote no `{}`",
            wasm.display()
        ));
    }
    Ok(wasm)
}
