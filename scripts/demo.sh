#!/usr/bin/env bash
# The main job: installs what is missing, builds and installs prof, runs the
# demo MPI program under the profiler on as many ranks as the machine has cores
# (at least 2: MPICH's ranks busy-poll, and more ranks than cores fight for
# them, which the report would show as waiting), then prints its report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
prefix="$PWD/install"
trace="$PWD/demo-trace"
rm -rf "$trace"
ranks=$(nproc)
[ "$ranks" -ge 2 ] || ranks=2
echo "== mpiexec -n $ranks prof-run jacobi_demo (trace: $trace)"
PROF_OUTPUT="$trace" mpiexec -n "$ranks" "$prefix/bin/prof-run" "$prefix/share/prof/examples/jacobi_demo" 20 1000000
echo "== trace written to $trace:"
ls -l "$trace"
if [ -x "$prefix/bin/prof-analyze" ]; then
  echo "== prof-analyze $trace"
  "$prefix/bin/prof-analyze" "$trace"
else
  echo "== prof-dump $trace (first events of rank 0)"
  "$prefix/bin/prof-dump" "$trace/rank-00000.prof" | grep '^r0 ' | head -40
fi
if [ -x "$prefix/bin/prof-gui" ]; then
  echo "== browse it: $prefix/bin/prof-gui $trace   (interval tree, characteristics, timeline)"
fi
