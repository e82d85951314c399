# Sourced by the bench scripts: builds the release binary and times commands.
# Sets `root` (the repository), `target` (cargo's target dir) and `bin`.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
bin=$target/release/agent-ledger
rustup target add wasm32-wasip2 >/dev/null
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin agent-ledger

# best_us CMD...: the best wall time, in microseconds, of 5 runs after one
# warm-up run. The command's output and exit code are ignored.
best_us() {
    local best=999999999999 start end us
    "$@" >/dev/null 2>&1 || true
    for _ in 1 2 3 4 5; do
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        end=$(date +%s%N)
        us=$(( (end - start) / 1000 ))
        (( us < best )) && best=$us
    done
    echo "$best"
}
