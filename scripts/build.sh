#!/usr/bin/env bash
# Configures and builds prof into build/ (and installs it into install/).
# Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j "$(nproc)"
cmake --install build --prefix "$PWD/install" > /dev/null
