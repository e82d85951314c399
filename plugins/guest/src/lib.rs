//! Bindings for the `agent-ledger:property` world and small helpers shared
//! by the built-in properties. A property crate implements [`Guest`] and
//! exports it with `agent_ledger_guest::export!(MyProperty with_types_in agent_ledger_guest);`.

wit_bindgen::generate!({
    world: "plugin",
    path: "../../wit",
    pub_export_macro: true,
    // The world imports the WASI interfaces the host links (filesystem,
    // stdio, clocks, random); their bindings are generated here, and only
    // the ones a property calls end up imported by its component.
    generate_all,
});

pub use agent_ledger::property::types::{ChangeKind, ChangedPath, Finding, Info, Outcome, Trial};
pub use exports::agent_ledger::property::property::Guest;

mod helpers;
pub use helpers::*;

#[cfg(test)]
mod tests {
    use super::{Globs, disabled_by_rename, glob_match, runner_collects};

    #[test]
    fn globs() {
        assert!(glob_match("tests/**", "tests/a/b.py"));
        assert!(glob_match("**/test_*.py", "test_x.py"));
        assert!(glob_match("**/test_*.py", "a/b/test_x.py"));
        assert!(!glob_match("**/test_*.py", "a/b/x_test.py"));
        assert!(glob_match("**/*_test.go", "pkg/a_test.go"));
        assert!(!glob_match("src/*.rs", "src/a/b.rs"));
        // `init` writes brace alternatives; they mean what the host reads.
        assert!(glob_match("**/*.test.{js,ts}", "src/a.test.ts"));
        assert!(glob_match("**/*.test.{js,ts}", "a.test.js"));
        assert!(!glob_match("**/*.test.{js,ts}", "src/a.test.py"));
        assert!(Globs::new(&["tests/[a"]).is_err());
    }

    #[test]
    fn runners_collect_test_files_by_name() {
        for p in [
            "tests/test_x.py",
            "pkg/x_test.py",
            "pkg/foo_test.go",
            "src/a.test.ts",
            "src/a.spec.jsx",
            "src/__tests__/a.js",
            "test/a.mjs",
            "src/FooTest.java",
            "src/TestFoo.kt",
            "tests/cli.rs",
        ] {
            assert!(runner_collects(p), "{p}");
        }
        for p in [
            "tests/test_x.py.disabled",
            "tests/test_x.txt",
            "tests/helpers.py",
            "pkg/foo_test.go.bak",
            "pkg/foo.go",
            "src/a.ts",
            "src/Foo.java",
            "tests/README",
        ] {
            assert!(!runner_collects(p), "{p}");
        }
    }

    #[test]
    fn renames_that_disable_a_test() {
        let globs = Globs::new(&["tests/**", "**/test_*.py", "**/*_test.go"]).unwrap();
        for (old, new) in [
            ("tests/test_x.py", "tests/test_x.py.disabled"),
            ("tests/test_x.py", "tests/test_x.txt"),
            ("tests/test_x.py", "tests/x_check.py"),
            ("pkg/foo_test.go", "pkg/foo_test.go.bak"),
            ("tests/foo_test.go", "tests/foo_test.go.bak"),
            ("tests/test_x.py", "src/x.py"),
        ] {
            assert!(
                disabled_by_rename(&globs, old, new).is_some(),
                "{old} -> {new}"
            );
        }
        for (old, new) in [
            ("tests/test_x.py", "tests/test_y.py"),
            ("tests/test_x.py", "tests/unit/test_x.py"),
            ("tests/helpers.py", "tests/util/helpers.py"),
            ("tests/fixtures/a.json", "tests/fixtures/b.json"),
            ("src/x.py", "src/y.txt"),
        ] {
            assert_eq!(disabled_by_rename(&globs, old, new), None, "{old} -> {new}");
        }
    }
}
