#!/usr/bin/env python3
"""One SWE-bench instance judged two ways, alternately, and the ratio of
their medians:

- the harness's apply-and-test: a fresh worktree of the base, the model
  patch applied, the test files reset to the base, the test patch applied,
  the test files run (no docker here; the same command and environment);
- `agent-ledger check` of the same prediction with `--eval-patch`, the
  required tests and the same test command, a fresh ledger each time, the
  base's run taken from the on-disk cache after the first round (as in a
  batch of many predictions of one instance) and, separately, with
  `--no-cache` (base run every time).

    python3 benches/swebench_check_vs_harness.py BINARY DATA INSTANCE SYSTEM [ROUNDS]

DATA as for benches/swebench_agreement.py. Prints each side's median wall
time and the ratios.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from swebench_common import Instance, load_jsonl


def main():
    binary, data, instance, system = sys.argv[1:5]
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    inst = Instance(data, instance)
    row, env, repo, cmd = inst.row, inst.env, inst.repo, inst.cmd
    pred = next(p for p in load_jsonl(os.path.join(data, "swebench", "preds-%s.jsonl" % system)) if p["instance_id"] == instance)
    work = tempfile.mkdtemp(prefix="swebench-vs-")
    model = os.path.join(work, "model.diff")
    open(model, "w").write(pred["model_patch"] or "")
    tests = os.path.join(work, "test.diff")
    open(tests, "w").write(row["test_patch"])
    ids = inst.ids["FAIL_TO_PASS"] + inst.ids["PASS_TO_PASS"]

    def harness(n):
        inst.harness(work, str(n), model, tests)

    cache = os.path.join(work, "cache")

    def check(n, cached):
        ledger = os.path.join(work, "l%d%s" % (n, "c" if cached else "n"))
        subprocess.run([binary, "--ledger", ledger, "capture", "--run", "r", "--body", model], cwd=repo, check=True, stdout=subprocess.DEVNULL)
        args = [binary, "--ledger", ledger, "check", "--run", "r", "--base", row["base_commit"], "--test-cmd", cmd, "--eval-patch", tests]
        for r in env["sandbox_read_paths"]:
            args += ["--test-ro", r]
        for i in ids:
            args += ["--require-pass", i]
        args += ["--cache-dir", cache] if cached else ["--no-cache"]
        subprocess.run(args, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    check(0, True)  # warms the compile cache and the base run
    times = {"harness": [], "check (base cached)": [], "check (--no-cache)": []}
    for n in range(1, rounds + 1):
        for name, f in [("harness", lambda: harness(n)), ("check (base cached)", lambda: check(n, True)), ("check (--no-cache)", lambda: check(n, False))]:
            start = time.monotonic()
            f()
            times[name].append(time.monotonic() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("%s (%s), %d rounds, alternating:" % (instance, system, rounds))
    for k, v in med.items():
        print("  %-22s median %.2f s  (%s)" % (k, v, ", ".join("%.2f" % t for t in times[k])))
    print("  ratio check (base cached) / harness: %.2f" % (med["check (base cached)"] / med["harness"]))
    print("  ratio check (--no-cache) / harness:  %.2f" % (med["check (--no-cache)"] / med["harness"]))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
