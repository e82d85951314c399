//! `swebench import`, `batch` and `report --swebench` on a small
//! repository: the harness's inputs in, its run report out, with our
//! verdicts beside it and no glue in between.

use crate::evaluation::{F2P, P2P, eval_patch, fix, repo};
use crate::support::*;

#[test]
fn import_batch_and_report_reproduce_the_harness_and_say_where_they_differ() {
    let repo = repo();
    let eval = String::from_utf8(eval_patch(&repo)).unwrap();
    let good = String::from_utf8(patch_of(&repo, fix)).unwrap();
    let wrong = String::from_utf8(patch_of(&repo, |root| {
        write(&root.join("README.md"), "fixed?\n")
    }))
    .unwrap();
    // Resolves, and weakens a test the evaluator does not replace.
    let weakening = String::from_utf8(patch_of(&repo, |root| {
        fix(root);
        write(
            &root.join("tests/test_more.py"),
            "import unittest\n\n\nclass TestMore(unittest.TestCase):\n    def test_more(self):\n        pass\n",
        );
    }))
    .unwrap();
    let dir = tempdir();
    let d = dir.path();
    let dataset = serde_json::json!([{
        "instance_id": "calc__calc-1",
        "repo": "calc/calc",
        "base_commit": repo.base,
        "test_patch": eval,
        "FAIL_TO_PASS": serde_json::to_string(&[F2P]).unwrap(),
        // SWE-bench Lite's pytest-dev__pytest-5227 lists fragments of the
        // harness's log as tests: no report holds them, and they must not
        // make a resolving patch a reject.
        "PASS_TO_PASS": serde_json::to_string(&[P2P, "[100%]", "["]).unwrap(),
        "version": 1.0,
    }]);
    write(&d.join("dataset.json"), dataset.to_string());
    let preds = [
        ("model-good", good.as_str()),
        ("org/model-wrong", wrong.as_str()),
        ("model-empty", ""),
        ("model-weak", weakening.as_str()),
    ]
    .iter()
    .map(|(m, p)| serde_json::json!({"instance_id": "calc__calc-1", "model_name_or_path": m, "model_patch": p}).to_string())
    .collect::<Vec<_>>()
    .join("\n");
    write(&d.join("preds.jsonl"), format!("{preds}\n"));
    write(
        &d.join("swebench.toml"),
        format!(
            "schema = 1\ncheckout = {:?}\n[[spec]]\nrepo = \"calc/calc\"\ntest_cmd = \"python3 run_tests.py # {{test_files}}\"\n",
            repo.path().display().to_string()
        ),
    );
    let out_dir = d.join("out");
    let args = [
        "swebench",
        "import",
        "--dataset",
        "dataset.json",
        "--predictions",
        "preds.jsonl",
        "--config",
        "swebench.toml",
        "--out",
        "out",
        "--captured-at",
        "2026-11-01T00:00:00Z",
        "--format",
        "json",
    ];
    let out = run(d, &args);
    out.assert_code(0);
    assert_eq!(out.json()["trials"], 4, "{}", out.stdout);
    assert_eq!(out.json()["empty_patches"], 1);
    // Never over an earlier import.
    run(d, &args).assert_code(73);
    let manifest = std::fs::read_to_string(out_dir.join("manifest.jsonl")).unwrap();
    assert!(
        manifest.contains("python3 run_tests.py # 'tests/test_calc.py'"),
        "{manifest}"
    );

    let ledger = d.join("ledger");
    let cache = cache_dir();
    let out = run(
        d,
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "batch",
            "--manifest",
            "out/manifest.jsonl",
            "--cache-dir",
            cache.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 4, "{}\n{}", out.stdout, out.stderr);
    let out = run(
        d,
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "report",
            "--swebench",
            "report.json",
            "--manifest",
            "out/manifest.jsonl",
            "--dataset",
            "dataset.json",
        ],
    );
    out.assert_code(0);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("report.json")).unwrap()).unwrap();
    let model = |name: &str| {
        report["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == name)
            .unwrap_or_else(|| panic!("{name}: {report:#}"))
            .clone()
    };
    let g = model("model-good");
    let dropped = g["instances"][0]["dropped_ids"].as_str().unwrap();
    assert!(
        dropped.contains("PASS_TO_PASS `[100%]`") && dropped.contains("PASS_TO_PASS `[`"),
        "{dropped}"
    );
    assert_eq!(
        g["resolved_ids"],
        serde_json::json!(["calc__calc-1"]),
        "{g:#}"
    );
    assert_eq!(g["total_instances"], 1);
    let w = model("org/model-wrong");
    assert_eq!(
        w["unresolved_ids"],
        serde_json::json!(["calc__calc-1"]),
        "{w:#}"
    );
    assert!(
        w["instances"][0]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("fail_to_pass"),
        "{w:#}"
    );
    let e = model("model-empty");
    assert_eq!(
        e["empty_patch_ids"],
        serde_json::json!(["calc__calc-1"]),
        "{e:#}"
    );
    assert_eq!(e["resolved_instances"], 0);
    assert_eq!(e["instances"][0]["verdict"], "incomplete");
    let k = model("model-weak");
    assert_eq!(k["resolved_instances"], 0, "{k:#}");
    let why = k["instances"][0]["differs_by_design"]
        .as_str()
        .unwrap_or_else(|| panic!("{k:#}"));
    assert!(why.contains("assertions_not_weakened"), "{why}");
}

