#!/usr/bin/env bash
# Times prof-gui's timeline frames (prof-gui --bench-frames, offscreen,
# 1600x900): on synthetic 4-rank traces of N events (prof-gen-trace), and on a
# real trace when REAL_TRACE names one. Results in docs/performance.md.
# Usage: [ROUNDS=3] [FRAMES=300] [REAL_TRACE=dir] bench/run_gui_frames.sh [BUILD_DIR] [EVENTS...]
# The 10^8 trace takes about 1.7 GB in a temporary directory (removed at exit).
set -euo pipefail
build=${1:-build}
shift $(( $# > 1 ? 1 : $# ))
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(10000000)
gen="$build/analyzer/prof-gen-trace"
gui="$build/gui/prof-gui"
for b in "$gen" "$gui"; do
  [ -x "$b" ] || { echo "run_gui_frames.sh: $b not built" >&2; exit 1; }
done
export QT_QPA_PLATFORM=offscreen
run() {
  for _ in $(seq "${ROUNDS:-3}"); do
    echo "load $(cut -d' ' -f1-3 /proc/loadavg): $("$gui" "$1" --bench-frames "${FRAMES:-300}" 2>/dev/null)"
  done
}
if [ -n "${REAL_TRACE:-}" ]; then
  echo "== $REAL_TRACE"
  run "$REAL_TRACE"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for n in "${sizes[@]}"; do
  "$gen" "$work/t" -n "$n" -r 4 --replace > /dev/null
  sync
  echo "== $n events, 4 ranks (prof-gen-trace)"
  run "$work/t"
  rm -rf "$work/t"
done
