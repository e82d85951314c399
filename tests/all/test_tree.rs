//! The test command's tree: shared with the base by hard links and shown
//! to the command as an overlay, so nothing it writes, renames or deletes
//! may reach the base, the trial's own patched tree, the next run on the
//! same base or another trial of a batch.
//!
//! Each command below starts by asking git whether its tree is exactly
//! the base plus the patch (no change against the index the trial staged,
//! no untracked file), claims a pass only if it is, then vandalizes every file in
//! place. If one run's writes reached a shared inode, the next run on that
//! base would start dirty and report a failure.

use crate::support::*;
use crate::test_sandbox::{FAIL, PASS, Trial};

/// Pristine at the start, then every tracked file appended to in place,
/// truncated, chmodded, one deleted and one renamed, the `.git` index
/// and pack overwritten, a new file made; and the overlay's lower layer,
/// named in `/proc/self/mountinfo`, written if the command can reach it.
fn vandal() -> String {
    format!(
        r#"pristine=no
if changed=$(git diff --name-only) && new=$(git ls-files --others) && [ -z "$changed$new" ]; then pristine=yes; else echo "not pristine: $changed $new" >&2; fi
lower=$(sed -n 's/.*lowerdir=\([^,]*\).*/\1/p' /proc/self/mountinfo | head -n 1)
for f in $(git ls-files); do
  if [ -f "$f" ]; then printf 'vandal\n' >> "$f"; chmod 777 "$f"; fi
  if [ -n "$lower" ] && [ -f "$lower/$f" ]; then printf 'vandal\n' >> "$lower/$f" 2>/dev/null; fi
done
first=$(git ls-files | head -n 1)
: > "$first"
rm -f "$(git ls-files | sed -n 2p)"
mv "$(git ls-files | sed -n 3p)" moved-away 2>/dev/null
for p in .git/index .git/objects/pack/*; do chmod u+w "$p"; printf 'vandal' > "$p"; done
printf 'new\n' > made-by-the-suite
if [ "$pristine" = yes ]; then {PASS}; else {FAIL}; fi"#
    )
}

#[test]
fn what_the_baseline_writes_does_not_reach_the_trials_run() {
    // `check` runs the command on the base first (the baseline), then on
    // the patched tree, both from one shared base checkout.
    let trial = Trial::new();
    let before = trial.repo.digest();
    let (code, stderr) = trial.check(&vandal(), &[]);
    let record = trial.repo.properties("r");
    assert_eq!(code, 0, "{stderr}\n{record:#}");
    assert_eq!(record["test_run"]["sandbox"], "namespaces", "{record:#}");
    assert_eq!(
        outcome(&record, "tests_pass")["outcome"],
        "holds",
        "{record:#}"
    );
    assert_eq!(trial.repo.digest(), before, "the user's checkout changed");
}

#[test]
fn what_one_trial_writes_does_not_reach_another_trial_of_the_batch() {
    let repo = DemoRepo::with(|root| {
        let mut config = std::fs::read_to_string(root.join("agent-ledger.toml")).unwrap();
        config.push_str("\n[[property]]\nname = \"tests_pass\"\nplugin = \"builtin:tests_pass\"\n");
        std::fs::write(root.join("agent-ledger.toml"), config).unwrap();
    });
    let scratch = tempdir();
    std::fs::copy(
        fixture("patches/good.diff"),
        scratch.path().join("good.diff"),
    )
    .unwrap();
    let mut text = String::new();
    for run in ["one", "two", "three"] {
        let line = serde_json::json!({
            "run": run,
            "body": "good.diff",
            "repo": repo.path(),
            "base": repo.base,
            "test_cmd": vandal(),
        });
        text.push_str(&format!("{line}\n"));
    }
    let manifest = scratch.path().join("manifest.jsonl");
    write(&manifest, text);
    let ledger = scratch.path().join("ledger");
    let cache = cache_dir();
    let before = repo.digest();
    // One worker: the trials run one after another on the one base tree.
    let out = run(
        scratch.path(),
        &[
            "--ledger",
            ledger.to_str().unwrap(),
            "batch",
            "--manifest",
            manifest.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "-j",
            "1",
            "--format",
            "json",
        ],
    );
    out.assert_code(0);
    for run in ["one", "two", "three"] {
        let bytes = std::fs::read(ledger.join(format!("properties/{run}.json"))).unwrap();
        let record: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            outcome(&record, "tests_pass")["outcome"],
            "holds",
            "{run} started from a tree an earlier run wrote: {record:#}"
        );
    }
    assert_eq!(repo.digest(), before, "the user's checkout changed");
}

#[test]
fn the_test_commands_tree_is_an_overlay_not_a_copy() {
    // Where the kernel allows an overlay in a user namespace (Linux 5.11
    // and later), the tree is one: no run copies the base's bytes.
    let trial = Trial::new();
    let is_overlay = r#"awk -v d="$PWD" '$5 == d {for (i = 7; i <= NF; i++) if ($i == "-") print $(i + 1)}' /proc/self/mountinfo | grep -qx overlay"#;
    let (code, stderr) = trial.check(
        &format!("if {is_overlay}; then {PASS}; else {FAIL}; fi"),
        &["--no-test-baseline"],
    );
    assert_eq!(code, 0, "not an overlay: {stderr}");
    assert!(!stderr.contains("cannot be an overlay"), "{stderr}");
}
