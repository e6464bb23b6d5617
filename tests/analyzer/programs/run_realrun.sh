#!/usr/bin/env bash
# Runs a real-run test program under the profiler, analyzes its trace, and
# checks the JSON against the program's own timestamps. Every check script
# is given the run's Chrome trace; realrun.py reads it where a check needs a
# stamped call's own enter and leave.
# Usage: run_realrun.sh MPIEXEC PROF_RUN PROF_ANALYZE PROGRAM CHECK_SCRIPT WORK_DIR RANKS
set -euo pipefail
if [ $# -ne 7 ]; then
  echo "usage: run_realrun.sh MPIEXEC PROF_RUN PROF_ANALYZE PROGRAM CHECK_SCRIPT WORK_DIR RANKS" >&2
  exit 2
fi
mpiexec=$1 prof_run=$2 analyze=$3 program=$4 check=$5 work=$6 ranks=$7
rm -rf "$work" && mkdir -p "$work/stamps"
# timeout -k: a hung run must not leave ranks busy-polling the machine.
REALRUN_STAMPS="$work/stamps" PROF_OUTPUT="$work/trace" \
  timeout -k 5 100 "$mpiexec" -n "$ranks" "$prof_run" "$program"
"$analyze" "$work/trace" --json "$work/report.json" -o "$work/report.txt" \
  --chrome-trace "$work/trace.json" --no-progress
python3 "$check" "$work/report.json" "$work/stamps" "$work/trace.json"
