#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# (Standard input from /dev/null: mpiexec forwards its input to rank 0, and
# a test's rank that exits before reading it, with input waiting, makes
# mpiexec die of SIGPIPE, exit status 141, profiled or not.)
ctest --test-dir build --output-on-failure --timeout 300 -j 1 </dev/null
