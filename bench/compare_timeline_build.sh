#!/bin/bash
# The timeline build's time against a whole analysis (issue: "the pyramid
# built within 1.5x of the whole-analysis time"), in alternating rounds so
# that a slow spell of a shared machine hits every run alike.
#
# Usage: bench/compare_timeline_build.sh ROUNDS TRACE_DIR BASELINE_PROF_ANALYZE
#            [BUILD_DIR] [OTHER_PROF_TIMELINE_BENCH]
#
# Each round runs, in turn: BASELINE_PROF_ANALYZE on the trace (the analysis
# the ratio is taken against), BUILD_DIR's prof-analyze, then BUILD_DIR's
# prof-timeline-bench (the build and its queries) and OTHER_PROF_TIMELINE_BENCH
# when given (another build of the timeline, e.g. before a change), the two
# in turn first from round to round. It prints
# every run's wall, user and sys seconds and peak RSS, the bench's query
# medians and its own build times (open, build and pairing: "timeline-build",
# without the process's start, its queries and its exit; until every rank
# has passed, the calls and the pyramid final: "timeline-calls"), then per
# program the median wall and user+sys time and their ratios to the
# baseline's.
#
# The runs go in a session of their own whose autogroup runs at nice -15
# when root may set it (with autogroups on, nice alone ranks processes only
# within a session: bench/compare_workers.py explains), and the script says
# whether it could.
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi
if [ "${COMPARE_TIMELINE_SESSION:-}" != 1 ]; then
  COMPARE_TIMELINE_SESSION=1 exec setsid -w "$0" "$@"
fi
rounds=$1 trace=$2 baseline=$3 build=${4:-build} other=${5:-}
for f in "$baseline" "$build/analyzer/prof-analyze" "$build/analyzer/prof-timeline-bench" ${other:+"$other"}; do
  [ -x "$f" ] || { echo "compare_timeline_build: not an executable: $f" >&2; exit 2; }
done
[ -d "$trace" ] || { echo "compare_timeline_build: not a trace directory: $trace" >&2; exit 2; }
if [ "$(id -u)" = 0 ] && echo -15 2>/dev/null > /proc/self/autogroup; then
  echo "priority: $(cat /proc/self/autogroup)"
else
  echo "priority: no autogroup priority (not root, or no autogroups): timings share the CPU with other sessions"
fi
nice_cmd=(nice -n -15)
"${nice_cmd[@]}" true 2>/dev/null || nice_cmd=()
times=$(mktemp) bench_out=$(mktemp) one=$(mktemp)
trap 'rm -f "$times" "$bench_out" "$one"' EXIT
run() {  # LABEL COMMAND...: one timed run, its line appended to $times
  local label=$1
  shift
  /usr/bin/time -o "$one" -f "$label %e %U %S %M" "${nice_cmd[@]}" "$@" > "$bench_out" 2>&1 ||
    { echo "compare_timeline_build: $label failed:" >&2; cat "$bench_out" >&2; exit 1; }
  cat "$one" | tee -a "$times"
}
built() {  # LABEL BENCH_OUTPUT: the bench's own times, as "LABEL-build" and "LABEL-calls"
  local ms
  ms=$(sed -n 's/^build \([0-9]*\) ms.*/\1/p' "$2")
  [ -z "$ms" ] || echo "$1-build $(awk "BEGIN { printf \"%.3f\", $ms / 1000 }") - - -" | tee -a "$times"
  ms=$(sed -n 's/^build .* final at \([0-9]*\) ms.*/\1/p' "$2")
  [ -z "$ms" ] || echo "$1-calls $(awk "BEGIN { printf \"%.3f\", $ms / 1000 }") - - -" | tee -a "$times"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
timeline() {
  run timeline "$build/analyzer/prof-timeline-bench" "$trace"
  grep -i median "$bench_out" | sed 's/^/  /'
  built "timeline" "$bench_out"
}
other() {
  [ -n "$other" ] || return 0
  run other "$other" "$trace"
  built "other" "$bench_out"
}
for ((i = 1; i <= rounds; ++i)); do
  run baseline "$baseline" "$trace" -o /dev/null -q --no-progress
  # (--no-index: the analysis, not the window index the first run would write after it.)
  run analysis "$build/analyzer/prof-analyze" "$trace" -o /dev/null -q --no-progress --no-index
  # The two timelines take turns running first: the run right after the
  # analysis has been seen to pay 0.2-0.3 s more, whichever it is.
  if ((i % 2)); then timeline; other; else other; timeline; fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$times" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, wall, user, sys_s, rss = line.split()
    if user == "-":  # a build time alone (no process of its own)
        runs[label].append((float(wall), None, None))
    else:
        runs[label].append((float(wall), float(user) + float(sys_s), int(rss)))
base_wall = statistics.median(r[0] for r in runs["baseline"])
base_cpu = statistics.median(r[1] for r in runs["baseline"])
for label, rs in runs.items():
    wall = statistics.median(r[0] for r in rs)
    if rs[0][1] is None:
        print(f"{label:15s} median {wall:7.3f} s  x baseline wall: {wall / base_wall:.2f}  (n={len(rs)})")
        continue
    cpu = statistics.median(r[1] for r in rs)
    print(f"{label:15s} wall median {wall:7.3f} s  cpu median {cpu:7.3f} s  "
          f"x baseline: wall {wall / base_wall:.2f} cpu {cpu / base_cpu:.2f}  "
          f"peak RSS {max(r[2] for r in rs)} KB  (n={len(rs)})")
PY
