#!/usr/bin/env bash
# First load of a Python property component (componentize-py 0.25.1,
# about 18 MB) under the sandbox's compiler settings and the alternatives
# (one compiler thread; Cranelift without optimisation; the single-pass
# register allocator), as ratios measured in the same
# run, then whether each keeps fuel metering and the epoch backstop. The
# component and the componentize-py it needs are built under the target
# dir (target/plugin-bench), never committed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
out=$target/plugin-bench
mkdir -p "$out/app"
rustup target add wasm32-wasip2 >/dev/null

if [ ! -x "$out/venv/bin/componentize-py" ]; then
    python3 -m venv "$out/venv"
    "$out/venv/bin/pip" install --quiet componentize-py==0.25.1
fi
cat > "$out/app/app.py" <<'PY'
from wit_world import exports
from wit_world.imports.agent_ledger_property_types import (
    Info,
    Outcome,
    Outcome_Holds,
    Trial,
)


class Property(exports.Property):
    def describe(self) -> Info:
        return Info(name="py_bench", version="0.1.0", summary="holds")

    def check(self, trial: Trial) -> Outcome:
        return Outcome_Holds([])
PY
if [ ! -f "$out/python.wasm" ] || [ "$root/wit/property.wit" -nt "$out/python.wasm" ] || [ "$0" -nt "$out/python.wasm" ]; then
    (cd "$out/app" && "$out/venv/bin/componentize-py" -d "$root/wit" -w plugin \
        componentize app -o "$out/python.wasm" >/dev/null)
fi

# Not Winch: wasmtime 48 documents epoch interruption, the sandbox's
# wall-clock backstop, as not compatible with it.
cargo bench --quiet --manifest-path "$root/Cargo.toml" -p agent-ledger \
    --bench plugin_compile -- "$out/python.wasm" "$@"
