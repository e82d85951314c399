#!/usr/bin/env bash
# `agent-ledger reconcile` next to `git status --porcelain=v2 -z -uall` alone
# and next to a plain Python reconcile (git status, then sha256 of every
# changed path against the trace's spans: what the seed shipped), on
# generated repositories of 5,000, 50,000 and 200,000 tracked files with
# 1,000 changed paths each (900 rewritten, 100 new) and a trace of 1,000
# closed write spans. The three commands run alternately, 7 rounds after a
# warm-up, once the tree has settled for a minute (see below); medians.
# Targets: reconcile at most 1.2 times git status, at
# least 2 times faster than the Python, and linear in the number of files.
#
#   bash benches/reconcile_vs_git_status.sh [SIZES...]   (default 5000 50000 200000)
set -euo pipefail
source "$(dirname "$0")/common.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/seed_reconcile.py" <<'PY'
# A plain reconcile: every path git status reports must be owned by a closed
# write span whose `after` is the path's sha256; every such span's path must
# have changed.
import hashlib, json, os, subprocess, sys

repo, trace = sys.argv[1], sys.argv[2]
out = subprocess.run(
    ["git", "-C", repo, "status", "--porcelain=v2", "-z", "-uall"],
    check=True, capture_output=True,
).stdout
changed = set()
fields = out.split(b"\0")
i = 0
while i < len(fields):
    rec = fields[i]
    i += 1
    if not rec:
        continue
    kind = rec[:1]
    if kind == b"1":
        changed.add(rec.split(b" ", 8)[8])
    elif kind == b"2":
        changed.add(rec.split(b" ", 9)[9])
        changed.add(fields[i])
        i += 1
    elif kind == b"u":
        changed.add(rec.split(b" ", 10)[10])
    elif kind == b"?":
        changed.add(rec[2:])
spans = {}
with open(trace) as t:
    for line in t:
        ev = json.loads(line)
        if ev["event"] == "close" and ev["status"] == "closed" and ev["op"] in ("write", "delete"):
            spans[ev["path"].encode()] = ev["after"]
ghosts = sorted(p for p in changed if p not in spans)
phantoms = sorted(p for p in spans if p not in changed)
misses = []
for path, after in spans.items():
    full = os.path.join(repo.encode(), path)
    try:
        with open(full, "rb") as f:
            now = hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        now = None
    if now != after:
        misses.append(path)
if ghosts or phantoms or misses:
    print(f"ghosts {len(ghosts)} phantoms {len(phantoms)} misses {len(misses)}")
    sys.exit(1)
print(f"reconciled: {len(changed)} changed paths")
PY
cat >"$work/make_repo.py" <<'PY'
import hashlib, json, os, subprocess, sys
repo, trace, files = sys.argv[1], sys.argv[2], int(sys.argv[3])
dirs = files // 100
for d in range(dirs):
    os.makedirs(f"{repo}/src/m{d:04}", exist_ok=True)
    for f in range(100):
        with open(f"{repo}/src/m{d:04}/f{f:03}.rs", "w") as fh:
            fh.write(f"// module {d} file {f}\npub fn f() -> u32 {{ {d * 100 + f} }}\n")
git = ["git", "-c", "user.name=b", "-c", "user.email=b@x", "-C", repo]
subprocess.run(["git", "init", "-q", repo], check=True)
subprocess.run(git + ["add", "-A"], check=True)
subprocess.run(git + ["commit", "-q", "-m", "base"], check=True)
# One pack, as a clone or a CI checkout has (5,000 fresh loose objects would
# make reading the base's blobs for the continuity check the slowest part).
subprocess.run(git + ["repack", "-adq"], check=True)
with open(trace, "w") as t:
    for i in range(1000):
        before = None
        if i < 900:
            d, f = i % dirs, (i // dirs) % 100
            path = f"src/m{d:04}/f{f:03}.rs"
            before = hashlib.sha256(f"// module {d} file {f}\npub fn f() -> u32 {{ {d * 100 + f} }}\n".encode()).hexdigest()
        else:
            path = f"new/n{i}.rs"
        os.makedirs(os.path.dirname(f"{repo}/{path}"), exist_ok=True)
        data = f"// changed {i}\n".encode()
        with open(f"{repo}/{path}", "wb") as fh:
            fh.write(data)
        span = f"{i:016x}"
        line = {"schema": 1, "span": span, "event": "open", "op": "write", "path": path, "before": before, "after": None, "status": "open", "error": None, "ts": "2026-11-30T00:00:00Z"}
        t.write(json.dumps(line) + "\n")
        line.update(event="close", after=hashlib.sha256(data).hexdigest(), status="closed")
        t.write(json.dumps(line) + "\n")
# git status's index has fresh stat data, as a user's would.
subprocess.run(git + ["status", "-s"], check=True, capture_output=True)
PY
cat >"$work/time.py" <<'PY'
import statistics, subprocess, sys, time
sides = {"reconcile": sys.argv[1].split("\x1f"), "git status": sys.argv[2].split("\x1f"), "python": sys.argv[3].split("\x1f")}
times = {k: [] for k in sides}
for rnd in range(8):
    for name, cmd in sides.items():
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if rnd:
            times[name].append(time.perf_counter() - start)
med = {k: statistics.median(v) * 1000 for k, v in times.items()}
print(" ".join(f"{k}={v:.1f}ms" for k, v in med.items()))
print(f"ratio reconcile/git-status {med['reconcile'] / med['git status']:.2f}x  python/reconcile {med['python'] / med['reconcile']:.2f}x")
PY
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(5000 50000 200000)
echo "$(nproc) cores; 1,000 changed paths; medians of 7 alternating rounds"
for n in "${sizes[@]}"; do
    repo=$work/repo$n
    python3 "$work/make_repo.py" "$repo" "$work/trace$n.jsonl" "$n"
    # Both sides keep stat data only for files older than a write can be
    # pending (git's racy-clean rule; agent-ledger's stat cache records a
    # file once its ctime and mtime are 60 s old), as a checkout made before
    # the agent ran is; neither is measured re-hashing a tree it just made.
    sleep "${SETTLE_SECS:-61}"
    git -C "$repo" status -s >/dev/null
    "$bin" reconcile --repo "$repo" --trace "$work/trace$n.jsonl" >/dev/null || { echo "reconcile did not agree at $n files"; exit 1; }
    python3 "$work/seed_reconcile.py" "$repo" "$work/trace$n.jsonl" >/dev/null || { echo "the Python reconcile did not agree at $n files"; exit 1; }
    sep=$'\x1f'
    echo "== $n tracked files"
    python3 "$work/time.py" \
        "$bin${sep}reconcile${sep}--repo${sep}$repo${sep}--trace${sep}$work/trace$n.jsonl" \
        "git${sep}-C${sep}$repo${sep}status${sep}--porcelain=v2${sep}-z${sep}-uall" \
        "python3${sep}$work/seed_reconcile.py${sep}$repo${sep}$work/trace$n.jsonl"
    rm -rf "$repo"
done
