use super::*;

fn model(files: &[(&str, &str)]) -> Model {
    let names: Vec<String> = files.iter().map(|(n, _)| n.to_string()).collect();
    let read = |p: &str| {
        files
            .iter()
            .find(|(n, _)| *n == p)
            .map(|(_, t)| t.to_string())
    };
    detect(&names, &read)
}

#[test]
fn mocha_reads_the_test_scripts_directories() {
    let m = model(&[
        (
            "package.json",
            r#"{"scripts":{"test":"mocha --require test/support/env --reporter spec --bail --check-leaks test/ test/acceptance/"},"devDependencies":{"mocha":"10"}}"#,
        ),
        ("test/app.js", ""),
        ("test/acceptance/a.js", ""),
    ]);
    assert_eq!(
        m.globs(),
        ["test/*.{js,cjs,mjs}", "test/acceptance/*.{js,cjs,mjs}"]
    );
    let m = model(&[
        ("package.json", r#"{"devDependencies":{"mocha":"10"}}"#),
        (
            ".mocharc.yml",
            "spec:\n  - 'spec/**/*.spec.js'\nrecursive: true\n",
        ),
    ]);
    assert_eq!(m.globs(), ["spec/**/*.spec.js"]);
    let m = model(&[("package.json", r#"{"devDependencies":{"mocha":"10"}}"#)]);
    assert_eq!(m.globs(), ["test/*.{js,cjs,mjs}"]);
}

#[test]
fn pytest_reads_testpaths_and_python_files() {
    let m = model(&[
        (
            "pyproject.toml",
            "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\npython_files = [\"check_*.py\"]\n",
        ),
        ("src/a.py", ""),
    ]);
    assert_eq!(m.runners[0].name, "pytest");
    assert_eq!(m.globs(), ["tests/**/check_*.py"]);
    let m = model(&[
        (
            "setup.cfg",
            "[tool:pytest]\ntestpaths =\n    tests\n    docs\n",
        ),
        ("a.py", ""),
    ]);
    assert_eq!(m.globs()[..2], ["tests/**/test_*.py", "tests/**/*_test.py"]);
    let m = model(&[("a.py", ""), ("tests/test_a.py", "")]);
    assert_eq!(m.runners[0].name, "unittest");
}

#[test]
fn jest_vitest_cargo_and_go_have_their_defaults() {
    let m = model(&[
        ("package.json", r#"{"devDependencies":{"vitest":"3"}}"#),
        (
            "vitest.config.ts",
            "export default { test: { include: ['test/**/*.test.ts'] } }",
        ),
    ]);
    assert_eq!(m.globs(), ["test/**/*.test.ts"]);
    let m = model(&[("package.json", r#"{"jest":{"roots":["<rootDir>/src"]}}"#)]);
    assert!(
        m.globs()[0].starts_with("src/**/__tests__"),
        "{:?}",
        m.globs()
    );
    let m = model(&[("Cargo.toml", ""), ("go.mod", "")]);
    assert_eq!(m.runners.len(), 2);
    let m = model(&[("package.json", r#"{"scripts":{"test":"tap"}}"#)]);
    assert!(!m.missing.is_empty());
}

#[test]
fn code_configurations_are_said_not_read_and_coverage_includes_are_not_tests() {
    let m = model(&[
        ("package.json", r#"{"devDependencies":{"mocha":"10"}}"#),
        (
            ".mocharc.js",
            "module.exports = { spec: ['test/unit/**/*.js'] };",
        ),
    ]);
    assert!(
        m.missing.iter().any(|n| n.contains(".mocharc.js")),
        "{:?}",
        m.missing
    );
    let m = model(&[
        ("package.json", r#"{"devDependencies":{"vitest":"3"}}"#),
        (
            "vitest.config.ts",
            "export default { test: { coverage: { include: ['src/**'] }, include: ['test/**/*.spec.ts'] } }",
        ),
    ]);
    assert_eq!(m.globs(), ["test/**/*.spec.ts"]);
    let m = model(&[("package.json", r#"{"jest":{"testRegex":"/spec/"}}"#)]);
    assert!(m.missing.iter().any(|n| n.contains("testRegex")));
}
