#!/usr/bin/env bash
# The profiler must not change an application's results or exit code.
# Usage: check_same_output.sh MPIEXEC PROF_RUN TRACE_DIR PROGRAM ARGS...
set -uo pipefail
mpiexec=$1 prof_run=$2 trace=$3; shift 3
rm -rf "$trace"
plain=$("$mpiexec" -n 2 "$@"); plain_rc=$?
profiled=$(PROF_OUTPUT="$trace" "$mpiexec" -n 2 "$prof_run" "$@"); profiled_rc=$?
echo "plain (rc $plain_rc): $plain"
echo "profiled (rc $profiled_rc): $profiled"
[ "$plain_rc" -eq "$profiled_rc" ] || { echo "exit codes differ"; exit 1; }
[ "$plain" == "$profiled" ] || { echo "outputs differ"; exit 1; }
[ -f "$trace/rank-00000.prof" ] && [ -f "$trace/rank-00001.prof" ] || { echo "no trace in $trace"; exit 1; }
