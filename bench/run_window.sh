#!/usr/bin/env bash
# Times prof-analyze --window against the whole analysis on a synthetic trace
# (prof-gen-trace, 4 ranks, default 10^7 events): a 10 ms window and a window
# of 10% of the run, both in the middle of the run, the first time (the window
# index is built beside the trace) and later (the index is read), RUNS times
# each, interleaved; prints medians (min-max) of wall time and the chunks the
# window decoded (docs/performance.md).
# Usage: bench/run_window.sh [BUILD_DIR] [RUNS] [EVENTS]
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
trap 'rm -rf "$work"' EXIT
"$gen" "$work/t" -n "$events" -r 4 > /dev/null
sync
"$analyze" "$work/t" -o /dev/null -q --no-progress --json "$work/whole.json"
read -r duration chunks < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(j["intervals"][0]["main"]["execution_time"], j["stats"]["chunks_total"])' "$work/whole.json")
mid=$(python3 -c "print($duration / 2)")
small="$(python3 -c "print(f'{$mid:.6f}:{$mid + 0.010:.6f}')")"
tenth="$(python3 -c "print(f'{$mid:.6f}:{$mid + $duration / 10:.6f}')")"
echo "events $events, run ${duration} s, $chunks chunks; windows $small (10 ms) and $tenth (10%)"
time_it() {  # label, then prof-analyze arguments
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -a -o "$work/$label.times" "$analyze" "$work/t" -o /dev/null --no-progress \
    --json "$work/$label.json" "$@" 2> /dev/null
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["stats"]["chunks_decoded"])' \
    "$work/$label.json" >> "$work/$label.chunks"
}
for _ in $(seq "$runs"); do
  time_it whole -q
  rm -f "$work/t/window-index.bin"
  time_it small_first --window "$small"
  time_it small_later --window "$small"
  rm -f "$work/t/window-index.bin"
  time_it tenth_first --window "$tenth"
  time_it tenth_later --window "$tenth"
done
printf '%-22s %-24s %-10s %s\n' run "wall median (min-max)" "max RSS" "chunks decoded"
for label in whole small_first small_later tenth_first tenth_later; do
  sort -n "$work/$label.times" | awk -v l="$label" -v c="$(sort -n "$work/$label.chunks" | tail -1)" -v t="$chunks" '
    { w[NR] = $1; if ($2 > rss) rss = $2 }
    END { printf "%-22s %-24s %-10s %s of %s\n", l, sprintf("%.3f s (%.3f-%.3f)", w[int((NR + 1) / 2)], w[1], w[NR]),
                 sprintf("%.0f MB", rss / 1024), c, t }'
done