#[test]
fn a_prediction_for_an_unknown_instance_is_an_error_naming_it() {
    let dir = tempdir();
    let d = dir.path();
    write(
        &d.join("dataset.jsonl"),
        "{\"instance_id\":\"a__a-1\",\"repo\":\"a/a\",\"base_commit\":\"0\",\"test_patch\":\"\",\"FAIL_TO_PASS\":[],\"PASS_TO_PASS\":[]}\n",
    );
    write(
        &d.join("preds.json"),
        "{\"b__b-2\": {\"model_name_or_path\": \"m\", \"model_patch\": \"\"}}",
    );
    write(
        &d.join("c.toml"),
        "schema = 1\ncheckout = \"{name}\"\n[[spec]]\nrepo = \"a/a\"\ntest_cmd = \"pytest {test_files}\"\n",
    );
    let args = [
        "swebench",
        "import",
        "--dataset",
        "dataset.jsonl",
        "--predictions",
        "preds.json",
        "--config",
        "c.toml",
        "--out",
        "o",
    ];
    let out = run(d, &args);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(
        out.stderr.contains("b__b-2") && out.stderr.contains("--skip-unknown"),
        "{}",
        out.stderr
    );
    assert!(!d.join("o/manifest.jsonl").exists());
    let out = run(d, &[&args[..], &["--skip-unknown"]].concat());
    out.assert_code(0);
    write(
        &d.join("c.toml"),
        "schema = 1\ncheckout = \"{name}\"\n[[spec]]\nrepo = \"a/a\"\ntest_cmd = \"pytest {tests}\"\n",
    );
    let out = run(
        d,
        &[
            "swebench",
            "import",
            "--dataset",
            "dataset.jsonl",
            "--predictions",
            "preds.json",
            "--config",
            "c.toml",
            "--out",
            "p",
        ],
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown variable `{tests}`"),
        "{}",
        out.stderr
    );
}

/// The guide's `swebench.toml` (`docs/guide/swebench.md`) is a configuration
/// `swebench import` reads.
#[test]
fn the_readmes_import_configuration_loads() {
    let readme = std::fs::read_to_string(fixtures().join("../docs/guide/swebench.md")).unwrap();
    let section = &readme[readme
        .find("# Evaluate SWE-bench predictions\n")
        .expect("the section")..];
    let start = section.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let toml = &section[start..start + section[start..].find("```").unwrap()];
    let dir = tempdir();
    write(&dir.path().join("swebench.toml"), toml);
    let config =
        agent_ledger::swebench::ImportConfig::load(&dir.path().join("swebench.toml")).unwrap();
    assert_eq!(config.specs.len(), 2);
}

