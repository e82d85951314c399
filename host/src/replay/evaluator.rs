//! The host-side property `evaluator_files` (DESIGN section 5): what the
//! agent's patch did to the evaluator's test files. The agent's edits the
//! evaluator's patch replaces are listed (they were not tested); a path
//! that a runner would load instead of an evaluator's file, a change to a
//! package that holds one, or compiled bytecode anywhere is a miss.

use super::property;
use crate::record::{Finding, Outcome, PropertyResult};
use crate::wasm::{Change, ChangeKind};
use std::collections::BTreeMap;

/// The host-side property that lists the paths the agent changed which
/// the evaluator's test patch replaced before the tests ran: it holds (the
/// harness does the same), and the findings keep the overwrite visible.
pub const EVALUATOR_FILES: &str = "evaluator_files";

pub(super) fn evaluator_files(
    evaluation: &mut crate::record::Evaluation,
    changes: &[Change],
    test_globs: &[String],
) -> crate::exit::Result<PropertyResult> {
    let mut overwritten: Vec<String> = changes
        .iter()
        .flat_map(|c| std::iter::once(&c.path).chain(c.old_path.as_ref()))
        .filter(|p| evaluation.paths.binary_search(p).is_ok())
        .cloned()
        .collect();
    overwritten.sort();
    overwritten.dedup();
    // A path the agent adds that a runner loads instead of an evaluator's
    // file: `tests/test_x/` (a package, imported before `tests/test_x.py`),
    // `tests/test_x.so`, `tests/__pycache__/test_x.*.pyc`. The evaluator's
    // file would then never run, whatever it says.
    let mut shadows: Vec<(String, String)> = Vec::new();
    let mut redirects: Vec<(String, String)> = Vec::new();
    let mut bytecode: Vec<String> = Vec::new();
    // Every other path under the test globs the agent changed is reset to
    // the base before the tests run (`evaluation::install`).
    let changed: Vec<String> = changes
        .iter()
        .flat_map(|c| std::iter::once(c.path.clone()).chain(c.old_path.clone()))
        .collect();
    let reset: Vec<String> = crate::evaluation::under_test_globs(test_globs, &changed)?
        .into_iter()
        .filter(|p| evaluation.paths.binary_search(p).is_err())
        .collect();
    for c in changes.iter().filter(|c| c.kind != ChangeKind::Deleted) {
        if let Some(e) = evaluation.paths.iter().find(|e| shadows_path(&c.path, e)) {
            shadows.push((c.path.clone(), e.clone()));
        } else if evaluation.paths.binary_search(&c.path).is_ok() {
            // The evaluator's own file: replaced before the tests run.
        } else if let Some(e) = evaluation
            .paths
            .iter()
            .find(|e| redirects_package(&c.path, e))
        {
            redirects.push((c.path.clone(), e.clone()));
        } else if is_bytecode(&c.path) {
            bytecode.push(c.path.clone());
        }
    }
    let mut result = property::host_result(EVALUATOR_FILES);
    result.inputs = BTreeMap::from([(
        "eval_patch".into(),
        evaluation
            .patch
            .as_ref()
            .map(|p| p.sha256.clone())
            .unwrap_or_default(),
    )]);
    result.findings = overwritten
        .iter()
        .map(|p| Finding {
            path: p.clone(),
            line: None,
            message: "the agent's patch changes this file, which the evaluator's test patch replaces before the tests run: the agent's version was not tested".into(),
            frozen: true,
        })
        .collect();
    result.findings.extend(reset.iter().map(|p| Finding {
        path: p.clone(),
        line: None,
        message: "the agent's patch changes this path under the test globs, which is reset to the base revision (with the evaluator's test patch) before the tests run: the evaluator's tests ran against the agent's source only".into(),
        frozen: true,
    }));
    let miss = |path: String, message: String| Finding {
        path,
        line: None,
        message,
        frozen: false,
    };
    result.findings.extend(shadows.into_iter().map(|(path, evaluated)| {
        miss(path, format!(
            "the agent's patch adds this path, which a test runner loads instead of the evaluator's `{evaluated}`: the evaluator's tests would not run"
        ))
    }));
    result.findings.extend(redirects.into_iter().map(|(path, evaluated)| {
        miss(path, format!(
            "the agent's patch changes a package that holds the evaluator's `{evaluated}` (its `__init__`), which can load its modules from elsewhere: the evaluator's tests might not run"
        ))
    }));
    result.findings.extend(bytecode.into_iter().map(|path| {
        miss(path, "the agent's patch adds compiled bytecode, which an interpreter can load without (or instead of) its source: what runs is not what the patch shows".into())
    }));
    if result.findings.iter().any(|f| !f.frozen) {
        result.outcome = Outcome::Miss;
        result.findings.sort();
    }
    overwritten.extend(reset);
    overwritten.sort();
    overwritten.dedup();
    evaluation.agent_overwritten = overwritten;
    Ok(result)
}

