#!/usr/bin/env bash
# The main job: installs what is missing, builds and installs prof, runs the
# demo MPI program on 4 ranks under the profiler, then prints its report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
prefix="$PWD/install"
trace="$PWD/demo-trace"
rm -rf "$trace"
echo "== mpiexec -n 4 prof-run jacobi_demo (trace: $trace)"
PROF_OUTPUT="$trace" mpiexec -n 4 "$prefix/bin/prof-run" "$prefix/share/prof/examples/jacobi_demo" 10 20000
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
