//! `report`: CI reports from a real ledger (a review run, a reject run with
//! findings, an incomplete capture, a run not classified yet), each format
//! read back with a parser of its own kind, and hostile findings that try
//! to break out of every one of them.

use crate::support::*;
use std::path::{Path, PathBuf};

/// A demo ledger: `good` (review), `bad` (reject: a deleted test), `cut`
/// (an incomplete capture, classified) and `pending` (captured, never
/// checked).
fn ledger() -> DemoRepo {
    let repo = DemoRepo::new();
    repo.capture("good", "good");
    repo.check("good", &[]).assert_code(0);
    repo.capture("bad", "deletes-test");
    repo.check("bad", &[]).assert_code(4);
    let cut = fixture("capture/hunk-count-mismatch.diff");
    run(
        repo.path(),
        &["capture", "--run", "cut", "--body", cut.to_str().unwrap()],
    )
    .assert_code(2);
    run(repo.path(), &["classify", "--run", "cut"]).assert_code(2);
    repo.capture("pending", "good");
    repo
}

/// Where one test's reports go: outside the repository.
struct Out {
    dir: tempfile::TempDir,
}

impl Out {
    fn new() -> Out {
        Out { dir: tempdir() }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name))
            .unwrap_or_else(|e| panic!("{name} was not written: {e}"))
    }
    /// `report` with every output, plus `extra`.
    fn report(&self, repo: &Path, extra: &[&str]) -> Output {
        let (j, s, m, h) = (
            self.arg("junit.xml"),
            self.arg("report.sarif"),
            self.arg("summary.md"),
            self.arg("report.html"),
        );
        let mut args = vec![
            "report",
            "--junit",
            &j,
            "--sarif",
            &s,
            "--markdown",
            &m,
            "--html",
            &h,
            "--github-annotations",
        ];
        args.extend_from_slice(extra);
        run(repo, &args)
    }
}

/// The pattern the published schema gives `language` (on `run` and
/// `toolComponent`): its stray `]` makes it no valid ECMA-262 regex, which
/// the draft-07 meta-schema check refuses. Reports never write `language`;
/// the test corrects the pattern in memory and leaves the file as published.
const BROKEN_LANGUAGE: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";

fn fix_language_patterns(v: &mut serde_json::Value) -> usize {
    match v {
        serde_json::Value::Object(map) => {
            let mut fixed = 0;
            for (key, value) in map.iter_mut() {
                if key == "pattern" && value == BROKEN_LANGUAGE {
                    *value = "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$".into();
                    fixed += 1;
                } else {
                    fixed += fix_language_patterns(value);
                }
            }
            fixed
        }
        serde_json::Value::Array(items) => items.iter_mut().map(fix_language_patterns).sum(),
        _ => 0,
    }
}

fn sarif_validator() -> jsonschema::Validator {
    let mut schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sarif-schema-2.1.0.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(fix_language_patterns(&mut schema), 2);
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

/// Validates a SARIF log against the official schema, listing every error.
#[track_caller]
fn assert_valid_sarif(text: &str) -> serde_json::Value {
    let log: serde_json::Value = serde_json::from_str(text).unwrap();
    let validator = sarif_validator();
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF is not valid:\n{}",
        errors.join("\n")
    );
    log
}

fn suites(doc: &roxmltree::Document<'_>) -> Vec<(String, usize, usize, usize)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .map(|s| {
            let count = |tag: &str| s.descendants().filter(|n| n.has_tag_name(tag)).count();
            (
                s.attribute("name").unwrap().to_string(),
                count("testcase"),
                count("failure"),
                count("error"),
            )
        })
        .collect()
}

