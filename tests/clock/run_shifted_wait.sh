#!/usr/bin/env bash
# Runs shifted_wait under the profiler at RANKS ranks with the given settings
# (some ranks' or pretend nodes' clocks shifted by PROF_TEST_CLOCK_SHIFT_NS),
# analyzes it, and checks each receiver's late-sender wait against the
# program's own CLOCK_MONOTONIC instants.
# MODE "right": the waits must match (clocks synchronized); "wrong": one must
# not (PROF_SYNC=none: shows that the check catches unsynchronized clocks).
# Usage: run_shifted_wait.sh MPIEXEC PROF_RUN PROF_ANALYZE PROF_DUMP PROGRAM WORK_DIR RANKS MODE [VAR=VALUE...]
set -euo pipefail
mpiexec=$1 prof_run=$2 analyze=$3 dump=$4 program=$5 work=$6 ranks=$7 mode=$8
shift 8
here=$(dirname "$0")
rm -rf "$work" && mkdir -p "$work"
env "$@" PROF_OUTPUT="$work/trace" "$mpiexec" -n "$ranks" "$prof_run" "$program" > "$work/program.txt"
"$analyze" "$work/trace" --json "$work/report.json" -o "$work/report.txt" --no-progress
"$dump" --no-events "$work/trace" > "$work/dump.txt"
python3 "$here/check_shifted_wait.py" "$mode" "$work/report.json" "$work/program.txt" "$work/dump.txt"
