#!/usr/bin/env bash
# Instructions per MPI_Bcast call, MPICH's against the shared-memory one
# (bench/bcast_call_cost.cpp): rank 0 under callgrind, rank 1 native, root 0
# (rank 0 is the root), 1 (rank 0 reads) and rotating; per call of call_loop.
#
#   bench/run_bcast_call_cost.sh [BUILD_DIR]
# environment: SIZES (8 64 1024), CALLS (2000), MPIEXEC (mpiexec)
set -euo pipefail
build=${1:-build}
prog=$build/bench/bcast_call_cost
[[ -x $prog ]] || { echo "run_bcast_call_cost.sh: $prog not built (cmake --build $build --target bcast_call_cost)" >&2; exit 2; }
calls=${CALLS:-2000}
mpiexec=${MPIEXEC:-mpiexec}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| bytes | root | impl | instructions per call on rank 0 |"
echo "| ---: | --- | --- | ---: |"
for bytes in ${SIZES:-8 64 1024}; do
  for root in 0 1 rotate; do
    for impl in native shm; do
      out=$work/$impl-$bytes-$root.out
      "$mpiexec" -n 1 valgrind -q --tool=callgrind --toggle-collect=call_loop --callgrind-out-file="$out" \
        "$prog" "$impl" "$bytes" "$root" "$calls" : -n 1 "$prog" "$impl" "$bytes" "$root" "$calls" >/dev/null 2>&1
      ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
      echo "| $bytes | $root | $impl | $((ir / calls)) |"
    done
  done
done
