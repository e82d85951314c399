#!/usr/bin/env bash
# `agent-ledger verify` (no replay) over 100 and 1,000 archived runs of the
# demo repository: runs per second and peak memory (max RSS) for each, to
# show memory stays flat as the count grows.
set -euo pipefail
source "$(dirname "$0")/common.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/demo
cp -r "$root/fixtures/repos/demo/." "$repo/"
CARGO_TARGET_DIR=$target/wasm-test-plugins cargo build --release --locked --quiet --target wasm32-wasip2 \
    -p retry_oracle --manifest-path "$root/plugins/Cargo.toml"
cp "$target/wasm-test-plugins/wasm32-wasip2/release/retry_oracle.wasm" "$repo/oracles/"
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=b -c user.email=b@x commit -q -m base
patches=(good deletes-test touches-fixture weakens-assertion)
echo "generating 1,000 checked runs..."
for i in $(seq -w 1 1000); do
    p=${patches[$((10#$i % 4))]}
    (cd "$repo" && "$bin" capture --run "run-$i" --body "$root/fixtures/patches/$p.diff" >/dev/null \
        && "$bin" check --run "run-$i" --base HEAD --cache-dir "$work/cache" >/dev/null) || true
done
measure() { # N: verify the first N runs, print runs/s and max RSS
    local n=$1 args=() start end
    for i in $(seq 1 "$n"); do args+=(--run "run-$(printf %04d "$i")"); done
    start=$(date +%s%N)
    /usr/bin/time -f "%M" -o "$work/rss" "$bin" --ledger "$repo/.agent-ledger" verify "${args[@]}" >"$work/out" || { tail -3 "$work/out"; exit 1; }
    end=$(date +%s%N)
    python3 -c "import sys; ms=($end-$start)/1e6; print(f'verify {$n:>5} runs: {ms:8.0f} ms  {$n/ms*1000:7.0f} runs/s  peak RSS {int(open(\"$work/rss\").read().split()[-1])/1024:.1f} MiB')"
}
measure 100
measure 1000
