#!/usr/bin/env bash
# Runs shifted_wait under the profiler at 2 ranks with the given settings (one
# rank's clock shifted by PROF_TEST_CLOCK_SHIFT_NS), analyzes it, and checks rank
# 0's late-sender wait against the program's own CLOCK_MONOTONIC instants.
# MODE "right": the wait must match (clocks synchronized); "wrong": it must not
# (PROF_SYNC=none: shows that the check catches unsynchronized clocks).
# Usage: run_shifted_wait.sh MPIEXEC PROF_RUN PROF_ANALYZE PROF_DUMP PROGRAM WORK_DIR MODE [VAR=VALUE...]
set -euo pipefail
mpiexec=$1 prof_run=$2 analyze=$3 dump=$4 program=$5 work=$6 mode=$7
shift 7
here=$(dirname "$0")
rm -rf "$work" && mkdir -p "$work"
env "$@" PROF_OUTPUT="$work/trace" "$mpiexec" -n 2 "$prof_run" "$program" > "$work/program.txt"
"$analyze" "$work/trace" --json "$work/report.json" -o "$work/report.txt" --no-progress
"$dump" --no-events "$work/trace" > "$work/dump.txt"
python3 "$here/check_shifted_wait.py" "$mode" "$work/report.json" "$work/program.txt" "$work/dump.txt"
