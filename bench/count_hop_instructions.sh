#!/usr/bin/env bash
# Instructions the shim adds per MPI call, counted by callgrind (independent of
# the machine's load, unlike wall time): bench/hop_calls at 2 ranks under
# valgrind --tool=callgrind with libprof preloaded, then, per wrapper, the
# instructions of the wrapper and of everything it calls except the forwarded
# PMPI call (bench/shim_instructions.py). A hop is one MPI_Send and one
# MPI_Recv (0 bytes, MPI_STATUS_IGNORE), as in bench/shim_overhead.c's
# ping-pong; the message-heavy ring is Irecv x2, Isend x2, Waitall; the
# exchange loop Irecv, Isend, Waitall (its calls repeat their arguments,
# which format 6 leaves out of the trace). Last, the
# part of a hop on its critical path (bench/shim_sections.py).
# Usage: bench/count_hop_instructions.sh [BUILD_DIR] [LIBPROF]
#   LIBPROF defaults to BUILD_DIR/libprof/src/libprof.so (give another build's
#   to compare, e.g. one configured with -DPROF_BENCH_NO_IN_FLIGHT=ON).
# Under valgrind the program runs ~50x slower, so some enter-to-enter gaps and
# durations that fit the short record header natively do not: the counts
# include a few instructions of the longer time forms on some calls. The
# first sight of each call site (once per site, function and thread) is
# printed apart, as chunk switches are, and not in the per-call figures.
set -euo pipefail
build=${1:-build}
lib=${2:-$build/libprof/src/libprof.so}
bin="$build/bench/hop_calls"
here=$(cd "$(dirname "$0")" && pwd)
for f in "$bin" "$lib"; do
  [ -f "$f" ] || { echo "count_hop_instructions.sh: $f missing (build the hop_calls and prof targets)" >&2; exit 2; }
done
# shim_instructions.py finds the wrappers by their object's name.
[ "$(basename "$lib")" = libprof.so ] || {
  echo "count_hop_instructions.sh: $lib: the library must be named libprof.so (copy it into a directory of its own)" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "count_hop_instructions.sh: valgrind not installed" >&2; exit 2; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count() {  # MODE N -> per-rank callgrind files in $work/MODE
  mkdir -p "$work/$1"
  PROF_OUTPUT="$work/$1/trace" mpiexec -n 2 valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$work/$1/cg.%p" env LD_PRELOAD="$lib" "$bin" "$1" "$2" \
    > "$work/$1/log" 2>&1 || { cat "$work/$1/log" >&2; exit 1; }
}
count pingpong 2000
count heavy 1000
count exchange 2000
count rank 20000
echo "libprof: $lib"
for mode in pingpong heavy exchange rank; do
  echo "--- $mode (each rank)"
  for f in "$work/$mode"/cg.*; do
    case $mode in
      pingpong) python3 "$here/shim_instructions.py" "$f" MPI_Send MPI_Recv ;;
      heavy|exchange) python3 "$here/shim_instructions.py" "$f" MPI_Irecv MPI_Isend MPI_Waitall MPI_Allreduce ;;
      rank) python3 "$here/shim_instructions.py" "$f" MPI_Comm_rank ;;
    esac
  done
done | tee "$work/table"
awk '/^--- pingpong/ {on = 1; next} /^---/ {on = 0}
     on && ($1 == "MPI_Send" || $1 == "MPI_Recv") {sum += $8; n++}
     END {if (n) printf "per hop (one MPI_Send + one MPI_Recv, mean of both ranks): %.1f instructions\n", sum / (n / 2)}' \
  "$work/table"
# The same ping-pong through MPICH's Fortran binding (bench/hop_fortran, when
# built): the C wrappers the binding calls, MPI_Send and MPI_Recv, with what
# they call, and apart the shim's Fortran wrappers in front of the binding,
# mpi_send_ and mpi_recv_ (their own instructions, not the binding's).
if [ -x "$build/bench/hop_fortran" ]; then
  mkdir -p "$work/fortran"
  PROF_OUTPUT="$work/fortran/trace" mpiexec -n 2 valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$work/fortran/cg.%p" env LD_PRELOAD="$lib" "$build/bench/hop_fortran" 2000 \
    > "$work/fortran/log" 2>&1 || { cat "$work/fortran/log" >&2; exit 1; }
  echo "--- Fortran pingpong (each rank)"
  for f in "$work/fortran"/cg.*; do
    python3 "$here/shim_instructions.py" "$f" MPI_Send MPI_Recv mpi_send_ mpi_recv_
  done | tee "$work/fortran/table"
  awk '$1 == "MPI_Send" || $1 == "MPI_Recv" {c += $8; nc++}
       $1 == "mpi_send_" || $1 == "mpi_recv_" {f += $8; nf++}
       END {if (nc) printf "Fortran hop (mean of both ranks): %.1f instructions in the C wrappers", c / (nc / 2);
            if (nf) printf ", %.1f with the Fortran wrappers", c / (nc / 2) + f / (nf / 2);
            if (nc) printf "\n"}' "$work/fortran/table"
fi
# The hop's critical path: the receiver's MPI_Recv after its call, then its
# reply's MPI_Send before its call (bench/shim_sections.py). A second
# ping-pong run, with per-instruction counts.
mkdir -p "$work/sections"
PROF_OUTPUT="$work/sections/trace" mpiexec -n 2 valgrind --tool=callgrind --trace-children=yes \
  --dump-instr=yes --compress-pos=no --compress-strings=no \
  --callgrind-out-file="$work/sections/cg.%p" env LD_PRELOAD="$lib" "$bin" pingpong 2000 \
  > "$work/sections/log" 2>&1 || { cat "$work/sections/log" >&2; exit 1; }
echo "--- pingpong, each wrapper's own instructions around its PMPI call (each rank)"
for f in "$work/sections"/cg.*; do
  python3 "$here/shim_sections.py" "$f" "$lib" MPI_Send MPI_Recv
done | tee "$work/sections/table"
awk '$1 == "MPI_Send" {before += $(NF - 3); ns++} $1 == "MPI_Recv" {after += $NF; nr++}
     END {if (ns && nr) printf "critical path per hop (MPI_Send before its call + MPI_Recv after it): %.1f instructions\n", before / ns + after / nr}' \
  "$work/sections/table"
