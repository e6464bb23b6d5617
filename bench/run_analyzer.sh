#!/usr/bin/env bash
# Times prof-analyze on synthetic traces of 10^6, 10^7 and 10^8 events (4 ranks,
# prof-gen-trace), RUNS times each, and prints the median, min and max wall
# time, events per second and the largest max RSS (docs/performance.md).
# Usage: bench/run_analyzer.sh [BUILD_DIR] [RUNS] [EVENTS...]
# The 10^8 trace takes about 1.1 GB in a temporary directory (removed at exit).
set -euo pipefail
build=${1:-build}
runs=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1000000 10000000 100000000)
gen="$build/analyzer/prof-gen-trace"
analyze="$build/analyzer/prof-analyze"
for b in "$gen" "$analyze"; do
  [ -x "$b" ] || { echo "run_analyzer.sh: $b not built" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-12s %-24s %-12s %s\n' events "wall median (min-max)" events/s "max RSS"
for n in "${sizes[@]}"; do
  "$gen" "$work/t" -n "$n" -r 4 --replace > /dev/null
  sync  # the kernel writing the fresh trace back would compete for the 2 cores
  : > "$work/times"
  for _ in $(seq "$runs"); do
    # (--no-index: the analysis, not the window index the first run would write after it.)
    /usr/bin/time -f "%e %M" -a -o "$work/times" "$analyze" "$work/t" -o /dev/null -q --no-progress --no-index
  done
  sort -n "$work/times" | awk -v n="$n" '
    { w[NR] = $1; if ($2 > rss) rss = $2 }
    END {
      med = w[int((NR + 1) / 2)]
      printf "%-12d %-24s %-12s %.1f MB\n", n, sprintf("%.2f s (%.2f-%.2f)", med, w[1], w[NR]),
             sprintf("%.0f M", med > 0 ? n / med / 1e6 : 0), rss / 1024
    }'
  rm -rf "$work/t"
done
