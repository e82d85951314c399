#!/usr/bin/env bash
# agent-ledger on real commits of a public repository (sympy, about 2,100
# tracked files), three figures measured in the same run:
#   1. one `check` next to `git worktree add` + `git apply` + `git worktree
#      remove` of the same patch (best of 5; target: within 1.3x);
#   2. `batch` over TRIALS trials on BASES bases next to TRIALS sequential
#      `check` processes (target: batch at least 3x faster on 2 cores), and
#      the peak RSS of each;
#   3. that batch wrote byte for byte the records the `check` calls wrote
#      (every file of both ledgers compared; a difference fails the script).
# The patches are real: the whole change of each of the last TRIALS merged
# pull requests (`git diff M^1 M`); the bases are the first parents of every
# (TRIALS/BASES)th of those merges, so each patch is tried on a base a few
# merges away from its own (most apply, some do not: both are real trials).
#
#   SYMPY_GIT=/path/or/url bash benches/sympy.sh [TRIALS] [BASES]   (200 20)
# SYMPY_GIT defaults to https://github.com/sympy/sympy.git. Set
# AGENT_LEDGER_BIN to measure a binary you already built.
set -euo pipefail
if [ -n "${AGENT_LEDGER_BIN:-}" ]; then
    bin=$AGENT_LEDGER_BIN
else
    source "$(dirname "$0")/common.sh"
fi
trials=${1:-200}
bases=${2:-20}
per=$((trials / bases))
[ $((per * bases)) -eq "$trials" ] || { echo "TRIALS must be a multiple of BASES" >&2; exit 64; }
src=${SYMPY_GIT:-https://github.com/sympy/sympy.git}
work=$(mktemp -d)
trap 'git -C "$work/repo" worktree prune 2>/dev/null || true; rm -rf "$work"' EXIT
git clone --quiet --no-checkout "$src" "$work/repo"
repo=$work/repo
g() { git -C "$repo" "$@"; }

mapfile -t merges < <(g rev-list --first-parent --merges HEAD -n "$trials")
[ "${#merges[@]}" -eq "$trials" ] || { echo "only ${#merges[@]} merges in $src" >&2; exit 66; }
# A configuration outside the repository (sympy has none): its `data`
# directory as the fixture root, sympy's test layout as the test globs.
cat > "$work/agent-ledger.toml" <<'TOML'
schema = 1
[fixtures]
roots = ["data"]
[tests]
globs = ["**/tests/test_*.py", "**/tests/__init__.py"]
TOML
: > "$work/manifest.jsonl"
: > "$work/trials.tsv"
for t in $(seq 0 $((trials - 1))); do
    m=${merges[$t]}
    base=$(g rev-parse "${merges[$(( (t / per) * per ))]}^1")
    g diff --binary "$m^1" "$m" > "$work/t$t.diff"
    run=$(printf 'pr%03d' "$t")
    printf '%s\t%s\t%s\n' "$run" "$t" "$base" >> "$work/trials.tsv"
    printf '{"run": "%s", "body": "t%s.diff", "repo": "repo", "base": "%s", "config": "agent-ledger.toml"}\n' \
        "$run" "$t" "$base" >> "$work/manifest.jsonl"
done

# The same receipts in both ledgers (capture is not what is compared).
while IFS=$'\t' read -r run t _; do
    "$bin" --ledger "$work/seq" capture --run "$run" --body "$work/t$t.diff" >/dev/null 2>&1 || true
done < "$work/trials.tsv"
cp -a "$work/seq" "$work/batch"
cache=$work/cache
# Warm the compile cache once, so neither side pays for compiling.
"$bin" --ledger "$work/warm" batch --manifest "$work/manifest.jsonl" --cache-dir "$cache" \
    --partition count:1/"$trials" >/dev/null 2>&1 || true

# 1. One check next to what any replay must do at least.
read -r run0 t0 base0 < "$work/trials.tsv"
check_us=$(best=999999999999
    for i in 0 1 2 3 4 5; do
        rm -rf "$work/one"
        cp -a "$work/seq" "$work/one"
        s=$(date +%s%N)
        "$bin" --ledger "$work/one" check --repo "$repo" --run "$run0" --base "$base0" \
            --config "$work/agent-ledger.toml" --cache-dir "$cache" >/dev/null 2>&1 || true
        us=$(( ($(date +%s%N) - s) / 1000 ))
        [ "$i" -gt 0 ] && [ "$us" -lt "$best" ] && best=$us
    done
    echo "$best")
git_us=$(best=999999999999
    for i in 0 1 2 3 4 5; do
        s=$(date +%s%N)
        g worktree add --quiet --detach "$work/wt" "$base0"
        git -C "$work/wt" apply "$work/t$t0.diff" 2>/dev/null || true
        g worktree remove --force "$work/wt"
        us=$(( ($(date +%s%N) - s) / 1000 ))
        [ "$i" -gt 0 ] && [ "$us" -lt "$best" ] && best=$us
    done
    echo "$best")

# 2. Sequential checks, then one batch, from the same receipts.
seq_rss=0
start=$(date +%s%N)
while IFS=$'\t' read -r run _ base; do
    /usr/bin/time -f '%M' -o "$work/rss1" "$bin" --ledger "$work/seq" check --repo "$repo" \
        --run "$run" --base "$base" --config "$work/agent-ledger.toml" --cache-dir "$cache" \
        >/dev/null 2>&1 || true
    r=$(tail -n 1 "$work/rss1")
    [ "$r" -gt "$seq_rss" ] && seq_rss=$r
done < "$work/trials.tsv"
seq_ms=$(( ($(date +%s%N) - start) / 1000000 ))
start=$(date +%s%N)
/usr/bin/time -f '%M' -o "$work/rss" "$bin" --ledger "$work/batch" batch \
    --manifest "$work/manifest.jsonl" --cache-dir "$cache" >/dev/null 2>&1 || true
batch_ms=$(( ($(date +%s%N) - start) / 1000000 ))

# 3. Every record the same.
(cd "$work/seq" && find . -type f | sort) > "$work/seq.files"
(cd "$work/batch" && find . -type f | sort) > "$work/batch.files"
differ=0
if ! cmp -s "$work/seq.files" "$work/batch.files"; then
    echo "the ledgers hold different files:"; diff "$work/seq.files" "$work/batch.files" | head -20
    differ=1
fi
while read -r f; do
    [ -f "$work/batch/$f" ] || continue
    cmp -s "$work/seq/$f" "$work/batch/$f" || { echo "differs: $f"; differ=1; }
done < "$work/seq.files"

verdicts=$(grep -h '"verdict":' "$work"/batch/verdicts/*.json | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "repository: sympy at $(g rev-parse --short HEAD), $(g ls-tree -r --name-only HEAD | wc -l) files; $(nproc) cores"
echo "one check: ${check_us} us; git worktree add + apply + remove: ${git_us} us"
awk -v c="$check_us" -v g="$git_us" 'BEGIN { printf "check / git: %.2fx (target: within 1.3x)\n", c / g }'
echo "$trials sequential checks: ${seq_ms} ms, peak RSS of one ${seq_rss} KiB"
echo "batch of $trials on $bases bases (-j $(nproc)): ${batch_ms} ms, peak RSS $(tail -n 1 "$work/rss") KiB; verdicts:${verdicts}"
awk -v s="$seq_ms" -v b="$batch_ms" 'BEGIN { printf "speed-up: %.2fx (target: at least 3x)\n", s / b }'
echo "records: $(wc -l < "$work/seq.files") files in each ledger, $([ "$differ" = 0 ] && echo identical || echo DIFFERENT)"
exit "$differ"
