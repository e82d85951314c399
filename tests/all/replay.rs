//! `check` and `replay` on the demo repository: every verdict, strict
//! application, bounds, self-tests, determinism.

use crate::support::*;

#[test]
fn a_good_patch_is_review_with_every_property_holding() {
    let repo = DemoRepo::new();
    repo.capture("run-001", "good");
    let before = repo.digest();
    let out = repo.check("run-001", &[]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["verdict"]["verdict"], "review");
    let props = repo.properties("run-001");
    for name in [
        "patch_applies",
        "tests_not_deleted",
        "assertions_not_weakened",
        "retry_oracle",
    ] {
        assert_eq!(
            outcome(&props, name)["outcome"],
            "holds",
            "{name}: {props:#}"
        );
    }
    assert!(
        outcome(&props, "retry_oracle")["fuel_used"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(
        outcome(&props, "retry_oracle")["plugin_sha256"],
        agent_ledger::digest::sha256_hex(&std::fs::read(component("retry_oracle")).unwrap())
    );
    // The lock was taken from the base tree and names its revision.
    let lock: serde_json::Value = serde_json::from_slice(
        &std::fs::read(repo.path().join(".agent-ledger/fixtures/run-001.lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(lock["base_revision"], repo.base.as_str());
    assert_eq!(lock["files"][0]["path"], "tests/fixtures/backoff.json");
    // The user's checkout and repository are untouched.
    assert_eq!(repo.digest(), before);
    assert_eq!(
        git(
            repo.path(),
            &["status", "--porcelain", "--untracked-files=no"]
        ),
        ""
    );
}

#[test]
fn human_output_shows_the_verdict_and_the_property_table() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let cache = cache_dir();
    let out = run(
        repo.path(),
        &[
            "check",
            "--run",
            "r",
            "--base",
            "HEAD",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    out.assert_code(0);
    assert!(
        out.stdout.starts_with("verdict: review (exit 0) for run r"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("retry_oracle"), "{}", out.stdout);
    assert!(out.stdout.contains("holds"), "{}", out.stdout);
}

#[test]
fn a_deleted_test_is_reject() {
    let repo = DemoRepo::new();
    repo.capture("r", "deletes-test");
    repo.check("r", &[]).assert_code(4);
    let miss = outcome(&repo.properties("r"), "tests_not_deleted").clone();
    assert_eq!(miss["outcome"], "miss");
    assert_eq!(miss["findings"][0]["path"], "tests/test_retry.py");
}

#[test]
fn a_weakened_assertion_is_reject() {
    let repo = DemoRepo::new();
    repo.capture("r", "weakens-assertion");
    repo.check("r", &[]).assert_code(4);
    let miss = outcome(&repo.properties("r"), "assertions_not_weakened").clone();
    assert_eq!(miss["outcome"], "miss");
    // One finding per weakened test, each naming the assertion it lost.
    let messages: Vec<&str> = miss["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{miss:#}");
    assert!(
        messages[0].starts_with(
            "test `TestBackoff::test_table`: assertion `self.assertEqual(backoff_ms(row[\"attempt\"]), row[\"ms\"])`"
        ),
        "{miss:#}"
    );
    assert!(
        messages[1].starts_with(
            "test `TestShouldRetry::test_retries_overload`: assertion `assert not should_retry(404)`"
        ),
        "{miss:#}"
    );
}

#[test]
fn the_example_oracle_misses_on_its_domain_rule() {
    let repo = DemoRepo::new();
    repo.capture("r", "retries-404");
    repo.check("r", &[]).assert_code(4);
    let miss = outcome(&repo.properties("r"), "retry_oracle").clone();
    assert_eq!(miss["outcome"], "miss");
    assert_eq!(miss["findings"][0]["path"], "src/retry.py");
    assert_eq!(miss["findings"][0]["line"], 13);
}

#[test]
fn a_patch_touching_a_fixture_is_fixture_mismatch() {
    let repo = DemoRepo::new();
    repo.capture("r", "touches-fixture");
    let out = repo.check("r", &[]);
    out.assert_code(3);
    let v = out.json();
    assert_eq!(v["verdict"]["verdict"], "fixture_mismatch");
    assert_eq!(
        v["properties"]["fixtures"]["changed"][0],
        "tests/fixtures/backoff.json"
    );
}

#[test]
fn a_patch_that_only_makes_a_fixture_executable_is_fixture_mismatch() {
    use std::os::unix::fs::PermissionsExt;
    let repo = DemoRepo::new();
    let patch = patch_of(&repo, |root| {
        let f = root.join("tests/fixtures/backoff.json");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    });
    assert!(String::from_utf8_lossy(&patch).contains("new mode 100755"));
    let body = repo.path().join("../chmod.diff");
    std::fs::write(&body, &patch).unwrap();
    run(
        repo.path(),
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(0);
    let out = repo.check("r", &[]);
    out.assert_code(3);
    let v = out.json();
    assert_eq!(v["verdict"]["verdict"], "fixture_mismatch");
    assert_eq!(
        v["properties"]["fixtures"]["changed"][0],
        "tests/fixtures/backoff.json"
    );
}

#[test]
fn a_patch_that_does_not_apply_is_a_patch_applies_miss() {
    let repo = DemoRepo::new();
    repo.capture("r", "does-not-apply");
    repo.check("r", &[]).assert_code(4);
    let miss = outcome(&repo.properties("r"), "patch_applies").clone();
    assert_eq!(miss["outcome"], "miss");
    assert!(
        miss["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("git apply refused"),
        "{miss:#}"
    );
}

#[test]
fn patches_that_touch_protected_paths_or_leave_the_tree_are_rejected_with_the_path() {
    for (patch, path) in [
        ("touches-config", "agent-ledger.toml"),
        ("touches-ledger", ".agent-ledger/verdicts/run-001.json"),
        ("escapes-tree", "../outside.txt"),
        ("symlink-out", "passwd-link"),
    ] {
        let repo = DemoRepo::new();
        repo.capture("r", patch);
        let before = repo.digest();
        repo.check("r", &[]).assert_code(4);
        let miss = outcome(&repo.properties("r"), "patch_applies").clone();
        assert_eq!(miss["outcome"], "miss", "{patch}");
        assert!(
            miss["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["path"] == path),
            "{patch}: {miss:#}"
        );
        assert_eq!(repo.digest(), before, "{patch} changed the repository");
        assert!(!repo.path().parent().unwrap().join("outside.txt").exists());
    }
}

#[test]
fn a_property_that_holds_on_its_known_bad_patch_is_vacuous() {
    // The oracle's known-bad patch swapped for one it does not catch.
    let repo = DemoRepo::with(|root| {
        std::fs::copy(
            fixture("patches/deletes-test.diff"),
            root.join("oracles/known-bad/retries-404.diff"),
        )
        .unwrap();
    });
    repo.capture("r", "good");
    let out = repo.check("r", &[]);
    out.assert_code(4);
    let vacuous = outcome(&repo.properties("r"), "retry_oracle").clone();
    assert_eq!(vacuous["outcome"], "vacuous");
    assert!(
        vacuous["error"].as_str().unwrap().contains("known-bad"),
        "{vacuous:#}"
    );
    assert_eq!(
        out.json()["verdict"]["reasons"][0]["code"],
        "property_vacuous"
    );
}

#[test]
fn replaying_the_same_trial_twice_gives_a_byte_identical_record() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    repo.check("r", &[]).assert_code(0);
    let path = repo.path().join(".agent-ledger/properties/r.json");
    let first = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let cache = cache_dir();
    // A fresh replay, without the compiled cache, on the same inputs.
    run(
        repo.path(),
        &["replay", "--run", "r", "--base", &repo.base, "--no-cache"],
    )
    .assert_code(0);
    assert_eq!(std::fs::read(&path).unwrap(), first);
    // Replaying again over the identical record is accepted.
    run(
        repo.path(),
        &[
            "replay",
            "--run",
            "r",
            "--base",
            &repo.base,
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    )
    .assert_code(0);
}

#[test]
fn check_of_an_incomplete_transcript_runs_nothing() {
    let repo = DemoRepo::new();
    let body = fixture("capture/truncated-hunk.diff");
    run(
        repo.path(),
        &["capture", "--run", "r", "--body", body.to_str().unwrap()],
    )
    .assert_code(2);
    let out = repo.check("r", &[]);
    out.assert_code(2);
    assert!(
        !repo
            .path()
            .join(".agent-ledger/fixtures/r.lock.json")
            .exists()
    );
    assert!(!repo.path().join(".agent-ledger/properties/r.json").exists());
}

#[test]
fn check_without_fixture_roots_is_fixture_mismatch() {
    let repo = DemoRepo::with(|root| {
        let config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
        std::fs::write(
            root.join("agent-ledger.toml"),
            config.replace("roots = [\"tests/fixtures\"]", "roots = [\"missing\"]"),
        )
        .unwrap();
    });
    repo.capture("r", "good");
    let out = repo.check("r", &[]);
    out.assert_code(3);
    assert!(
        out.json()["notes"][0].as_str().unwrap().contains("missing"),
        "{}",
        out.stdout
    );
}

#[test]
fn config_inside_the_tree_is_refused_and_outside_is_used() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let inside = repo.path().join("agent-ledger.toml");
    let out = repo.check("r", &["--config", inside.to_str().unwrap()]);
    out.assert_code(64);
    assert!(
        out.stderr.contains("inside the repository"),
        "{}",
        out.stderr
    );

    let outside = tempdir();
    let file = outside.path().join("ledger.toml");
    write(
        &file,
        "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[[property]]\nname = \"tests_not_deleted\"\nplugin = \"builtin:tests_not_deleted\"\n",
    );
    let out = repo.check("r", &["--config", file.to_str().unwrap()]);
    out.assert_code(0);
    let names: Vec<String> = repo.properties("r")["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["patch_applies", "tests_not_deleted"]);
}

#[test]
fn a_bad_config_names_the_field() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    std::fs::write(
        repo.path().join("agent-ledger.toml"),
        "schema = 1\n[fixtures]\nroot = [\"x\"]\n",
    )
    .unwrap();
    git(repo.path(), &["commit", "-qam", "break the configuration"]);
    let out = run(repo.path(), &["check", "--run", "r", "--base", "HEAD"]);
    out.assert_code(65);
    assert!(
        out.stderr.contains("agent-ledger.toml") && out.stderr.contains("root"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_unknown_base_revision_is_missing_input() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let out = run(
        repo.path(),
        &["check", "--run", "r", "--base", "no-such-rev"],
    );
    out.assert_code(66);
    assert!(out.stderr.contains("no-such-rev"), "{}", out.stderr);
}

#[test]
fn a_corrupt_cache_entry_is_recompiled_not_trusted() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let cache = tempdir();
    let c = cache.path().to_str().unwrap();
    run(
        repo.path(),
        &[
            "check",
            "--run",
            "r",
            "--base",
            &repo.base,
            "--cache-dir",
            c,
        ],
    )
    .assert_code(0);
    let mut flipped = 0;
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cwasm") {
            let mut bytes = std::fs::read(&path).unwrap();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0xff;
            std::fs::write(&path, bytes).unwrap();
            flipped += 1;
        }
    }
    assert!(flipped >= 3, "expected a cache entry per component");
    std::fs::remove_file(repo.path().join(".agent-ledger/properties/r.json")).unwrap();
    run(
        repo.path(),
        &[
            "replay",
            "--run",
            "r",
            "--base",
            &repo.base,
            "--cache-dir",
            c,
        ],
    )
    .assert_code(0);
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cwasm") {
            let sidecar = std::fs::read_to_string(path.with_extension("cwasm.sha256")).unwrap();
            assert_eq!(
                agent_ledger::digest::sha256_hex(&std::fs::read(&path).unwrap()),
                sidecar,
                "corrupt entry kept"
            );
        }
    }
}

/// Checks the good patch with `two_faced` configured with `known_bad`
/// (copied there from the demo's `deletes-test.diff`): it must come out
/// `vacuous`.
#[track_caller]
fn two_faced_is_vacuous(known_bad: &str) {
    let plugin = component("two_faced");
    let repo = DemoRepo::with(|root| {
        std::fs::copy(&plugin, root.join("oracles/two_faced.wasm")).unwrap();
        let demo = root.join("oracles/known-bad/deletes-test.diff");
        let kb = root.join(known_bad);
        if kb != demo {
            std::fs::create_dir_all(kb.parent().unwrap()).unwrap();
            std::fs::copy(&demo, &kb).unwrap();
        }
        let path = root.join("agent-ledger.toml");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!(
            "\n[[property]]\nname = \"two_faced\"\nplugin = \"oracles/two_faced.wasm\"\nknown_bad = \"{known_bad}\"\n",
        ));
        std::fs::write(&path, text).unwrap();
    });
    repo.capture("r", "good");
    let out = repo.check("r", &[]);
    out.assert_code(4);
    let record = repo.properties("r");
    let p = outcome(&record, "two_faced");
    assert_eq!(p["outcome"], "vacuous", "{p:#}");
}

#[test]
fn a_property_cannot_tell_its_self_test_from_the_trial() {
    // `two_faced` misses only when it can tell it runs on its known-bad
    // patch (its inputs disagree with the patch, the patch is a known-bad
    // file it can read in /base or /patched, its randomness is not the
    // patch's); the self-test must give it no tell, so it holds there too
    // and is vacuous, never a pass for a good patch.
    two_faced_is_vacuous("oracles/known-bad/deletes-test.diff");
}

#[test]
fn a_property_cannot_find_its_known_bad_patch_by_digest_in_the_lock() {
    // A known-bad patch kept under a fixture root is listed in the lock by
    // its sha256; plugins see the lock without it.
    two_faced_is_vacuous("tests/fixtures/known-bad/deletes-test.diff");
}
