#!/usr/bin/env bash
# `agent-ledger reconcile` next to `git status --porcelain=v2 -z -uall` alone
# on a generated repository of 50,000 tracked files with 1,000 changed paths
# (and a trace of 1,000 closed write spans for them), best of 5 runs each.
# Target: reconcile takes at most 1.3 times as long as git status.
set -euo pipefail
source "$(dirname "$0")/common.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
python3 - "$repo" "$work/trace.jsonl" <<'PY'
import hashlib, json, os, subprocess, sys
repo, trace = sys.argv[1], sys.argv[2]
for d in range(500):
    os.makedirs(f"{repo}/src/m{d:03}", exist_ok=True)
    for f in range(100):
        with open(f"{repo}/src/m{d:03}/f{f:03}.rs", "w") as fh:
            fh.write(f"// module {d} file {f}\npub fn f() -> u32 {{ {d * 100 + f} }}\n")
git = ["git", "-c", "user.name=b", "-c", "user.email=b@x", "-C", repo]
subprocess.run(["git", "init", "-q", repo], check=True)
subprocess.run(git + ["add", "-A"], check=True)
subprocess.run(git + ["commit", "-q", "-m", "base"], check=True)
with open(trace, "w") as t:
    for i in range(1000):
        path = f"src/m{i % 500:03}/f{i // 500:03}.rs" if i < 900 else f"new/n{i}.rs"
        os.makedirs(os.path.dirname(f"{repo}/{path}"), exist_ok=True)
        data = f"// changed {i}\n".encode()
        with open(f"{repo}/{path}", "wb") as fh:
            fh.write(data)
        span = f"{i:016x}"
        line = {"schema": 1, "span": span, "event": "open", "op": "write", "path": path, "before": None, "after": None, "status": "open", "error": None, "ts": "2026-11-30T00:00:00Z"}
        t.write(json.dumps(line) + "\n")
        line.update(event="close", after=hashlib.sha256(data).hexdigest(), status="closed")
        t.write(json.dumps(line) + "\n")
PY
"$bin" reconcile --repo "$repo" --trace "$work/trace.jsonl" >/dev/null || { echo "reconcile did not agree"; exit 1; }

rec_us=$(best_us "$bin" reconcile --repo "$repo" --trace "$work/trace.jsonl")
git_us=$(best_us git -C "$repo" status --porcelain=v2 -z -uall)
echo "repository: 50,000 tracked files, 1,000 changed paths, $(nproc) cores"
echo "agent-ledger reconcile:           $((rec_us / 1000)) ms"
echo "git status --porcelain=v2 -z -uall: $((git_us / 1000)) ms"
python3 -c "print(f'ratio (reconcile / git status): {$rec_us / max($git_us, 1):.2f}x')"
