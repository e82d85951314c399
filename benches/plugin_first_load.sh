#!/usr/bin/env bash
# A plugin's first load against `wasmtime compile` of the same component
# under the same settings (see benches/plugin_first_load.rs): the built-ins,
# and the Python and JavaScript example plugins (built by
# the plugin_examples tests into target/plugin-examples).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
rustup target add wasm32-wasip2 >/dev/null
examples=$target/plugin-examples
if [ ! -f "$examples/python/build/no_test_file_deleted.wasm" ] || [ ! -f "$examples/js/build/no_test_file_deleted.wasm" ]; then
    bash "$root/.ci/plugin-toolchains"
    cargo test --quiet --manifest-path "$root/Cargo.toml" -p agent-ledger --test all plugin_examples >/dev/null
fi
cargo bench --quiet --manifest-path "$root/Cargo.toml" -p agent-ledger --bench plugin_first_load -- \
    "$examples/python/build/no_test_file_deleted.wasm" "$examples/js/build/no_test_file_deleted.wasm" "$@"
