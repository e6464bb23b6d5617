#!/usr/bin/env bash
# The measurements that need more cores than ranks of a small VM: the analysis
# as an MPI job against the plain command on K x J = all cores, a real trace of
# many ranks analyzed by every K (the reports' checksums must agree), the shim's
# cost on a message-heavy loop over every core (whole processes, alternating),
# MPICH's broadcast against PROF_BCAST=shm, and prof-bench against a barrier
# loop. Prints what docs/performance.md ("On 16 cores") quotes. gu16k has the
# definitions of a shim's trace (611 functions defined and never called).
#
#   bench/many_cores.sh [BUILD_DIR] [CORES]
# environment: WORK (scratch directory, default a new one under /tmp; the traces
#              take about 3 GB), MPIEXEC (mpiexec), SKIP_BENCH=1 (analysis only)
set -euo pipefail

build=${1:-build}
cores=${2:-$(nproc)}
mpiexec=${MPIEXEC:-mpiexec}
analyze=$build/analyzer/prof-analyze
gen=$build/analyzer/prof-gen-trace
loop=$build/bench/shim_overhead
libprof=$build/libprof/src/libprof.so
for exe in "$analyze" "$gen" "$loop" "$libprof"; do
  [[ -e $exe ]] || { echo "many_cores.sh: $exe not built (cmake --build $build)" >&2; exit 2; }
done
command -v /usr/bin/time > /dev/null || { echo "many_cores.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
work=${WORK:-$(mktemp -d)}
quiet=(-q --no-progress --no-index)

elapsed() { awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $1}"; }

# One analysis: K = 0 is the plain command. Each process's peak RSS, wall and
# CPU, then the job's wall and the text report's checksum.
analyze_once() {
  local k=$1 threads=$2 trace=$3 tag=$4; shift 4
  local report=$work/$tag-K$k.txt start
  start=$(date +%s.%N)
  rm -f "$work"/time-*
  if [[ $k == 0 ]]; then
    /usr/bin/time -o "$work/time-0" -f "  p0 %M KB %e s %U user %S sys" \
      "$analyze" "$trace" -j "$threads" -o "$report" "${quiet[@]}" "$@"
  else
    "$mpiexec" -n "$k" sh -c "exec /usr/bin/time -o '$work/time-'\$PMI_RANK -f \"  p\$PMI_RANK %M KB %e s %U user %S sys\" \
      '$analyze' '$trace' -j $threads -o '$report' ${quiet[*]} $*"
  fi
  echo "$tag K=$k j=$threads wall $(elapsed "$start") s, report $(md5sum < "$report" | cut -c1-12)"
  sort -t p -k2 -n "$work"/time-*
}

echo "cores: $cores, load: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u)"
"$gen" "$work/g1k" -n 100000000 -r 1024 --replace | tail -1
"$gen" "$work/g16k" -n 20000000 -r 16384 --replace | tail -1
"$gen" "$work/gu16k" -n 20000000 -r 16384 --uncalled-functions 611 --replace | tail -1
"$gen" "$work/g4" -n 100000000 -r 4 --replace | tail -1

echo "== 10^8 events over 4 ranks, plain with 1, 2 and 4 workers"
for threads in 1 2 4; do analyze_once 0 "$threads" "$work/g4" g4; done

echo "== the exchange loop over $cores ranks, plain and under libprof (whole processes, 3 pairs)"
for pair in 1 2 3; do
  start=$(date +%s.%N); "$mpiexec" -n "$cores" "$loop" --exchange-only 200000 > /dev/null; plain=$(elapsed "$start")
  rm -rf "$work/ex"; start=$(date +%s.%N)
  PROF_OUTPUT=$work/ex "$mpiexec" -n "$cores" env LD_PRELOAD="$libprof" "$loop" --exchange-only 200000 > /dev/null
  profiled=$(elapsed "$start")
  echo "pair $pair: plain $plain s, under libprof $profiled s, ratio $(awk "BEGIN{printf \"%.3f\", $profiled / $plain}")"
done

echo "== its trace analyzed by K processes of one worker (text and JSON checksums must agree)"
for k in 0 1 2 4 8 16 32; do
  (( k <= cores )) || continue
  analyze_once "$k" 1 "$work/ex" ex --json "$work/ex-K$k.json"
  echo "  json $(md5sum < "$work/ex-K$k.json" | cut -c1-12)"
done

for trace in g1k g16k gu16k; do
  echo "== $trace: plain with 1 and $cores workers, then K processes of $cores/K workers"
  analyze_once 0 1 "$work/$trace" "$trace"
  analyze_once 0 "$cores" "$work/$trace" "$trace"
  for k in 2 4 8 16 32; do
    (( k <= cores )) || continue
    analyze_once "$k" $((cores / k)) "$work/$trace" "$trace"
  done
done

[[ ${SKIP_BENCH:-0} == 1 ]] && exit 0
for ranks in "$cores" $((cores / 2)); do
  echo "== broadcast, $ranks ranks"
  ROUNDS=1 SWEEP=0 SIZES=8,1024,65536,1048576,4194304 bench/compare_bcast.sh "$build" "$ranks"
done
echo "== prof-bench against a barrier loop, $cores ranks"
RUNS=20:200 SIZES=8,65536,1048576 bench/compare_collectives.sh "$build" "$cores"
