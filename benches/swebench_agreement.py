#!/usr/bin/env python3
"""Published SWE-bench Lite predictions through `swebench import`, `batch`
and `report --swebench`, against their official results: prints the 2x2
agreement table and every disagreement with agent-ledger's reason.

    python3 benches/swebench_agreement.py BINARY DATA [SYSTEM...]

DATA is a directory laid out as follows (built by hand from public copies;
nothing here downloads anything):

    swebench/dataset.jsonl        Lite rows as published (instance_id, repo,
                                  base_commit, test_patch, FAIL_TO_PASS,
                                  PASS_TO_PASS, version)
    swebench/preds-SYSTEM.jsonl   predictions (instance_id,
                                  model_name_or_path, model_patch)
    swebench/resolved-SYSTEM.json {"resolved": [...], "evaluated": [...]}:
                                  the official run report's lists
    swebench/envs.json            per "repo@version": {"cmd": the test
                                  command, with "<test files touched by
                                  test_patch>" where the files go,
                                  "sandbox_read_paths": [...]}
    swebench/env_known_failures.json  optional: {"instance_id": [ids]},
                                  PASS_TO_PASS tests that fail in these
                                  environments with and without the gold
                                  patch (dropped from the lists, said here)
    repos/OWNER__NAME             clones holding every base_commit

An instance the official run did not evaluate counts as unresolved there
(as the harness's report does). Timing is printed too: the wall time of
each system's batch and the trials it ran.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# Ids the dataset carries from log parsing, not tests (pytest-5227's
# PASS_TO_PASS has `[100%]`, `[`): the harness's own log parser "passes"
# them against progress lines; no report holds a test by that name.
JUNK_ID = re.compile(r"^\[[^\]]*(\]|$)|^\[$")


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    data = os.path.abspath(sys.argv[2])
    sw = os.path.join(data, "swebench")
    systems = sys.argv[3:] or sorted(
        f[len("preds-") : -len(".jsonl")] for f in os.listdir(sw) if f.startswith("preds-")
    )
    envs = json.load(open(os.path.join(sw, "envs.json")))
    known = {}
    kf = os.path.join(sw, "env_known_failures.json")
    if os.path.exists(kf):
        known = json.load(open(kf))
    work = tempfile.mkdtemp(prefix="swebench-agreement-")

    # The dataset, with the environment's known failures and the junk ids
    # left out of the lists (each said below).
    dataset = load_jsonl(os.path.join(sw, "dataset.jsonl"))
    dropped = []
    for row in dataset:
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            ids = row[key]
            ids = json.loads(ids) if isinstance(ids, str) else ids
            keep = []
            for i in ids:
                if JUNK_ID.match(i) or i in known.get(row["instance_id"], []):
                    dropped.append((row["instance_id"], key, i))
                else:
                    keep.append(i)
            row[key] = json.dumps(keep)
    ds_path = os.path.join(work, "dataset.jsonl")
    with open(ds_path, "w") as f:
        for row in dataset:
            f.write(json.dumps(row) + "\n")

    # One [[spec]] per repository and version, from envs.json.
    roots = set()
    lines = ["schema = 1", 'checkout = "%s/repos/{owner}__{name}"' % data]
    for key, env in sorted(envs.items()):
        repo, version = key.split("@")
        cmd = env["cmd"].replace("<test files touched by test_patch>", "{test_files}")
        lines += [
            "[[spec]]",
            "repo = %s" % json.dumps(repo),
            "versions = [%s]" % json.dumps(version),
            "test_cmd = %s" % json.dumps(cmd),
            "test_ro = %s" % json.dumps(env["sandbox_read_paths"]),
        ]
        roots.update(env["sandbox_read_paths"])
    config = os.path.join(work, "swebench.toml")
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")

    table = {(o, u): 0 for o in (True, False) for u in (True, False)}
    disagreements = []
    by_design = []
    timings = []
    for system in systems:
        out = os.path.join(work, system)
        subprocess.run(
            [binary, "swebench", "import", "--dataset", ds_path, "--predictions",
             os.path.join(sw, "preds-%s.jsonl" % system), "--config", config, "--out", out,
             "--captured-at", "2026-11-01T00:00:00Z", "--skip-unknown"],
            check=True, stdout=subprocess.DEVNULL,
        )
        ledger = os.path.join(out, "ledger")
        args = [binary, "--ledger", ledger, "batch", "--manifest", os.path.join(out, "manifest.jsonl"),
                "-j", os.environ.get("JOBS", "2"), "--cache-dir", os.path.join(work, "cache")]
        for r in sorted(roots):
            args += ["--manifest-root", r]
        start = time.monotonic()
        b = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = time.monotonic() - start
        errors = [l for l in b.stderr.splitlines() if "error" in l]
        report = os.path.join(work, "report-%s.json" % system)
        subprocess.run(
            [binary, "--ledger", ledger, "report", "--swebench", report, "--manifest",
             os.path.join(out, "manifest.jsonl"), "--dataset", ds_path],
            check=True, stdout=subprocess.DEVNULL,
        )
        official = json.load(open(os.path.join(sw, "resolved-%s.json" % system)))
        resolved = set(official["resolved"])
        rep = json.load(open(report))
        n = 0
        for model in rep["models"]:
            for inst in model["instances"]:
                n += 1
                o = inst["instance_id"] in resolved
                u = inst["resolved"]
                table[(o, u)] += 1
                if inst.get("differs_by_design"):
                    by_design.append((system, inst["instance_id"], inst["differs_by_design"]))
                if o != u:
                    reason = inst["reasons"][0] if inst["reasons"] else inst["verdict"]
                    disagreements.append((system, inst["instance_id"], o, inst["verdict"], reason))
        timings.append((system, n, elapsed, len(errors)))

    print("agreement with the official results (%d predictions, systems: %s)" % (sum(table.values()), ", ".join(systems)))
    print()
    print("%-22s %12s %14s" % ("", "ours: review", "ours: not"))
    print("%-22s %12d %14d" % ("official: resolved", table[(True, True)], table[(True, False)]))
    print("%-22s %12d %14d" % ("official: unresolved", table[(False, True)], table[(False, False)]))
    agree = table[(True, True)] + table[(False, False)]
    print()
    print("agree: %d/%d" % (agree, sum(table.values())))
    print()
    print("disagreements:")
    for system, iid, o, verdict, reason in disagreements:
        side = "official resolved, ours %s" % verdict if o else "official unresolved, ours review"
        print("- %s %s: %s: %s" % (system, iid, side, reason[:400]))
    if by_design:
        print()
        print("differs by design (agent-ledger rejects where the required tests pass):")
        for system, iid, why in by_design:
            print("- %s %s: %s" % (system, iid, why[:400]))
    if dropped:
        print()
        print("ids left out of the dataset's lists (environment known failures, log-parsing junk):")
        for iid, key, i in dropped:
            print("- %s %s %r" % (iid, key, i))
    print()
    print("time per system (batch, -j %s):" % os.environ.get("JOBS", "2"))
    for system, n, elapsed, errs in timings:
        print("- %s: %d trials in %.0f s (%.1f s a trial)%s" % (system, n, elapsed, elapsed / max(n, 1), "; %d error lines" % errs if errs else ""))
    print()
    print("work directory (ledgers, reports): %s" % work)


if __name__ == "__main__":
    main()
