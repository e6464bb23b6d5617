#!/usr/bin/env bash
# What `mpiexec -n K prof-analyze` costs on this node against the plain
# command, and, given an older build, against that build's job: K = 2 up to
# K = 4 processes (more than the cores where the node has fewer, as on a
# laptop or a node shared with other work), the text report of 2x10^7
# synthetic events over 64 ranks, default workers (the node's cores divided
# among its processes). Prints bench/time_pairs.py's figures: with OTHER,
# this build's job first (A) and OTHER's second (B), so A/B below 1 is this
# build faster; without, the job (A) against the plain command (B).
#
#   bench/mpi_job.sh [BUILD_DIR] [OTHER_BUILD_DIR] [ROUNDS]
# environment: WORK (where the trace is made once and kept, default
#              /tmp/prof-mpi-job; about 220 MB), MPIEXEC (mpiexec), KS (the
#              process counts, default "2 3 4")
set -euo pipefail

build=${1:-build}
other=${2:-}
rounds=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
mpiexec=${MPIEXEC:-mpiexec}
work=${WORK:-/tmp/prof-mpi-job}
analyze=$build/analyzer/prof-analyze
for exe in "$analyze" "$build/analyzer/prof-gen-trace" ${other:+"$other/analyzer/prof-analyze"}; do
  [[ -x $exe ]] || { echo "mpi_job.sh: $exe not built" >&2; exit 2; }
done
mkdir -p "$work"

# shellcheck source=bench/made_once.sh
source "$here/made_once.sh"
make_trace g64 "$build/analyzer/prof-gen-trace" "$work/g64" -n 20000000 -r 64
"$here/as_read.py" "$work/g64"

machine_line "$rounds"
quiet="-o /dev/null -q --no-progress --no-index"
for k in ${KS:-2 3 4}; do
  echo "== K = $k"
  against="$analyze $work/g64 $quiet"
  [[ -n $other ]] && against="$mpiexec -n $k $other/analyzer/prof-analyze $work/g64 $quiet"
  "$here/time_pairs.py" -n "$rounds" -- "$mpiexec -n $k $analyze $work/g64 $quiet" "$against"
done
