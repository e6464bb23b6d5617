#!/usr/bin/env bash
# Configures and builds prof into build/ (and installs it into install/).
# Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
# Under CI (CI set, as .ci/run is run) a compiler warning fails the build;
# elsewhere it is only shown. Given each time: the cache would keep the last.
werror=OFF
if [ -n "${CI:-}" ]; then werror=ON; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROF_WARNINGS_AS_ERRORS=$werror "$@"
cmake --build build -j "$(nproc)"
cmake --install build --prefix "$PWD/install" > /dev/null
