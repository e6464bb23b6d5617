#!/usr/bin/env bash
# Runs known_waits under the profiler at 2 ranks, analyzes it, checks the JSON
# against the program's stamps.
# Usage: run_known_waits.sh MPIEXEC PROF_RUN PROF_ANALYZE PROGRAM WORK_DIR
set -euo pipefail
mpiexec=$1 prof_run=$2 analyze=$3 program=$4 work=$5
here=$(dirname "$0")
rm -rf "$work" && mkdir -p "$work/stamps"
REALRUN_STAMPS="$work/stamps" PROF_OUTPUT="$work/trace" \
  timeout -k 5 50 "$mpiexec" -n 2 "$prof_run" "$program"
"$analyze" "$work/trace" --json "$work/report.json" -o "$work/report.txt" \
  --chrome-trace "$work/trace.json" --no-progress
python3 "$here/check_known_waits.py" "$work/report.json" "$work/stamps" "$work/trace.json"
