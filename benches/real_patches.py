#!/usr/bin/env python3
"""Captures every `*.patch` under a directory of real agent patches (raw
format) and prints how many are complete, the reasons for the rest, and the
notes. Used to check capture against patches none of the tests contain.

    python3 benches/real_patches.py target/debug/agent-ledger CORPUS_DIR [GIT_NUMSTAT_TSV]

With a TSV of `system, file, git_exit_code, ...` (file relative to
CORPUS_DIR/patches), it also lists patches capture calls incomplete although
`git apply --numstat` parses them: the list should be empty, or explained.
"""
import collections
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile


def main():
    binary, root = sys.argv[1], sys.argv[2]
    git_ok = None
    if len(sys.argv) > 3:
        git_ok = set()
        with open(sys.argv[3]) as f:
            next(f)
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if parts[2] == "0":
                    git_ok.add(parts[1])
    files = sorted(
        os.path.join(d, f)
        for d, _, fs in os.walk(os.path.join(root, "patches"))
        for f in fs
        if f.endswith(".patch")
    )
    tmp = tempfile.mkdtemp()

    def one(item):
        i, path = item
        out = subprocess.run(
            [binary, "--ledger", os.path.join(tmp, "l%d" % (i % 64)), "capture",
             "--run", "r%d" % i, "--body", path, "--format", "json"],
            capture_output=True,
        )
        receipt = json.loads(out.stdout)
        return path, out.returncode, receipt.get("reasons", []), receipt.get("notes", [])

    results = list(cf.ThreadPoolExecutor(4).map(one, enumerate(files)))
    exits = collections.Counter(code for _, code, _, _ in results)
    first = collections.Counter(r[0]["code"] for _, c, r, _ in results if c != 0)
    notes = collections.Counter(n["code"] for _, _, _, ns in results for n in ns)
    print(f"patches: {len(results)}; exit codes: {dict(exits)}")
    print(f"first reason of each incomplete patch: {dict(first)}")
    print(f"notes: {dict(notes)}")
    if git_ok is not None:
        disputed = [
            (os.path.relpath(p, os.path.join(root, "patches")), r[0])
            for p, c, r, _ in results
            if c != 0 and os.path.relpath(p, os.path.join(root, "patches")) in git_ok
        ]
        print(f"incomplete although git parses them: {len(disputed)}")
        by = collections.Counter(r["code"] for _, r in disputed)
        print(f"  by first reason: {dict(by)}")
        for p, r in disputed[:20]:
            print(f"  {p}: {r['code']}: {r['message'][:100]}")


if __name__ == "__main__":
    main()
