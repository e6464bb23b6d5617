#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 300 -j 1
