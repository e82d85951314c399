#!/bin/sh
# Builds build/no_test_file_deleted.wasm from app.py: the one build command.
#
# The first run makes a virtual environment in build/venv and installs the
# pinned componentize-py there (requirements.txt, hashes checked); later
# runs reuse it. Set PLUGIN_VENV to use a virtual environment elsewhere (it
# is made and filled there the same way).
set -eu
cd "$(dirname "$0")"
venv="${PLUGIN_VENV:-build/venv}"
# The copy of requirements.txt in the venv says what it holds.
if ! cmp -s requirements.txt "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        --require-hashes --no-deps -r requirements.txt
    cp requirements.txt "$venv/requirements.txt"
fi
mkdir -p build
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/componentize-py" -d wit -w plugin \
    componentize app -o build/no_test_file_deleted.wasm