/// Every element with an id of `trial-RUN` in the page, and what in it
/// could load anything from elsewhere.
fn check_html(page: &str) -> (Vec<String>, Vec<String>) {
    let doc = scraper::Html::parse_document(page);
    let sel = |s: &str| scraper::Selector::parse(s).unwrap();
    let trials = doc
        .select(&sel("details[data-run]"))
        .map(|e| {
            let run = e.value().attr("data-run").unwrap();
            assert_eq!(e.value().id(), Some(format!("trial-{run}").as_str()));
            run.to_string()
        })
        .collect();
    let mut external = Vec::new();
    for e in doc.select(&sel("script, link, iframe, object, embed, img, base, form")) {
        external.push(format!("<{}>", e.value().name()));
    }
    for e in doc.select(&sel("*")) {
        for (name, value) in e.value().attrs() {
            let refers = matches!(name, "src" | "href" | "action" | "srcset" | "xlink:href")
                || name.starts_with("on");
            if refers && !(name == "href" && value.starts_with('#')) {
                external.push(format!("{name}={value}"));
            }
        }
    }
    for style in doc.select(&sel("style")) {
        let css: String = style.text().collect();
        if css.contains("url(") || css.contains("@import") {
            external.push("style loads a resource".into());
        }
    }
    (trials, external)
}

#[test]
fn every_format_from_one_ledger() {
    let repo = ledger();
    let out = Out::new();
    let res = out.report(repo.path(), &[]);
    res.assert_code(0);

    // JUnit: a suite per run, a case per property plus the verdict.
    let xml = out.read("junit.xml");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let props = |run: &str| repo.properties(run)["properties"].as_array().unwrap().len();
    let failing = |run: &str| {
        repo.properties(run)["properties"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["outcome"] != "holds")
            .count()
    };
    assert!(failing("bad") >= 1);
    assert_eq!(
        suites(&doc),
        [
            ("bad".to_string(), 1 + props("bad"), 1 + failing("bad"), 0),
            ("cut".to_string(), 1, 1, 0),
            ("good".to_string(), 1 + props("good"), 0, 0),
            ("pending".to_string(), 1, 0, 1),
        ]
    );
    let miss = doc
        .descendants()
        .find(|n| n.has_tag_name("failure") && n.attribute("type") == Some("miss"))
        .unwrap();
    assert!(
        miss.attribute("message").unwrap().contains("tests/"),
        "{xml}"
    );

    // SARIF: valid, one run for every trial, one result per finding of
    // the reject run, every result located.
    let log = assert_valid_sarif(&out.read("report.sarif"));
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let trials = runs[0]["properties"]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 4);
    let trial = |id: &str| trials.iter().find(|t| t["run_id"] == id).unwrap();
    assert_eq!(trial("bad")["verdict"], "reject");
    assert_eq!(trial("pending")["status"], "not_classified");
    let record = repo.properties("bad");
    let findings = &outcome(&record, "tests_not_deleted")["findings"];
    let findings = findings.as_array().unwrap();
    assert!(!findings.is_empty());
    let all = runs[0]["results"].as_array().unwrap();
    for r in all {
        assert!(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].is_string(),
            "{r}"
        );
    }
    let results: Vec<_> = all
        .iter()
        .filter(|r| r["ruleId"] == "tests_not_deleted" && r["properties"]["run_id"] == "bad")
        .collect();
    assert_eq!(results.len(), findings.len());
    for (r, f) in results.iter().zip(findings) {
        assert_eq!(r["level"], "error");
        assert_eq!(
            r["message"]["text"],
            format!("run `bad`: {}", f["message"].as_str().unwrap())
        );
        assert_eq!(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            f["path"]
        );
    }
    // The trials that are neither review nor reject are results too.
    for id in ["pending", "cut"] {
        assert!(
            all.iter()
                .any(|r| r["ruleId"] == "trial_verdict" && r["properties"]["run_id"] == id),
            "{id}"
        );
    }

    // Markdown: the counts and the per-property table.
    let md = out.read("summary.md");
    for row in [
        "| review | 1 |",
        "| incomplete | 1 |",
        "| reject | 1 |",
        "| not classified | 1 |",
        "| broken chain | 0 |",
        "| tests\\_not\\_deleted | 1 | 1 | 0 | 0 |",
    ] {
        assert!(md.contains(row), "no `{row}` in\n{md}");
    }
    assert!(md.contains("Slowest trials (by fuel)"), "{md}");

    // HTML: a drill-down per trial, nothing loaded from elsewhere.
    let (trials, external) = check_html(&out.read("report.html"));
    assert_eq!(trials, ["bad", "cut", "good", "pending"]);
    assert!(external.is_empty(), "{external:?}");

    // Annotations on stdout: one command a line, the finding with its file.
    let commands: Vec<&str> = res.stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert!(
        commands
            .iter()
            .any(|l| l.starts_with("::error file=tests/") && l.contains("tests_not_deleted miss")),
        "{}",
        res.stdout
    );
    assert!(commands.contains(
        &"::warning title=agent-ledger pending::no verdict on file: the run was not classified"
    ));
    assert!(
        commands
            .iter()
            .any(|l| l.starts_with("::error title=agent-ledger cut::verdict incomplete")),
        "{}",
        res.stdout
    );
    assert!(res.stdout.contains("wrote junit `"), "{}", res.stdout);
}

