//! `swebench import`, `batch` and `report --swebench` on a small
//! repository: the harness's inputs in, its run report out, with our
//! verdicts beside it and no glue in between.

use crate::evaluation::{F2P, P2P, eval_patch, fix, repo};
use crate::support::*;
use std::path::Path;

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
    let batch = || {
        run(
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
        )
    };
    let out = batch();
    assert_eq!(out.code, 4, "{}\n{}", out.stdout, out.stderr);
    // Run again into the same ledger, the batch resumes: every finished
    // trial is kept as it is, none judged again.
    let records = |dir: &str| -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(ledger.join(dir))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.path(), e.metadata().unwrap().modified().unwrap())
            })
            .collect();
        v.sort();
        v
    };
    let before = (records("properties"), records("verdicts"));
    let again = batch();
    assert_eq!(again.code, 4, "{}\n{}", again.stdout, again.stderr);
    assert_eq!(again.stdout, out.stdout);
    assert_eq!((records("properties"), records("verdicts")), before);
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
    // Each required test, with its fate on the base and after.
    let required = &g["instances"][0]["required"];
    let add = required
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == F2P)
        .unwrap_or_else(|| panic!("{g:#}"));
    assert_eq!(add["list"], "fail_to_pass", "{g:#}");
    assert_eq!(add["passes"], true, "{g:#}");
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

    // Class 8 (issue 39): a shard brings the good model's run id judged
    // otherwise: no test command (a green report handed in), no evaluator's
    // patch, no baseline. Its verdict is `review`; it answers another
    // question than the manifest's line, and the report refuses it.
    let good_run = manifest
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["model"] == "model-good")
        .unwrap()["run"]
        .as_str()
        .unwrap()
        .to_string();
    let shard = d.join("shard");
    write(&d.join("good.patch"), &good);
    write(
        &d.join("green.xml"),
        "<testsuites><testsuite name='x'><testcase classname='tests.test_calc.TestCalc' name='test_add'/></testsuite></testsuites>",
    );
    write(
        &d.join("shard.toml"),
        "schema = 1\n[fixtures]\nnone = \"no data files\"\n",
    );
    let shard_arg = shard.to_str().unwrap().to_string();
    let in_shard = |args: &[&str]| {
        let mut all = vec!["--ledger", shard_arg.as_str()];
        all.extend_from_slice(args);
        run_with_stdin(repo.path(), &all, Some(good.as_bytes()))
    };
    in_shard(&["capture", "--run", &good_run, "--body", "-"]).assert_code(0);
    let green = d.join("green.xml");
    let config = d.join("shard.toml");
    in_shard(&[
        "check",
        "--run",
        &good_run,
        "--base",
        &repo.base,
        "--junit",
        green.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ])
    .assert_code(0);
    let out = run(
        d,
        &[
            "--ledger",
            shard.to_str().unwrap(),
            "report",
            "--swebench",
            "shard-report.json",
            "--manifest",
            "out/manifest.jsonl",
        ],
    );
    assert_eq!(out.code, 65, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&good_run) && out.stderr.contains("test command"),
        "{}",
        out.stderr
    );
    assert!(!d.join("shard-report.json").exists());
    // `merge --manifest` refuses the same shard, and takes the honest one.
    let merged = d.join("merged");
    let merge = |source: &Path| {
        run(
            d,
            &[
                "merge",
                "--into",
                merged.to_str().unwrap(),
                "--manifest",
                "out/manifest.jsonl",
                source.to_str().unwrap(),
            ],
        )
    };
    let out = merge(&shard);
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains(&good_run), "{}", out.stderr);
    assert!(!merged.join("properties").exists());
    merge(&ledger).assert_code(0);

    // A verdict file edited to `review` beside records that say `reject`:
    // reports count it as no verdict, and merge refuses it.
    let wrong_run = manifest
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["model"] == "org/model-wrong")
        .unwrap()["run"]
        .as_str()
        .unwrap()
        .to_string();
    let edited = d.join("edited");
    copy_dir(&ledger, &edited);
    let verdict_file = edited.join(format!("verdicts/{wrong_run}.json"));
    let mut verdict: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&verdict_file).unwrap()).unwrap();
    verdict["verdict"] = "review".into();
    verdict["exit_code"] = 0.into();
    std::fs::remove_file(&verdict_file).unwrap();
    write(&verdict_file, serde_json::to_vec_pretty(&verdict).unwrap());
    let _ = std::fs::remove_file(edited.join(format!("signatures/{wrong_run}.dsse.json")));
    let out = run(
        d,
        &[
            "--ledger",
            edited.to_str().unwrap(),
            "report",
            "--swebench",
            "edited-report.json",
            "--manifest",
            "out/manifest.jsonl",
        ],
    );
    // Written, and failing: a broken chain is reported, not trusted.
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains(&wrong_run), "{}", out.stderr);
    let edited_report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("edited-report.json")).unwrap()).unwrap();
    let w = edited_report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "org/model-wrong")
        .unwrap();
    assert_eq!(w["resolved_instances"], 0, "{w:#}");
    assert_eq!(w["error_ids"], serde_json::json!(["calc__calc-1"]), "{w:#}");
    let out = run(
        d,
        &[
            "merge",
            "--into",
            d.join("merged2").to_str().unwrap(),
            edited.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    assert!(out.stderr.contains(&wrong_run), "{}", out.stderr);
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
    assert_eq!(config.specs.len(), 3);
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

/// Paths in the import configuration are relative to that file, not to
/// where the command runs, and the command `import` prints is the one to
/// run: its ledger beside the manifest, not in the shared clone.
#[test]
fn a_relative_checkout_is_read_from_the_configurations_directory() {
    let dir = tempdir();
    let d = dir.path();
    write(
        &d.join("data/dataset.jsonl"),
        "{\"instance_id\":\"a__a-1\",\"repo\":\"a/a\",\"base_commit\":\"0\",\"test_patch\":\"\",\"FAIL_TO_PASS\":[],\"PASS_TO_PASS\":[]}\n",
    );
    write(
        &d.join("data/preds.jsonl"),
        "{\"instance_id\": \"a__a-1\", \"model_name_or_path\": \"m\", \"model_patch\": \"\"}\n",
    );
    write(
        &d.join("conf/c.toml"),
        "schema = 1\ncheckout = \"../repos/{name}\"\n[[spec]]\nrepo = \"a/a\"\ntest_cmd = \"pytest {test_files}\"\n",
    );
    let out = run(
        d,
        &[
            "swebench",
            "import",
            "--dataset",
            "data/dataset.jsonl",
            "--predictions",
            "data/preds.jsonl",
            "--config",
            "conf/c.toml",
            "--out",
            "eval",
        ],
    );
    out.assert_code(0);
    assert!(
        out.stdout
            .contains("agent-ledger --ledger eval/ledger batch --manifest eval/manifest.jsonl"),
        "{}",
        out.stdout
    );
    let manifest = std::fs::read_to_string(d.join("eval/manifest.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(manifest.lines().next().unwrap()).unwrap();
    let repo = std::path::PathBuf::from(line["repo"].as_str().unwrap());
    assert!(repo.is_absolute(), "{manifest}");
    assert_eq!(repo, d.join("conf/../repos/a"), "{manifest}");
}
