#!/usr/bin/env bash
# Peak memory of `capture` against the size of the body it judges (target:
# at most 4x the body). Two bodies: a small `GIT binary patch` literal that
# inflates to 50 MB (it must be counted, never held), and a 64 MB text diff.
# Prints each body's size, capture's peak RSS (GNU time), and the peak above
# the process's own baseline (a tiny body) as a multiple of the body size.
# Set AGENT_LEDGER_BIN to measure a binary you already built.
set -euo pipefail
if [ -n "${AGENT_LEDGER_BIN:-}" ]; then
    bin=$AGENT_LEDGER_BIN
else
    source "$(dirname "$0")/common.sh"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q gen
head -c $((50 << 20)) /dev/zero > gen/zeros.bin
seq 1 $((6 << 20)) | sed 's/^/line /' > gen/big.txt
git -C gen add zeros.bin big.txt
git -C gen diff --cached --binary -- zeros.bin > binary.diff
git -C gen diff --cached -- big.txt > text.diff
printf 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n' > tiny.diff
base=$( { /usr/bin/time -f %M "$bin" capture --run r-tiny --body tiny.diff --ledger ledger >/dev/null; } 2>&1 | tail -1)
echo "baseline (a 40-byte body): peak RSS ${base} KiB"
for body in binary.diff text.diff; do
    size=$(stat -c %s "$body")
    kb=$( { /usr/bin/time -f %M "$bin" capture --run "r-$body" --body "$body" --ledger ledger >/dev/null; } 2>&1 | tail -1)
    echo "$body: body $((size / 1024)) KiB, peak RSS ${kb} KiB, above baseline $(awk "BEGIN { printf \"%.2f\", ($kb - $base) * 1024 / $size }")x the body"
done