#[test]
fn the_json_summary_and_every_record_match_their_schemas() {
    let repo = ledger();
    let out = Out::new();
    let md = out.arg("summary.md");
    let res = run(
        repo.path(),
        &["report", "--markdown", &md, "--format", "json"],
    );
    res.assert_code(0);
    let summary = res.json();
    assert_eq!(summary["counts"]["trials"], 4);
    assert_eq!(summary["written"][0]["format"], "markdown");
    crate::schemas::assert_matches("report-summary", &summary);
    let ledger = repo.path().join(".agent-ledger");
    for (dir, suffix, schema) in [
        ("transcripts", ".json", "transcript"),
        ("fixtures", ".lock.json", "fixture-lock"),
        ("properties", ".json", "properties"),
        ("verdicts", ".json", "verdict"),
    ] {
        for e in std::fs::read_dir(ledger.join(dir)).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if name.ends_with(suffix) && !name.ends_with(".junit.xml") {
                let record: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                crate::schemas::assert_matches(schema, &record);
            }
        }
    }
}

/// A test report whose failure message and file attribute try to break
/// out of every report format; `tests_pass` turns them into findings.
const HOSTILE_JUNIT: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="pytest" tests="1" failures="1">
    <testcase classname="tests.x" name="t" file="src/&lt;script&gt;alert(1)&lt;/script&gt;,x:1.py">
      <failure message="boom&#10;::error::forged %0A ::add-mask::secret | cell | &lt;script&gt;alert(2)&lt;/script&gt; &lt;img src=http://e/x&gt;">trace</failure>
    </testcase>
  </testsuite>
</testsuites>
"#;

