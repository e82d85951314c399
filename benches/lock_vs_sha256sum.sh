#!/usr/bin/env bash
# `agent-ledger lock` next to `find ROOT -type f -print0 | xargs -0 sha256sum`
# on the same generated tree (10,000 files of 1 KiB plus three of 24 MiB),
# both warm, best of 5 runs each, on whatever cores the machine has.
# Prints both times and the ratio (target: lock at least 1.5 times as fast).
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
for b in range(3):
    with open(f"{root}/big{b}.bin", "wb") as fh:
        fh.write(rng.randbytes(24 << 20))
PY
cd "$work/tree"
"$bin" --ledger "$work/ledger" capture --run r0 --body "$root/fixtures/patches/good.diff" >/dev/null
"$bin" --ledger "$work/ledger" lock --run r0 --root fixtures >/dev/null
lockfile=$work/ledger/fixtures/r0.lock.json

lock_us=$(best_us "$bin" lock --compare "$lockfile")
sum_us=$(best_us sh -c 'find fixtures -type f -print0 | xargs -0 sha256sum')
echo "tree: 10,000 x 1 KiB + 3 x 24 MiB on $(nproc) cores"
echo "agent-ledger lock --compare: $((lock_us / 1000)) ms"
echo "find | xargs sha256sum:      $((sum_us / 1000)) ms"
python3 -c "print(f'ratio (sha256sum / lock): {$sum_us / max($lock_us, 1):.2f}x')"
