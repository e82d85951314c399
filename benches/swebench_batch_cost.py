#!/usr/bin/env python3
"""N predictions of one SWE-bench instance: what a `batch` of them costs
against its floor, N patched runs plus one base run of the harness's own
apply-and-test (issue 20 item 6: at most 1.2x). Both sides run serially
(`batch -j 1`), alternately, ROUNDS times; the batch starts each round with
a fresh ledger and a fresh cache directory, so its base run is in its time
exactly once, as it would be for a new instance.

    python3 benches/swebench_batch_cost.py BINARY DATA INSTANCE [N] [ROUNDS]

DATA as for benches/swebench_agreement.py. The N predictions cycle through
every published prediction of INSTANCE in DATA (one model name each).
Prints each side's median wall time and their ratio.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from swebench_common import Instance


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, data, instance = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    inst = Instance(data, instance)
    published = inst.predictions()
    if not published:
        sys.exit("no published prediction of %s in %s" % (instance, data))
    work = tempfile.mkdtemp(prefix="swebench-batch-cost-")
    row = dict(inst.row, FAIL_TO_PASS=json.dumps(inst.ids["FAIL_TO_PASS"]), PASS_TO_PASS=json.dumps(inst.ids["PASS_TO_PASS"]))
    dataset = os.path.join(work, "dataset.jsonl")
    open(dataset, "w").write(json.dumps(row) + "\n")
    preds = [(("%s-%d" % (published[i % len(published)][0], i)), published[i % len(published)][1]) for i in range(n)]
    predictions = os.path.join(work, "predictions.jsonl")
    with open(predictions, "w") as f:
        for name, patch in preds:
            f.write(json.dumps({"instance_id": instance, "model_name_or_path": name, "model_patch": patch}) + "\n")
    patch_files = []
    for i, (_, patch) in enumerate(preds):
        p = os.path.join(work, "model-%d.diff" % i)
        open(p, "w").write(patch)
        patch_files.append(p)
    tests = os.path.join(work, "test.diff")
    open(tests, "w").write(row["test_patch"])
    cmd = inst.env["cmd"].replace("<test files touched by test_patch>", "{test_files}")
    config = os.path.join(work, "swebench.toml")
    with open(config, "w") as f:
        f.write("schema = 1\ncheckout = %s\n[[spec]]\nrepo = %s\nversions = [%s]\ntest_cmd = %s\ntest_ro = %s\n" % (
            json.dumps(inst.repo), json.dumps(row["repo"]), json.dumps(row["version"]), json.dumps(cmd), json.dumps(inst.env["sandbox_read_paths"])))

    def floor(r):
        inst.harness(work, "%d-base" % r, None, tests)
        for i, p in enumerate(patch_files):
            inst.harness(work, "%d-%d" % (r, i), p, tests)

    # One compile cache for every round (each round used to get a cold
    # one of its own, so every round compiled the plugins again).
    cache = os.path.join(work, "cache")

    def batch(r):
        out = os.path.join(work, "batch-%d" % r)
        subprocess.run([binary, "swebench", "import", "--dataset", dataset, "--predictions", predictions,
                        "--config", config, "--out", out, "--captured-at", "2026-11-01T00:00:00Z"],
                       check=True, stdout=subprocess.DEVNULL)
        args = [binary, "--ledger", os.path.join(out, "ledger"), "batch", "--manifest", os.path.join(out, "manifest.jsonl"),
                "-j", "1", "--cache-dir", cache]
        for root in inst.env["sandbox_read_paths"]:
            args += ["--manifest-root", root]
        b = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if b.returncode not in (0, 4):
            sys.exit("batch exited %d:\n%s" % (b.returncode, b.stderr[-2000:]))
        # The compile cache is warm after the first round, as in a CI
        # cache; the base run's cache is dropped, so every round runs it.
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(os.path.join(cache, "baselines"), ignore_errors=True)

    # Warm the plugin compile cache once, outside the timing: a CI image
    # ships it warm (`plugin precompile`); first loads are issue 23's.
    batch(0)
    times = {"floor (N patched + 1 base)": [], "batch": []}
    for r in range(1, rounds + 1):
        for name, f in [("floor (N patched + 1 base)", floor), ("batch", batch)]:
            start = time.monotonic()
            f(r)
            times[name].append(time.monotonic() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("%s, N = %d predictions, %d rounds, alternating, serial:" % (instance, n, rounds))
    for k, v in med.items():
        print("  %-28s median %6.2f s  (%s)" % (k, v, ", ".join("%.2f" % t for t in times[k])))
    print("  ratio batch / floor: %.2f" % (med["batch"] / med["floor (N patched + 1 base)"]))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