#[test]
fn a_hostile_finding_cannot_escape_any_report() {
    let repo = DemoRepo::with(|root| {
        let mut config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
        config.push_str("\n[[property]]\nname = \"tests_pass\"\nplugin = \"builtin:tests_pass\"\n");
        std::fs::write(root.join("agent-ledger.toml"), config).unwrap();
    });
    let junit = tempdir();
    let junit = junit.path().join("hostile.xml");
    write(&junit, HOSTILE_JUNIT);
    repo.capture("evil", "good");
    repo.check("evil", &["--junit", junit.to_str().unwrap()])
        .assert_code(4);
    let record = repo.properties("evil");
    let finding = &outcome(&record, "tests_pass")["findings"][0];
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("\n::error::forged"),
        "{finding}"
    );
    assert!(
        finding["path"].as_str().unwrap().contains("<script>"),
        "{finding}"
    );

    let out = Out::new();
    let res = out.report(repo.path(), &[]);
    res.assert_code(0);

    // GitHub: no line of stdout is a command the finding wrote.
    for line in res.stdout.lines() {
        assert!(
            !line.starts_with("::error::forged") && !line.starts_with("::add-mask::"),
            "{}",
            res.stdout
        );
    }
    let annotation = res
        .stdout
        .lines()
        .find(|l| l.starts_with("::error file="))
        .unwrap();
    assert!(
        annotation.starts_with("::error file=src/<script>alert(1)</script>%2Cx%3A1.py,title="),
        "{annotation}"
    );
    assert!(
        annotation.contains("boom%0A::error::forged %250A ::add-mask::secret"),
        "{annotation}"
    );

    // HTML: the markup is text; no element came from a finding.
    let page = out.read("report.html");
    let (trials, external) = check_html(&page);
    assert_eq!(trials, ["evil"]);
    assert!(external.is_empty(), "{external:?}");
    let doc = scraper::Html::parse_document(&page);
    let findings = scraper::Selector::parse("ul.findings li").unwrap();
    let text: String = doc.select(&findings).flat_map(|e| e.text()).collect();
    assert!(text.contains("<script>alert(1)</script>"), "{text}");
    assert!(text.contains("<script>alert(2)</script>"), "{text}");

    // Markdown: the row keeps its three cells; no raw markup.
    let md = out.read("summary.md");
    let row = md
        .lines()
        .find(|l| l.starts_with("| evil |") && l.contains("forged"))
        .unwrap();
    assert_eq!(
        row.matches('|').count() - row.matches("\\|").count(),
        4,
        "{row}"
    );
    // Every `<` is escaped text, but the cell's own line breaks.
    for (i, _) in md.match_indices('<') {
        assert!(
            md[..i].ends_with('\\') || md[i..].starts_with("<br>"),
            "raw markup at {i}: {row}"
        );
    }

    // JUnit parses, the message in one attribute; SARIF is valid and exact.
    let xml = out.read("junit.xml");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure") && n.attribute("type") == Some("miss"))
        .unwrap();
    assert!(
        failure
            .attribute("message")
            .unwrap()
            .contains("\\n::error::forged"),
        "{xml}"
    );
    let log = assert_valid_sarif(&out.read("report.sarif"));
    let result = &log["runs"][0]["results"][0];
    assert_eq!(
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "src/%3Cscript%3Ealert%281%29%3C/script%3E%2Cx%3A1.py"
    );
    let text = result["message"]["text"].as_str().unwrap();
    assert!(
        text.ends_with(finding["message"].as_str().unwrap()),
        "{text}"
    );
}

#[test]
fn a_broken_chain_is_reported_and_fails_the_command() {
    let repo = ledger();
    // The lock no longer is the one the property record names.
    let lock = repo.path().join(".agent-ledger/fixtures/bad.lock.json");
    let mut text = std::fs::read_to_string(&lock).unwrap();
    text.push('\n');
    std::fs::write(&lock, text).unwrap();
    let out = Out::new();
    let res = out.report(repo.path(), &[]);
    res.assert_code(65);
    assert!(res.stderr.contains("broken (bad)"), "{}", res.stderr);
    let md = out.read("summary.md");
    assert!(md.contains("| broken chain | 1 |"), "{md}");
    assert!(md.contains("lock\\_sha256"), "{md}");
    let xml = out.read("junit.xml");
    assert!(xml.contains("type=\"broken_chain\""), "{xml}");
    assert_valid_sarif(&out.read("report.sarif"));
    assert!(
        res.stdout
            .contains("::error title=agent-ledger bad::broken chain: "),
        "{}",
        res.stdout
    );
}

#[test]
fn reports_replace_their_files_and_never_land_in_the_ledger() {
    let repo = DemoRepo::new();
    repo.capture("good", "good");
    repo.check("good", &[]).assert_code(0);
    let out = Out::new();
    let md = out.arg("summary.md");
    write(&out.path("summary.md"), "stale\n");
    run(repo.path(), &["report", "--markdown", &md]).assert_code(0);
    assert!(out.read("summary.md").contains("| review | 1 |"));
    repo.capture("later", "deletes-test");
    repo.check("later", &[]).assert_code(4);
    run(repo.path(), &["report", "--markdown", &md]).assert_code(0);
    assert!(out.read("summary.md").contains("| reject | 1 |"));

    let ledger = repo.path().join(".agent-ledger");
    let before = std::fs::read_dir(ledger.join("verdicts")).unwrap().count();
    for inside in [
        ledger.join("report.html"),
        ledger.join("verdicts/summary.md"),
    ] {
        let res = run(repo.path(), &["report", "--html", inside.to_str().unwrap()]);
        res.assert_code(64);
        assert!(res.stderr.contains("inside the ledger"), "{}", res.stderr);
        assert!(!inside.exists());
    }
    assert_eq!(
        std::fs::read_dir(ledger.join("verdicts")).unwrap().count(),
        before
    );
}

