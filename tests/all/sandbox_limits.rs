//! Limits are totals per plugin instance, and what a plugin can observe of
//! the host is fixed: a hostile property ends as `error` naming the cap it
//! hit, its neighbours in the same check still hold, and identical inputs
//! give byte-identical records however the trees were made.

use crate::support::*;

/// `check` of the good patch with `tests_not_deleted`, the hostile plugin in
/// `mode` (with `extra` limit keys and `config` lines) and the example
/// oracle, in that order. Returns the exit code and the property record.
fn beside_others(repo: &DemoRepo, mode: &str, extra: &str, config: &str) -> (i32, String) {
    let dir = tempdir();
    let path = dir.path().join("limits.toml");
    let hostile = component("hostile");
    let oracle = component("retry_oracle");
    write(
        &path,
        format!(
            "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n[tests]\nglobs = [\"tests/**\", \"**/test_*.py\"]\n\
             [[property]]\nname = \"tests_not_deleted\"\nplugin = \"builtin:tests_not_deleted\"\n\
             [[property]]\nname = \"hostile\"\nplugin = {hostile:?}\n{extra}\n[property.config]\nmode = {mode:?}\n{config}\n\
             [[property]]\nname = \"retry_oracle\"\nplugin = {oracle:?}\n[property.config]\nallowed_4xx = \"429\"\n"
        ),
    );
    let out = repo.check("r", &["--config", path.to_str().unwrap()]);
    let record = std::fs::read_to_string(repo.path().join(".agent-ledger/properties/r.json"))
        .unwrap_or_else(|e| panic!("{mode}: no property record ({e})\n{}", out.stderr));
    (out.code, record)
}

/// Runs `mode` beside two well-behaved properties: the check is `reject`
/// (exit 4, so the process did not die), the hostile property is an `error`
/// naming `needle`, and the others hold.
#[track_caller]
fn contained(mode: &str, extra: &str, config: &str, needle: &str) -> serde_json::Value {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let (code, record) = beside_others(&repo, mode, extra, config);
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(code, 4, "{mode}: {record:#}");
    let p = outcome(&record, "hostile").clone();
    assert_eq!(p["outcome"], "error", "{mode}: {p:#}");
    let error = p["error"].as_str().unwrap();
    assert!(
        error.contains(needle),
        "{mode}: expected `{needle}` in `{error}`"
    );
    for other in ["tests_not_deleted", "retry_oracle"] {
        assert_eq!(
            outcome(&record, other)["outcome"],
            "holds",
            "{mode}: {record:#}"
        );
    }
    p
}

#[test]
fn file_metadata_is_the_same_in_two_separately_made_repositories() {
    // The second repository is a fresh copy of the first, made later: new
    // inodes, new timestamps, directories written in another order. The
    // mode misses if any timestamp it can stat is after 2000, and otherwise
    // sums its whole walk (order, types, sizes, times) into a finding.
    let first = DemoRepo::new();
    first.capture("r", "good");
    let second = tempdir();
    copy_dir(first.path(), second.path());
    let second = DemoRepo {
        dir: second,
        base: first.base.clone(),
    };
    let (code_a, record_a) = beside_others(&first, "mtime-after-2001", "", "");
    let (code_b, record_b) = beside_others(&second, "mtime-after-2001", "", "");
    let parsed: serde_json::Value = serde_json::from_str(&record_a).unwrap();
    let p = outcome(&parsed, "hostile");
    assert_eq!(p["outcome"], "holds", "{p:#}");
    let summary = p["findings"][0]["message"].as_str().unwrap();
    assert!(summary.contains("entries, none after 2000"), "{p:#}");
    let entries: usize = summary.split(' ').next().unwrap().parse().unwrap();
    assert!(entries > 20, "the walk saw the trees: {summary}");
    assert_eq!(code_a, 0, "every property holds, so the trial is review");
    assert_eq!(code_b, code_a);
    assert_eq!(record_a, record_b, "the property records differ");
}

#[test]
fn a_descriptor_hog_is_an_error_for_that_property_only() {
    // Regression: the hog used to exhaust the process's descriptors and end
    // the whole check with 70, 74 or 4 depending on scheduling.
    contained(
        "descriptors",
        "memory_mb = 64",
        "",
        "descriptor cap of 64 open files reached",
    );
}

#[test]
fn a_findings_flood_is_an_error_not_a_huge_record() {
    // A million findings and one 100 MB message are refused while they are
    // lifted out of the guest; one finding over the count cap afterwards.
    for (config, needle) in [
        ("count = \"1000000\"", "findings cap reached"),
        ("bytes = \"100000000\"", "findings cap reached"),
        ("count = \"10001\"", "10001 findings, at most 10000 allowed"),
        (
            "count = \"2\"\nbytes = \"600000\"",
            "1200000 bytes of paths and messages",
        ),
    ] {
        let p = contained("findings", "", config, needle);
        assert_eq!(p["findings"].as_array().unwrap().len(), 0, "{p:#}");
    }
}

#[test]
fn describe_runs_under_the_property_s_own_limits() {
    // The hostile plugin's `describe` spins for a few million instructions:
    // fine under the default budget, not under this one.
    let p = contained(
        "",
        "fuel = 1000000",
        "",
        "`describe` failed: fuel budget of 1000000 exhausted",
    );
    assert_eq!(p["fuel_used"], 0);
}

#[test]
fn unbounded_memory_growth_beside_others_hits_the_total_cap() {
    contained(
        "memory",
        "memory_mb = 64",
        "",
        "memory cap of 67108864 bytes reached",
    );
}
