#!/usr/bin/env bash
# The profiler's added start-up and shut-down cost: bench/startup_cost
# (MPI_Init; MPI_Finalize) at 2 ranks, plain and under libprof with several
# settings, alternating, RUNS times each. A run's time is the slowest rank's
# MPI_Init + MPI_Finalize (CLOCK_MONOTONIC inside the program: mpiexec's own
# start-up is left out). Prints medians and, per setting, the median of the
# differences against the plain run of the same round (docs/performance.md).
# OTHER_LIBPROF (optional): a second libprof.so, e.g. an older build, run with
# the default settings and with PROF_SYNC=none in the same rounds.
# Usage: bench/run_startup.sh [BUILD_DIR] [RUNS] [OTHER_LIBPROF]
set -euo pipefail
build=${1:-build}
runs=${2:-21}
other=${3:-}
bin="$build/bench/startup_cost"
lib="$build/libprof/src/libprof.so"
for f in "$bin" "$lib" ${other:+"$other"}; do
  [ -f "$f" ] || { echo "run_startup.sh: $f missing (build the startup_cost and prof targets)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# label|library|settings (as prof-run does, the library is preloaded into the ranks only)
configs=("plain||"
         "libprof (tsc)|$lib|"
         "libprof PROF_TIMER=monotonic|$lib|PROF_TIMER=monotonic"
         "libprof PROF_SYNC=none|$lib|PROF_SYNC=none")
[ -n "$other" ] && configs+=("other libprof (tsc)|$other|" "other libprof PROF_SYNC=none|$other|PROF_SYNC=none")
# "init finalize total" of the slowest rank, then the fastest rank's total.
slowest() {
  awk '{ if ($8 > best) { best = $8; line = $4 " " $6 " " $8 }
         if (least == "" || $8 < least) least = $8 }
       END { print line " " least }'
}
for i in $(seq "$runs"); do
  for k in "${!configs[@]}"; do
    IFS='|' read -r label preload settings <<< "${configs[$k]}"
    if [ -z "$preload" ]; then
      mpiexec -n 2 "$bin" | slowest >> "$work/$k"
    else
      env $settings PROF_OUTPUT="$work/trace" mpiexec -n 2 env LD_PRELOAD="$preload" "$bin" \
        | slowest >> "$work/$k"
      rm -rf "$work/trace"
    fi
  done
done
printf '%s\n' "${configs[@]}" | cut -d'|' -f1 > "$work/labels"
python3 - "$work" "$runs" <<'PY'
import statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
labels = open(f"{work}/labels").read().splitlines()
rows = [[tuple(map(float, l.split())) for l in open(f"{work}/{k}")] for k in range(len(labels))]
med = statistics.median
print(f"runs: {runs} of each, alternating, 2 ranks; ms; medians")
print(f"{'':30} {'slowest rank:':>13} {'MPI_Init':>9} {'MPI_Finalize':>13} {'total':>8} {'added':>8}"
      f"   {'fastest rank: total':>19} {'added':>8}")
for label, rs in zip(labels, rows):
    line = (f"{label:30} {'':13} {med(r[0] for r in rs):9.2f} {med(r[1] for r in rs):13.2f}"
            f" {med(r[2] for r in rs):8.2f}")
    if rs is rows[0]:
        line += f" {'':8}   {med(r[3] for r in rs):19.2f}"
    else:
        added = med(r[2] - p[2] for p, r in zip(rows[0], rs))
        added_fastest = med(r[3] - p[3] for p, r in zip(rows[0], rs))
        line += f" {added:+8.2f}   {med(r[3] for r in rs):19.2f} {added_fastest:+8.2f}"
    print(line)
print("added: the median of the per-round differences against the plain run")
PY