/// Whether `path` would be loaded instead of the evaluator's file `eval`
/// (`dir/name.ext`): `dir/name/…`, `dir/name.other`, or a compiled copy in
/// `dir/__pycache__/name.…`; or instead of a directory that holds it (a
/// namespace package has no `__init__`): `parent/tests.py`, `tests.so` or
/// `__pycache__/tests.…` beside `tests/`.
fn shadows_path(path: &str, eval: &str) -> bool {
    let mut dir = eval.rsplit_once('/').map(|(d, _)| d);
    while let Some(d) = dir {
        let (parent, name) = d.rsplit_once('/').map_or(("", d), |(p, n)| (p, n));
        let prefix = if parent.is_empty() {
            String::new()
        } else {
            format!("{parent}/")
        };
        if let Some(rest) = path.strip_prefix(&prefix)
            && let Some(file) = rest.strip_prefix("__pycache__/").or(Some(rest))
            && !file.contains('/')
            && file.strip_prefix(name).is_some_and(|r| r.starts_with('.'))
        {
            return true;
        }
        dir = (!parent.is_empty()).then_some(parent);
    }
    shadows_file(path, eval)
}

/// [`shadows_path`] for the file itself.
fn shadows_file(path: &str, eval: &str) -> bool {
    let (dir, file) = eval.rsplit_once('/').map_or(("", eval), |(d, f)| (d, f));
    let Some((name, _)) = file.split_once('.') else {
        return false;
    };
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let Some(rest) = path.strip_prefix(&prefix) else {
        return false;
    };
    path != eval
        && (rest.starts_with(&format!("{name}/"))
            || rest.starts_with(&format!("{name}."))
            || rest.starts_with(&format!("__pycache__/{name}.")))
}

/// Whether `path` is the `__init__` (source or compiled) of a package that
/// holds the evaluator's file `eval`, at any depth: a package's `__init__`
/// can load its modules, and its subpackages', from anywhere (`__path__`),
/// however the code that does it is spelled, so any change to one is a
/// miss. A fix that edits an outer package's exports is rejected with it:
/// the price of never testing a module the evaluator did not write.
fn redirects_package(path: &str, eval: &str) -> bool {
    let (pdir, pfile) = path.rsplit_once('/').map_or(("", path), |(d, f)| (d, f));
    if !pfile.starts_with("__init__.") {
        return false;
    }
    let pkg = match pdir.strip_suffix("__pycache__") {
        Some(p) => p.trim_end_matches('/'),
        None => pdir,
    };
    let eval_dir = eval.rsplit_once('/').map_or("", |(d, _)| d);
    pkg.is_empty() || eval_dir == pkg || eval_dir.starts_with(&format!("{pkg}/"))
}

/// Compiled Python a patch adds: `.pyc`/`.pyo` files, anything in a
/// `__pycache__`.
fn is_bytecode(path: &str) -> bool {
    path.ends_with(".pyc")
        || path.ends_with(".pyo")
        || path.starts_with("__pycache__/")
        || path.contains("/__pycache__/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_runner_would_load_instead_of_the_evaluators_file() {
        let eval = "tests/unit/test_calc.py";
        for path in [
            "tests/unit/test_calc/__init__.py",
            "tests/unit/test_calc.so",
            "tests/unit/__pycache__/test_calc.cpython-311.pyc",
            // Beside a directory that holds it (a namespace package).
            "tests/unit.py",
            "tests.py",
            "tests/__pycache__/unit.cpython-311.pyc",
            "tests.cpython-311-x86_64-linux-gnu.so",
        ] {
            assert!(shadows_path(path, eval), "{path}");
        }
        for path in [
            eval,
            "tests/unit/test_other.py",
            "tests_more.py",
            "src/tests.py",
            "other/unit.py",
        ] {
            assert!(!shadows_path(path, eval), "{path}");
        }
    }

    #[test]
    fn any_package_that_holds_the_evaluators_file_counts() {
        let eval = "tests/unit/test_calc.py";
        for path in [
            "tests/unit/__init__.py",
            "tests/__init__.py",
            "__init__.py",
            "tests/__pycache__/__init__.cpython-311.pyc",
        ] {
            assert!(redirects_package(path, eval), "{path}");
        }
        for path in [
            "src/__init__.py",
            "tests/unit/helpers.py",
            "tests/unit/other/__init__.py",
        ] {
            assert!(!redirects_package(path, eval), "{path}");
        }
        assert!(is_bytecode("src/x.pyc") && is_bytecode("__pycache__/x.txt"));
        assert!(!is_bytecode("src/x.py"));
    }
}
