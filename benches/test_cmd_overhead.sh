#!/usr/bin/env bash
# What `check --test-cmd` costs over `check` on a real repository (sympy,
# about 2,100 tracked files), with a test command that only writes a
# one-case report (its own time, T, is measured too). Three sides, run
# alternately ROUNDS times, medians printed:
#   plain  `check`, no test command;
#   cold   `check --test-cmd` whose base-revision run is not cached (the
#          command text differs every round): the base run and the
#          patched run both happen;
#   warm   `check --test-cmd` with the base run cached (the same command
#          as the round before): only the patched run happens.
# Target (issue: performance, item 3): cold - plain <= 1.1 * (2 T) + 1 s.
# The patch is real: the whole change of sympy's last merged pull request
# (`git diff M^1 M`) on its first parent.
#
#   SYMPY_GIT=/path/or/url bash benches/test_cmd_overhead.sh [ROUNDS]   (7)
# SYMPY_GIT defaults to https://github.com/sympy/sympy.git. Set
# AGENT_LEDGER_BIN to measure a binary you already built.
set -euo pipefail
if [ -n "${AGENT_LEDGER_BIN:-}" ]; then
    bin=$AGENT_LEDGER_BIN
else
    source "$(dirname "$0")/common.sh"
fi
rounds=${1:-7}
src=${SYMPY_GIT:-https://github.com/sympy/sympy.git}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone --quiet --no-checkout "$src" "$work/repo"
repo=$work/repo
g() { git -C "$repo" "$@"; }
merge=$(g rev-list --first-parent --merges HEAD -n 1)
base=$(g rev-parse "$merge^1")
g diff --binary "$base" "$merge" > "$work/patch.diff"
cat > "$work/agent-ledger.toml" <<'TOML'
schema = 1
[fixtures]
roots = ["data"]
[tests]
globs = ["**/tests/test_*.py", "**/tests/__init__.py"]
TOML
report='printf "<testsuite><testcase classname=\"t\" name=\"ok\"/></testsuite>" > "$AGENT_LEDGER_JUNIT"'
cache=$work/cache
ledger=$work/ledger
n=0
# check ARGS...: one captured trial checked; prints its wall time in ms.
check() {
    n=$((n + 1))
    "$bin" --ledger "$ledger" capture --run "r$n" --body "$work/patch.diff" >/dev/null 2>&1
    local start end
    start=$(date +%s%N)
    (cd "$repo" && "$bin" --ledger "$ledger" check --run "r$n" --base "$base" \
        --config "$work/agent-ledger.toml" --cache-dir "$cache" "$@" >/dev/null 2>&1) || true
    end=$(date +%s%N)
    echo $(( (end - start) / 1000000 ))
}
# T: the test command's own time, in a shell like the sandbox's.
t_start=$(date +%s%N)
for _ in $(seq 10); do AGENT_LEDGER_JUNIT=$work/t.xml sh -c "$report"; done
t_ms=$(( ($(date +%s%N) - t_start) / 10000000 ))
# Warm-up: compiles the plugins once into the cache, fills the base run.
check >/dev/null
check --test-cmd "$report" >/dev/null
plain=() cold=() warm=()
for r in $(seq "$rounds"); do
    plain+=("$(check)")
    cold+=("$(check --test-cmd "$report # round $r")")
    warm+=("$(check --test-cmd "$report # round $r")")
done
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
p=$(median "${plain[@]}") c=$(median "${cold[@]}") w=$(median "${warm[@]}")
echo "sympy @ ${base:0:12}: $(g ls-tree -r --name-only "$base" | wc -l) files; T = ${t_ms} ms"
echo "check (no test command):        ${p} ms"
echo "check --test-cmd, base run:     ${c} ms  (+$((c - p)) ms)"
echo "check --test-cmd, base cached:  ${w} ms  (+$((w - p)) ms)"
target=$(( (22 * t_ms + 10) / 10 + 1000 ))
echo "overhead with the base run: $((c - p)) ms; target 1.1 x 2T + 1 s = ${target} ms"
