//! Unit tests of `swebench` (kept apart so the module itself stays one job).

use super::*;

#[test]
fn templates_fill_and_refuse_unknown_names() {
    let v = BTreeMap::from([("test_files", "'a b.py'".to_string())]);
    assert_eq!(
        fill("pytest {test_files} {{x}}", &v, false).unwrap(),
        "pytest 'a b.py' {x}"
    );
    assert!(
        fill("pytest {tests}", &v, true)
            .unwrap_err()
            .contains("unknown variable")
    );
    assert!(fill("pytest {test_files", &v, true).is_err());
    assert_eq!(quote("it's"), r"'it'\''s'");
}

#[test]
fn test_files_are_the_b_sides_without_data_files() {
    let patch = "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\ndiff --git a/tests/data.json b/tests/data.json\ndiff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n";
    assert_eq!(test_files(patch), ["tests/test_new.py", "tests/test_x.py"]);
}

#[test]
fn run_ids_are_valid_and_distinct() {
    let a = run_id("org/My Model v2", "django__django-11099");
    assert_eq!(a, "My-Model-v2__django__django-11099");
    crate::ledger::RunId::parse(&a).unwrap();
    let long = run_id(&"m".repeat(200), "x__y-1");
    assert!(long.len() <= 128);
    crate::ledger::RunId::parse(&long).unwrap();
    assert_ne!(run_id("a", "i"), run_id("b", "i"));
}
