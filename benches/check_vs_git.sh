#!/usr/bin/env bash
# `agent-ledger check` on a larger real repository next to what any replay
# must do at least: `git worktree add` of the base plus `git apply` of the
# patch (then `git worktree remove`). The repository is real code: the
# vendored sources of this project's own dependencies (cargo's registry
# copy), about 5,000 files. Best of 5 runs each; prints the ratio.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cargo fetch --quiet --manifest-path "$root/Cargo.toml"
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | sed -n 1p)
work=$(mktemp -d)
trap 'git -C "$work/repo" worktree prune 2>/dev/null || true; rm -rf "$work"' EXIT
repo=$work/repo
mkdir -p "$repo"
count=0
for crate in "$src"*/; do
    name=$(basename "$crate")
    cp -r "$crate" "$repo/$name"
    count=$((count + $(find "$crate" -type f | wc -l)))
    [ "$count" -ge 5000 ] && break
done
fixture_root=$(cd "$repo" && ls -d */tests 2>/dev/null | sed -n 1p)
cat > "$repo/agent-ledger.toml" <<TOML
schema = 1
[fixtures]
roots = ["$fixture_root"]
TOML
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=b -c user.email=b@x commit -q -m base
files=$(git -C "$repo" ls-files | wc -l)
edited=$(git -C "$repo" ls-files '*.rs' | grep -v '/tests/' | sed -n 1p)
sed -i '1s/^/\/\/ patched by the benchmark\n/' "$repo/$edited"
git -C "$repo" diff > "$work/patch.diff"
git -C "$repo" checkout -q -- "$edited"

cache=$work/cache
i=0
check() {
    i=$((i + 1))
    "$bin" --ledger "$work/ledger" capture --run "r$i" --body "$work/patch.diff" >/dev/null
    "$bin" --ledger "$work/ledger" check --run "r$i" --repo "$repo" --base HEAD --cache-dir "$cache" >/dev/null
}
worktree_apply() {
    git -C "$repo" worktree add -q --detach "$work/wt" HEAD
    git -C "$work/wt" apply "$work/patch.diff"
    git -C "$repo" worktree remove --force "$work/wt"
}
check_us=$(best_us check)
git_us=$(best_us worktree_apply)
verdict=$("$bin" --ledger "$work/ledger" classify --run r1 --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])' || true)
echo "repository: $files files (real crate sources), fixture root $fixture_root, $(nproc) cores"
echo "agent-ledger capture + check:       $((check_us / 1000)) ms (verdict: $verdict)"
echo "git worktree add + git apply:       $((git_us / 1000)) ms"
python3 -c "print(f'ratio (check / worktree+apply): {$check_us / max($git_us, 1):.2f}x')"
