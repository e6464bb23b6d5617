#!/usr/bin/env bash
# Times prof-analyze --window against the whole analysis: a 10 ms window and a
# window of 10% of the run, both in the middle of the run, the first time (the
# window index is built beside the trace) and later (the index is read), RUNS
# times each, interleaved; prints medians (min-max) of wall time, max RSS, and
# what the window decoded: chunks and events (docs/performance.md).
# The trace: synthetic (prof-gen-trace, 4 ranks, EVENTS, default 10^7), or the
# real one REAL_TRACE names (a prof trace directory; its window-index.bin is
# rebuilt by the runs and removed at the end), e.g. the Jacobi demo at 2 ranks,
# about 10^7 events:
#   PROF_OUTPUT=/tmp/real mpiexec -n 2 build/bin/prof-run build/examples/jacobi_demo 556000 16
# Usage: [REAL_TRACE=dir] bench/run_window.sh [BUILD_DIR] [RUNS] [EVENTS]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
events=${3:-10000000}
gen="$build/analyzer/prof-gen-trace"
analyze="$build/analyzer/prof-analyze"
for b in "$gen" "$analyze"; do
  [ -x "$b" ] || { echo "run_window.sh: $b not built" >&2; exit 1; }
done
work=$(mktemp -d)
if [ -n "${REAL_TRACE:-}" ]; then
  [ -d "$REAL_TRACE" ] || { echo "run_window.sh: REAL_TRACE=$REAL_TRACE is not a directory" >&2; exit 1; }
  trace=$REAL_TRACE
  trap 'rm -rf "$work"; rm -f "$trace/window-index.bin"' EXIT
else
  trace="$work/t"
  trap 'rm -rf "$work"' EXIT
  "$gen" "$trace" -n "$events" -r 4 > /dev/null
fi
sync
"$analyze" "$trace" -o /dev/null -q --no-progress --no-index --json "$work/whole.json"
read -r first last chunks total < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
# The run from its first event (time 0) to its last rank'"'"'s last moment alive.
end = max(r["last_alive"] for r in j["run_end"]["ranks"])
print(0, end, j["stats"]["chunks_total"], j["stats"]["events"])' "$work/whole.json")
mid=$(python3 -c "print($last / 2)")
small="$(python3 -c "print(f'{$mid:.6f}:{$mid + 0.010:.6f}')")"
tenth="$(python3 -c "print(f'{$mid:.6f}:{$mid + $last / 10:.6f}')")"
echo "trace ${REAL_TRACE:-prof-gen-trace -n $events -r 4}: $total events, run ${last} s, $chunks chunks;" \
  "windows $small (10 ms) and $tenth (10%)"
time_it() {  # label, then prof-analyze arguments
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -a -o "$work/$label.times" "$analyze" "$trace" -o /dev/null --no-progress \
    --json "$work/$label.json" "$@" 2> /dev/null
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["stats"]; print(s["chunks_decoded"], s["events"])' \
    "$work/$label.json" >> "$work/$label.decoded"
}
for _ in $(seq "$runs"); do
  time_it whole -q --no-index  # (the analysis alone: "first" is a window that builds the index)
  rm -f "$trace/window-index.bin"
  time_it small_first --window "$small"
  time_it small_later --window "$small"
  rm -f "$trace/window-index.bin"
  time_it tenth_first --window "$tenth"
  time_it tenth_later --window "$tenth"
done
printf '%-14s %-24s %-8s %-16s %s\n' run "wall median (min-max)" "max RSS" "chunks decoded" "events decoded"
for label in whole small_first small_later tenth_first tenth_later; do
  read -r c e < <(sort -n "$work/$label.decoded" | tail -1)
  sort -n "$work/$label.times" | awk -v l="$label" -v c="$c" -v e="$e" -v t="$chunks" '
    { w[NR] = $1; if ($2 > rss) rss = $2 }
    END { printf "%-14s %-24s %-8s %-16s %s\n", l, sprintf("%.3f s (%.3f-%.3f)", w[int((NR + 1) / 2)], w[1], w[NR]),
                 sprintf("%.0f MB", rss / 1024), c " of " t, e }'
done
