#!/usr/bin/env bash
# Times the timeline layer (prof-timeline-bench) against the whole analysis
# (prof-analyze) on synthetic 4-rank traces of N events (prof-gen-trace): the
# build (open, pyramid, pairing), a full-range query at 2,000 buckets, 1 ms
# queries spread over the run, peak RSS. Results in docs/performance.md.
# Each round ends with the timeline's CPU time (user + sys) and wall time as
# ratios of the analysis's in that round: on a loaded machine the CPU ratio is
# the one to compare (the wall ratio includes how the scheduler shared cores).
# Usage: [ROUNDS=3] bench/run_timeline.sh [BUILD_DIR] [EVENTS...]
# The 10^8 trace takes about 1.7 GB in a temporary directory (removed at exit),
# and the timeline spills what exceeds its record budget (256 MiB) to $TMPDIR.
set -euo pipefail
build=${1:-build}
shift $(( $# > 1 ? 1 : $# ))
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(10000000)
gen="$build/analyzer/prof-gen-trace"
analyze="$build/analyzer/prof-analyze"
bench="$build/analyzer/prof-timeline-bench"
for b in "$gen" "$analyze" "$bench"; do
  [ -x "$b" ] || { echo "run_timeline.sh: $b not built" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for n in "${sizes[@]}"; do
  "$gen" "$work/t" -n "$n" -r 4 --replace > /dev/null
  sync
  echo "== $n events, 4 ranks; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  # The analysis and the timeline alternate, ROUNDS times each.
  for _ in $(seq "${ROUNDS:-3}"); do
    /usr/bin/time -o "$work/a" -f "%e %U %S" "$analyze" "$work/t" -o /dev/null -q --no-progress --no-index
    /usr/bin/time -o "$work/b" -f "%e %U %S %M" "$bench" "$work/t"
    read -r a_wall a_user a_sys < "$work/a"
    read -r b_wall b_user b_sys b_rss < "$work/b"
    echo "prof-analyze: $a_wall s wall, $a_user s user, $a_sys s sys"
    echo "prof-timeline-bench: $b_wall s wall, $b_user s user, $b_sys s sys, $b_rss KB max RSS"
    awk -v aw="$a_wall" -v au="$a_user" -v as="$a_sys" -v bw="$b_wall" -v bu="$b_user" -v bs="$b_sys" \
      'BEGIN { printf "timeline / analysis: CPU %.2f, wall %.2f\n", (bu + bs) / (au + as), bw / aw }'
  done
  rm -rf "$work/t"
done
