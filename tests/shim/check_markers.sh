#!/usr/bin/env bash
# A program using the marker header/module: same output and exit code with and
# without the profiler, and under it a begin and an end of interval 7 on each
# of the 2 ranks, at the expected source lines.
# Usage: check_markers.sh MPIEXEC PROF_RUN PROF_DUMP TRACE_DIR SOURCE_NAME BEGIN_LINE END_LINE PROGRAM
set -uo pipefail
mpiexec=$1 prof_run=$2 dump=$3 trace=$4 source=$5 begin_line=$6 end_line=$7 program=$8
rm -rf "$trace"
plain=$("$mpiexec" -n 2 "$program" | sort); plain_rc=$?
profiled=$(PROF_OUTPUT="$trace" "$mpiexec" -n 2 "$prof_run" "$program" | sort); profiled_rc=$?
[ "$plain_rc" -eq 0 ] && [ "$profiled_rc" -eq 0 ] || { echo "exit codes: plain $plain_rc, profiled $profiled_rc"; exit 1; }
[ "$plain" == "$profiled" ] || { echo "outputs differ:"; echo "$plain"; echo "$profiled"; exit 1; }
fail=0
for r in 0 1; do
  f=$(printf '%s/rank-%05d.prof' "$trace" "$r")
  out=$("$dump" "$f") || { echo "prof-dump failed on $f"; exit 1; }
  b=$(grep -c "MARKER begin id=7 site=[0-9]* (.*$source:$begin_line)" <<< "$out")
  e=$(grep -c "MARKER end id=7 site=[0-9]* (.*$source:$end_line)" <<< "$out")
  echo "rank $r: $b begin, $e end at $source:$begin_line/$end_line"
  [ "$b" -eq 1 ] && [ "$e" -eq 1 ] || { fail=1; grep MARKER <<< "$out"; }
done
exit $fail