#[test]
fn usage_errors_and_missing_runs() {
    let repo = DemoRepo::new();
    repo.capture("good", "good");
    let out = Out::new();
    // No output named.
    let res = run(repo.path(), &["report"]);
    res.assert_code(64);
    assert!(res.stderr.contains("--junit"), "{}", res.stderr);
    // Two reports in one file.
    let f = out.arg("x");
    run(repo.path(), &["report", "--junit", &f, "--html", &f]).assert_code(64);
    // Annotations and JSON would share stdout.
    run(
        repo.path(),
        &["report", "--github-annotations", "--format", "json"],
    )
    .assert_code(64);
    // A named run with no record.
    let res = run(
        repo.path(),
        &["report", "--run", "nope", "--markdown", &out.arg("s.md")],
    );
    res.assert_code(66);
    assert!(
        res.stderr.contains("no record of run `nope`"),
        "{}",
        res.stderr
    );
    // A named run only.
    let res = run(
        repo.path(),
        &["report", "--run", "good", "--github-annotations"],
    );
    res.assert_code(0);
    assert!(
        res.stdout.contains("::warning title=agent-ledger good::"),
        "{}",
        res.stdout
    );
    // An empty ledger.
    let empty = tempdir();
    std::fs::create_dir(empty.path().join("l")).unwrap();
    let l = empty.path().join("l");
    run(
        empty.path(),
        &[
            "--ledger",
            l.to_str().unwrap(),
            "report",
            "--github-annotations",
        ],
    )
    .assert_code(66);
}

/// `--fail-on` turns the statuses a gate cares about into the exit code,
/// after every report is written, so CI never greps JSON.
#[test]
fn fail_on_gives_the_exit_code_of_the_most_severe_listed_status() {
    let repo = ledger();
    let out = Out::new();
    let md = out.arg("summary.md");
    let gate = |list: &str, runs: &[&str]| {
        let mut args = vec!["report", "--markdown", &md, "--fail-on", list];
        for r in runs {
            args.extend_from_slice(&["--run", r]);
        }
        run(repo.path(), &args)
    };
    // The ledger holds review, reject, incomplete and not classified runs.
    let res = gate("reject,incomplete", &[]);
    res.assert_code(4);
    assert!(
        res.stderr.contains("1 reject, 1 incomplete"),
        "{}",
        res.stderr
    );
    assert!(out.read("summary.md").contains("reject"));
    gate("incomplete", &[]).assert_code(2);
    gate("not_classified", &[]).assert_code(2);
    gate("fixture_mismatch", &[]).assert_code(0);
    gate("reject,incomplete,not_classified", &["good"]).assert_code(0);
    gate("reject", &["good", "bad"]).assert_code(4);
    let bad = gate("review", &[]);
    bad.assert_code(64);
    assert!(bad.stderr.contains("review"), "{}", bad.stderr);
    // A gate needs no report file: `--fail-on` alone is enough.
    let alone = run(repo.path(), &["report", "--fail-on", "reject"]);
    alone.assert_code(4);
    assert!(alone.stderr.contains("1 reject"), "{}", alone.stderr);
    run(
        repo.path(),
        &["report", "--run", "good", "--fail-on", "reject"],
    )
    .assert_code(0);
    // Nothing asked for at all is still a usage error.
    run(repo.path(), &["report"]).assert_code(64);
}

