#!/usr/bin/env bash
# Counts the instructions two prof-analyze binaries run on the same traces
# (callgrind), with one worker and with two, and prints each count, the count
# an event and NEW's ratio to OLD. A count does not move with the machine's
# load, as a wall time does: a change of 1% to the decode loop shows here
# where pairs of timed runs cannot tell it from noise (docs/performance.md,
# "Where the time goes"). With two workers the count includes a waiting
# worker's spins at the phase ends, which vary from run to run (on the
# exchange trace by about 0.01%; on a trace of a few thousand events they are
# most of the difference). Check the reports with bench/compare_analyzer.sh.
# Usage: bench/compare_instructions.sh OLD_PROF_ANALYZE NEW_PROF_ANALYZE TRACE_DIR...
# ANALYZE_ARGS (split on blanks) is passed to both, e.g. ANALYZE_ARGS=--wait-states.
set -euo pipefail
# shellcheck source=bench/two_builds.sh
source "$(dirname "$0")/two_builds.sh"
two_builds_args compare_instructions.sh "$@"
command -v valgrind > /dev/null || { echo "compare_instructions.sh: valgrind is not installed" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
read -r -a extra <<< "${ANALYZE_ARGS:-}"

# The instructions one run executes (every thread's), as callgrind sums them.
count() {
  local bin=$1 trace=$2 workers=$3
  valgrind --tool=callgrind --callgrind-out-file="$work/out" "$bin" "$trace" -j "$workers" "${extra[@]}" \
    -o /dev/null -q --no-progress --no-index 2> "$work/log" || true
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/log" | tail -1
}

printf '%-24s %-8s %16s %16s %8s %s\n' trace workers old new new/old "new an event"
for trace in "${traces[@]}"; do
  # (The events analyzed, from the JSON report's statistics; a damaged
  # trace's exit status is not 0, and its report is still written.)
  rm -f "$work/r.json"
  "$new" "$trace" "${extra[@]}" --json "$work/r.json" -o /dev/null -q --no-progress --no-index 2> /dev/null || true
  events=
  [ -f "$work/r.json" ] && events=$(sed -n 's/^ *"events": \([0-9]*\),*$/\1/p' "$work/r.json" | head -1)
  for workers in 1 2; do
    a=$(count "$old" "$trace" "$workers")
    b=$(count "$new" "$trace" "$workers")
    if [ -z "$a" ] || [ -z "$b" ]; then
      echo "compare_instructions.sh: no count for $trace with $workers workers (callgrind's log: $work/log)" >&2
      trap - EXIT
      exit 1
    fi
    awk -v t="$(basename "$trace")" -v w="$workers" -v a="$a" -v b="$b" -v n="${events:-0}" 'BEGIN {
      printf "%-24s %-8s %16.0f %16.0f %8.4f %s\n", t, w, a, b, b / a, (n > 0 ? sprintf("%.1f", b / n) : "?")
    }'
  done
done
