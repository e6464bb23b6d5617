#!/usr/bin/env bash
# Runs compare_runs twice at 2 ranks under the profiler, A with PROF_BCAST=native,
# B with PROF_BCAST=shm, a UCX variable, a planted 1 s slowdown in interval 2
# and interval 3 only in B; checks each trace's `run` record and the comparison.
# Usage: run_compare.sh MPIEXEC PROF_RUN PROF_ANALYZE PROGRAM WORK_DIR
set -euo pipefail
mpiexec=$1 prof_run=$2 analyze=$3 program=$4 work=$5
here=$(dirname "$0")
rm -rf "$work" && mkdir -p "$work"
PROF_BCAST=native PROF_OUTPUT="$work/a" COMPARE_FACTS="$work/facts" \
  timeout -k 5 50 "$mpiexec" -n 2 "$prof_run" "$program"
PROF_BCAST=shm PROF_OUTPUT="$work/b" UCX_LOG_LEVEL=warn COMPARE_SLOW_MS=1000 COMPARE_EXTRA=1 \
  timeout -k 5 50 "$mpiexec" -n 2 "$prof_run" "$program"
"$analyze" "$work/a" --json "$work/a.json" -o "$work/a.txt" --no-progress --no-index
"$analyze" --compare "$work/a" "$work/b" --json "$work/compare.json" -o "$work/compare.txt" --no-progress --no-index
# A missing trace directory: named, exit status 2.
status=0
"$analyze" --compare "$work/a" "$work/missing" --no-progress 2> "$work/missing.err" || status=$?
[ "$status" -eq 2 ] || { echo "--compare with a missing directory exited $status, not 2"; exit 1; }
grep -q "$work/missing: No such file or directory" "$work/missing.err" || { cat "$work/missing.err"; exit 1; }
python3 "$here/check_compare.py" "$work" "$program"
