#!/usr/bin/env bash
# `agent-ledger lock --compare` next to `find ROOT -type f -print0 | xargs -0
# sha256sum` on the same generated tree: 10,000 files of 1 KiB in 100
# directories plus four of 32 MiB (128 MiB), on whatever cores the machine
# has. Both run alternately, 7 rounds after a warm-up (page cache warm);
# prints the medians, the ratio (target: lock at least 6 times as fast),
# lock's own split between walking and hashing (AGENT_LEDGER_PROFILE=1),
# and the floor: one sha256 pass over the 128 MiB per core, in process.
set -euo pipefail
source "$(dirname "$0")/common.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work/tree/fixtures" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(7)
for d in range(100):
    os.makedirs(f"{root}/d{d:03}", exist_ok=True)
    for f in range(100):
        with open(f"{root}/d{d:03}/f{f:03}.json", "wb") as fh:
            fh.write(rng.randbytes(1024))
for b in range(4):
    with open(f"{root}/big{b}.bin", "wb") as fh:
        fh.write(rng.randbytes(32 << 20))
PY
cd "$work/tree"
"$bin" --ledger "$work/ledger" capture --run r0 --body "$root/fixtures/patches/good.diff" >/dev/null
"$bin" --ledger "$work/ledger" lock --run r0 --root fixtures >/dev/null
lockfile=$work/ledger/fixtures/r0.lock.json
"$bin" lock --compare "$lockfile" >/dev/null || { echo "lock --compare found drift"; exit 1; }

python3 - "$bin" "$lockfile" <<'PY'
import statistics, subprocess, sys, time
bin, lockfile = sys.argv[1], sys.argv[2]
sides = {
    "lock": [bin, "lock", "--compare", lockfile],
    "sha256sum": ["sh", "-c", "find fixtures -type f -print0 | xargs -0 sha256sum"],
}
times = {k: [] for k in sides}
for rnd in range(8):
    for name, cmd in sides.items():
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        if rnd:
            times[name].append(time.perf_counter() - start)
med = {k: statistics.median(v) * 1000 for k, v in times.items()}
ratios = [s / l for s, l in zip(times["sha256sum"], times["lock"])]
print(f"tree: 10,000 x 1 KiB + 4 x 32 MiB; medians of 7 alternating rounds")
print(f"agent-ledger lock --compare: {med['lock']:.1f} ms")
print(f"find | xargs sha256sum:      {med['sha256sum']:.1f} ms")
print(f"ratio (sha256sum / lock), median of rounds: {statistics.median(ratios):.2f}x  (target 6)")
split = subprocess.run([bin, "lock", "--compare", lockfile], env={"AGENT_LEDGER_PROFILE": "1", "PATH": "/usr/bin:/bin"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
print("lock's phases:", " ".join(l for l in split.splitlines() if l.startswith("profile:")))
PY