/// A patch can make its own trial stop with no verdict (`not_classified`);
/// a gate that lists statuses and forgets that one would pass it. `--fail-on`
/// with no list fails on every status but review.
#[test]
fn fail_on_with_no_list_fails_on_every_status_but_review() {
    let repo = ledger();
    let all = run(repo.path(), &["report", "--fail-on"]);
    all.assert_code(4);
    assert!(
        all.stderr.contains("1 reject") && all.stderr.contains("not classified"),
        "{}",
        all.stderr
    );
    // The run captured and never checked has no verdict: exit 2, never 0.
    run(repo.path(), &["report", "--run", "pending", "--fail-on"]).assert_code(2);
    run(repo.path(), &["report", "--run", "cut", "--fail-on"]).assert_code(2);
    run(repo.path(), &["report", "--run", "good", "--fail-on"]).assert_code(0);
}

/// Microsoft's SARIF Multitool with GitHub's ingestion rules (the legacy
/// GH1001-GH1007 turned on), installed by `.ci/sarif-multitool`: every
/// finding it makes, as `ruleId: message` lines.
fn github_sarif_findings(sarif: &Path) -> Vec<String> {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tools/sarif-multitool");
    let tool = tools.join("node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool");
    assert!(
        tool.exists(),
        "the SARIF Multitool is not installed in `{}`: run `bash .ci/sarif-multitool` (`.ci/test` does) and run the tests again",
        tools.display()
    );
    let out = sarif.with_extension("multitool.sarif");
    let status = std::process::Command::new(&tool)
        .args(["validate", "-c"])
        .arg(tools.join("github-rules.xml"))
        .args([
            "--rule-kind",
            "Gh;Ghas",
            "--quiet",
            "true",
            "--log",
            "ForceOverwrite",
            "-o",
        ])
        .arg(&out)
        .arg(sarif)
        .status()
        .unwrap();
    assert!(status.success(), "the multitool failed: {status}");
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let mut findings = Vec::new();
    for run in log["runs"].as_array().unwrap() {
        for r in run["results"].as_array().into_iter().flatten() {
            findings.push(format!("{}: {}", r["ruleId"], r["message"]));
        }
    }
    findings
}

#[test]
fn a_sixty_trial_batchs_sarif_passes_githubs_rules() {
    let repo = DemoRepo::new();
    let scratch = tempdir();
    let patches = [
        "patches/good.diff",
        "patches/deletes-test.diff",
        "patches/touches-fixture.diff",
        "capture/truncated-hunk.diff",
        "patches/weakens-assertion.diff",
        "patches/does-not-apply.diff",
    ];
    let mut manifest = String::new();
    for i in 0..60 {
        let line = serde_json::json!({
            "run": format!("t{i:02}"),
            "body": fixture(patches[i % patches.len()]),
            "repo": repo.path(),
            "base": repo.base,
            "captured_at": "2026-11-30T00:00:00Z",
        });
        manifest.push_str(&format!("{line}\n"));
    }
    let manifest_path = scratch.path().join("manifest.jsonl");
    write(&manifest_path, manifest);
    let cache = cache_dir();
    let ledger = scratch.path().join("ledger");
    let fixtures = fixtures();
    let res = run(
        scratch.path(),
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "batch",
            "--manifest-root",
            fixtures.to_str().unwrap(),
            "--manifest",
            manifest_path.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "-j",
            "2",
        ],
    );
    assert!(res.code != 0 && res.code != 70, "{}", res.stderr);
    let sarif = scratch.path().join("batch.sarif");
    run(
        scratch.path(),
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "report",
            "--sarif",
            sarif.to_str().unwrap(),
        ],
    )
    .assert_code(0);
    let log = assert_valid_sarif(&std::fs::read_to_string(&sarif).unwrap());
    assert_eq!(log["runs"].as_array().unwrap().len(), 1);
    assert_eq!(
        log["runs"][0]["properties"]["trials"]
            .as_array()
            .unwrap()
            .len(),
        60
    );
    assert!(log["runs"][0]["results"].as_array().unwrap().len() >= 40);
    let findings = github_sarif_findings(&sarif);
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}
