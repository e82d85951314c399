#!/usr/bin/env bash
# `batch` over TRIALS trials spread over BASES bases of one ~2,000-file
# repository, next to the same trials as TRIALS sequential `capture` +
# `check` processes. Target (issue: evaluation scale): batch at least 3x
# faster on 2 cores. Prints both wall times, the ratio and batch's peak RSS.
#   bash benches/batch_vs_check.sh [TRIALS] [BASES]     (default 200 20)
# Set AGENT_LEDGER_BIN to measure a binary you already built.
set -euo pipefail
if [ -n "${AGENT_LEDGER_BIN:-}" ]; then
    bin=$AGENT_LEDGER_BIN
    root=$(cd "$(dirname "$0")/.." && pwd)
else
    source "$(dirname "$0")/common.sh"
fi
trials=${1:-200}
bases=${2:-20}
cargo fetch --quiet --manifest-path "$root/Cargo.toml"
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | sed -n 1p)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir -p "$repo"
count=0
for crate in "$src"*/; do
    cp -r "$crate" "$repo/$(basename "$crate")"
    count=$((count + $(find "$crate" -type f | wc -l)))
    [ "$count" -ge 2000 ] && break
done
mkdir -p "$repo/tests/fixtures"
echo '{"case": 1}' > "$repo/tests/fixtures/case.json"
printf 'schema = 1\n[fixtures]\nroots = ["tests/fixtures"]\n' > "$repo/agent-ledger.toml"
g() { git -C "$repo" -c user.name=b -c user.email=b@x "$@"; }
g init -q
g add -A
g commit -q -m base
# BASES commits, each changing one file: the bases of the trials.
mapfile -t rs < <(g ls-files '*.rs' | grep -v '/tests/' | head -n $((bases + trials)))
for b in $(seq 1 "$bases"); do
    echo "// base $b" >> "$repo/${rs[$b]}"
    g commit -q -am "base $b"
    g rev-parse HEAD >> "$work/bases"
done
mapfile -t revs < "$work/bases"
# TRIALS patches, TRIALS/BASES per base, each adding a comment to one file.
: > "$work/manifest.jsonl"
for t in $(seq 0 $((trials - 1))); do
    b=$((t % bases))
    rev=${revs[$b]}
    file=${rs[$((bases + 1 + t % (${#rs[@]} - bases - 1)))]}
    g checkout -q "$rev"
    printf '// trial %s\n' "$t" >> "$repo/$file"
    g diff > "$work/t$t.diff"
    g checkout -q -- "$file"
    printf '{"run": "t%03d", "body": "t%s.diff", "repo": "repo", "base": "%s", "captured_at": "2026-11-30T00:00:00Z"}\n' \
        "$t" "$t" "$rev" >> "$work/manifest.jsonl"
done
g checkout -q -
cache=$work/cache
# Warm the compile cache once, so neither side pays for compiling.
"$bin" --ledger "$work/warm" batch --manifest "$work/manifest.jsonl" --cache-dir "$cache" \
    --partition count:1/$trials >/dev/null 2>&1 || true

start=$(date +%s%N)
for t in $(seq 0 $((trials - 1))); do
    run=$(printf 't%03d' "$t")
    rev=${revs[$((t % bases))]}
    "$bin" --ledger "$work/seq" capture --run "$run" --body "$work/t$t.diff" >/dev/null 2>&1 || true
    "$bin" --ledger "$work/seq" check --repo "$repo" --run "$run" --base "$rev" --cache-dir "$cache" >/dev/null 2>&1 || true
done
seq_ms=$(( ($(date +%s%N) - start) / 1000000 ))

start=$(date +%s%N)
/usr/bin/time -f '%M' -o "$work/rss" "$bin" --ledger "$work/batch" batch \
    --manifest "$work/manifest.jsonl" --cache-dir "$cache" >/dev/null 2>&1 || true
batch_ms=$(( ($(date +%s%N) - start) / 1000000 ))
verdicts_seq=$(grep -h '"verdict":' "$work"/seq/verdicts/*.json | sort | uniq -c | tr -s ' ' | tr '\n' ';')
verdicts_batch=$(grep -h '"verdict":' "$work"/batch/verdicts/*.json | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "repository: $(g ls-files | wc -l) files; $trials trials over $bases bases; $(nproc) cores"
echo "sequential capture+check: ${seq_ms} ms  verdicts:${verdicts_seq}"
echo "batch (-j $(nproc)):          ${batch_ms} ms  verdicts:${verdicts_batch}  peak RSS $(cat "$work/rss") KiB"
awk -v s="$seq_ms" -v b="$batch_ms" 'BEGIN { printf "speed-up: %.2fx (target: at least 3x)\n", s / b }'
