use super::*;

#[test]
fn the_files_a_test_command_runs_are_its_runner_unless_they_are_tests() {
    let base = tempfile::tempdir().unwrap();
    for f in [
        "run_tests.py",
        "pytest.ini",
        "scripts/t.sh",
        "scripts/Makefile",
        "tests/test_x.py",
        "tests/runner.py",
        "make",
        "Makefile",
    ] {
        let p = base.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "").unwrap();
    }
    let globs = ["tests/**".to_string()];
    let runners = |cmd: &str| runner_files(cmd, base.path(), &globs).unwrap().files;
    assert_eq!(runners("python3 run_tests.py"), ["run_tests.py"]);
    assert_eq!(runners("pytest -c 'pytest.ini' tests/"), ["pytest.ini"]);
    assert_eq!(runners("pytest tests/test_x.py"), Vec::<String>::new());
    assert_eq!(
        runners("FOO=1 ./scripts/t.sh&&make"),
        ["Makefile", "scripts/t.sh"]
    );
    assert_eq!(
        runners("sh ../run_tests.py /tmp/run_tests.py --x=run_tests.py"),
        Vec::<String>::new()
    );
    // Each of these left the runner open.
    assert_eq!(runners("python3 -m run_tests"), ["run_tests.py"]);
    assert_eq!(
        runners("python3.11 -u tests/runner.py"),
        ["tests/runner.py"]
    );
    assert_eq!(runners("cd scripts && sh t.sh"), ["scripts/t.sh"]);
    assert_eq!(runners("make -C scripts test"), ["scripts/Makefile"]);
    std::os::unix::fs::symlink("scripts/t.sh", base.path().join("run.sh")).unwrap();
    assert_eq!(runners("bash run.sh"), ["run.sh", "scripts/t.sh"]);
    // Wrappers, a shell's `-c`, interpreter options that take an argument.
    for cmd in [
        "timeout 600 python3 tests/runner.py",
        "env PYTHONDONTWRITEBYTECODE=1 python3 tests/runner.py",
        "bash -c 'python3 tests/runner.py'",
        "nice -n 5 python3 tests/runner.py",
        "python3 -W ignore tests/runner.py",
        "python3 -X dev tests/runner.py",
        "uv run --frozen python tests/runner.py",
        "timeout -s KILL 60 nice bash -c \"cd tests && python3 runner.py\"",
    ] {
        assert_eq!(runners(cmd), ["tests/runner.py"], "{cmd}");
    }
    assert_eq!(
        runners("python3 -c 'import x' tests/test_x.py"),
        Vec::<String>::new()
    );
}

#[test]
fn what_a_makefile_a_script_or_a_package_script_runs_is_the_runner_too() {
    // Each of these ran a runner under the test globs that no rule named.
    let base = tempfile::tempdir().unwrap();
    let file = |rel: &str, text: &str| {
        let p = base.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    file("tests/runner.py", "import os\nopen('README.md')\n");
    file("README.md", "");
    file("Makefile", "test:\n\t@python3 tests/runner.py\n");
    file(
        "ci/test.sh",
        "#!/bin/sh\nset -e\nexec python3 tests/runner.py\n",
    );
    file(
        "package.json",
        r#"{"scripts": {"test": "python3 tests/runner.py"}}"#,
    );
    let globs = ["tests/**".to_string()];
    let runners = |cmd: &str| runner_files(cmd, base.path(), &globs).unwrap().files;
    assert_eq!(runners("make test"), ["Makefile", "tests/runner.py"]);
    assert_eq!(runners("./ci/test.sh"), ["ci/test.sh", "tests/runner.py"]);
    assert_eq!(runners("npm test"), ["package.json", "tests/runner.py"]);
    for cmd in [
        "python3 -O tests/runner.py",
        "python3 -I tests/runner.py",
        "bash -ec 'python3 tests/runner.py'",
        "python3 -m cProfile tests/runner.py",
        "python3 -m coverage run tests/runner.py",
    ] {
        assert_eq!(runners(cmd), ["tests/runner.py"], "{cmd}");
    }
}

/// A tree of links, `(path, target)`, beside a file `f` and a dir `d`.
fn tree(links: &[(&str, &str)]) -> (tempfile::TempDir, Dir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join("f"), "").unwrap();
    for (path, target) in links {
        let at = dir.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, at).unwrap();
    }
    let root = open_tree(dir.path()).unwrap();
    (dir, root)
}

fn outside(to: &str) -> Resolution {
    Resolution::Outside(to.into())
}

#[test]
fn a_link_is_resolved_through_the_links_it_meets() {
    let (_dir, root) = tree(&[
        ("a", ".."),
        ("b", "a/a/a/../../../etc/passwd"),
        ("d/up", ".."),
        ("d/b", "up/d/up/../../../etc/passwd"),
        ("d/in", "up/d/up/f"),
        ("dot", "."),
        ("c", "dot/dot/dot/../../../x"),
        ("abs", "/etc"),
        ("via-abs", "abs/passwd"),
    ]);
    let r = |p: &str| resolve(&root, Path::new(p));
    assert_eq!(r("a"), outside(".."));
    assert_eq!(r("b"), outside("../a/a/../../../etc/passwd"));
    assert_eq!(r("d/b"), outside("../../../etc/passwd"));
    assert_eq!(r("d/in"), Resolution::Inside);
    assert_eq!(r("c"), outside("../../../x"));
    assert_eq!(r("abs"), outside("/etc"));
    assert_eq!(r("via-abs"), outside("/etc/passwd"));
}

#[test]
fn a_link_into_git_or_in_a_cycle_is_judged() {
    let (_dir, root) = tree(&[
        ("g", ".git/config"),
        ("d/g", "../d/../.GIT"),
        ("x", "y"),
        ("y", "x"),
        ("self", "self"),
        ("deep", "d/../self"),
    ]);
    let r = |p: &str| resolve(&root, Path::new(p));
    assert_eq!(r("g"), Resolution::IntoGit(".git/config".into()));
    assert_eq!(r("d/g"), Resolution::IntoGit(".GIT".into()));
    for p in ["x", "y", "self", "deep"] {
        assert_eq!(r(p), Resolution::TooDeep, "{p}");
    }
}

#[test]
fn a_dangling_link_is_judged_by_where_it_would_lead() {
    let (_dir, root) = tree(&[
        ("in", "missing/x"),
        ("out", "missing/../../x"),
        ("file-then-up", "f/../../x"),
        ("back", "missing/../d/../../x"),
    ]);
    let r = |p: &str| resolve(&root, Path::new(p));
    assert_eq!(r("in"), Resolution::Inside);
    assert_eq!(r("out"), outside("../x"));
    assert_eq!(r("file-then-up"), outside("../x"));
    assert_eq!(r("back"), outside("../x"));
}

#[test]
fn escaping_paths() {
    assert!(escapes(b"/etc/passwd"));
    assert!(escapes(b"a/../../b"));
    assert!(escapes(b".git/hooks/pre-commit"));
    assert!(escapes(b"sub/.GIT/config"));
    assert!(!escapes(b"src/..foo/x"));
}