// `{version}` and `{instance_id}` went into the test command unquoted, so
// a dataset's `version` could run a command of its own (one that writes a
// passing report) for every instance.
#[test]
fn every_value_filled_into_the_test_command_is_quoted() {
    let dir = tempdir();
    let d = dir.path();
    write(
        &d.join("dataset.jsonl"),
        "{\"instance_id\":\"a__a-1\",\"repo\":\"a/a\",\"base_commit\":\"0\",\"test_patch\":\"diff --git a/t.py b/t.py\\n\",\"FAIL_TO_PASS\":[],\"PASS_TO_PASS\":[],\"version\":\"1;echo INJECTED\"}\n",
    );
    write(
        &d.join("preds.jsonl"),
        "{\"instance_id\":\"a__a-1\",\"model_name_or_path\":\"m\",\"model_patch\":\"\"}\n",
    );
    write(
        &d.join("c.toml"),
        "schema = 1\ncheckout = \"{name}\"\n[[spec]]\nrepo = \"a/a\"\ntest_cmd = \"run --v {version} --id {instance_id} {test_files}\"\n",
    );
    run(
        d,
        &[
            "swebench",
            "import",
            "--dataset",
            "dataset.jsonl",
            "--predictions",
            "preds.jsonl",
            "--config",
            "c.toml",
            "--out",
            "o",
        ],
    )
    .assert_code(0);
    let manifest = std::fs::read_to_string(d.join("o/manifest.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(manifest.lines().next().unwrap()).unwrap();
    assert_eq!(
        line["test_cmd"], "run --v '1;echo INJECTED' --id 'a__a-1' 't.py'",
        "{line:#}"
    );
}

/// Two organisations' models with the same short name predict one
/// instance: each gets a run of its own; one model predicting an instance
/// twice is the error, naming it.
#[test]
fn models_whose_names_end_alike_get_distinct_runs() {
    let dir = tempdir();
    let d = dir.path();
    write(
        &d.join("dataset.jsonl"),
        "{\"instance_id\":\"a__a-1\",\"repo\":\"a/a\",\"base_commit\":\"0\",\"test_patch\":\"\",\"FAIL_TO_PASS\":[],\"PASS_TO_PASS\":[]}\n",
    );
    write(
        &d.join("c.toml"),
        "schema = 1\ncheckout = \"{name}\"\n[[spec]]\nrepo = \"a/a\"\ntest_cmd = \"pytest {test_files}\"\n",
    );
    let import = |preds: &str, out: &str| {
        write(&d.join("preds.jsonl"), preds);
        run(
            d,
            &[
                "swebench",
                "import",
                "--dataset",
                "dataset.jsonl",
                "--predictions",
                "preds.jsonl",
                "--config",
                "c.toml",
                "--out",
                out,
            ],
        )
    };
    let out = import(
        "{\"instance_id\":\"a__a-1\",\"model_name_or_path\":\"org-a/m\",\"model_patch\":\"\"}\n{\"instance_id\":\"a__a-1\",\"model_name_or_path\":\"org-b/m\",\"model_patch\":\"\"}\n",
        "o",
    );
    out.assert_code(0);
    let manifest = std::fs::read_to_string(d.join("o/manifest.jsonl")).unwrap();
    let runs: std::collections::BTreeSet<String> = manifest
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["run"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(runs.len(), 2, "{manifest}");
    let out = import(
        "{\"instance_id\":\"a__a-1\",\"model_name_or_path\":\"org-a/m\",\"model_patch\":\"\"}\n{\"instance_id\":\"a__a-1\",\"model_name_or_path\":\"org-a/m\",\"model_patch\":\"\"}\n",
        "p",
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("model `org-a/m` predicts instance `a__a-1` twice"),
        "{}",
        out.stderr
    );
}
