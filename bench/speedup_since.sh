#!/usr/bin/env bash
# How much faster this build analyzes than an older one, as the targets of
# docs/performance.md ("Against the targets") are ratios in one run: each
# build on the trace its own tools write of the same program (an older build
# may not read today's format, and today's reader pays for its format's
# size, so each pays what its users paid).
#   - the synthetic 10^8 (prof-gen-trace -n 100000000 -r 4), two workers;
#   - the exchange trace: today's bench/shim_overhead --exchange-only 1600000
#     on 2 ranks, under each build's libprof.so (the program is the same; the
#     shim and the format are the build's);
#   - 2x10^7 synthetic events over 4096 ranks and over 4, the text report,
#     then the text and the JSON report as the per-rank target's command
#     writes them (an older build's JSON may hold less: compare what each
#     computes before reading its ratio).
# Prints bench/time_pairs.py's figures, OLD's run first (A) and this build's
# second (B): A/B is the speed-up. Run it on a quiet machine.
#
#   bench/speedup_since.sh OLD_BUILD_DIR [BUILD_DIR] [ROUNDS]
# OLD_BUILD_DIR: a build of an older commit, with prof-analyze, prof-gen-trace
# and libprof.so built, e.g.
#   git worktree add --detach /tmp/old COMMIT && cmake -S /tmp/old -B /tmp/old/build -G Ninja \
#     -DCMAKE_BUILD_TYPE=RelWithDebInfo && ninja -C /tmp/old/build prof-analyze prof-gen-trace prof
# environment: WORK (where the traces are made once and kept, default
#              /tmp/prof-speedup; about 3.5 GB), MPIEXEC (mpiexec)
set -euo pipefail

old_build=${1:?usage: bench/speedup_since.sh OLD_BUILD_DIR [BUILD_DIR] [ROUNDS]}
build=${2:-build}
rounds=${3:-11}
here=$(cd "$(dirname "$0")" && pwd)
mpiexec=${MPIEXEC:-mpiexec}
work=${WORK:-/tmp/prof-speedup}
loop=$build/bench/shim_overhead
for exe in "$old_build/analyzer/prof-analyze" "$old_build/analyzer/prof-gen-trace" "$old_build/libprof/src/libprof.so" \
  "$build/analyzer/prof-analyze" "$build/analyzer/prof-gen-trace" "$build/libprof/src/libprof.so" "$loop"; do
  [[ -e $exe ]] || { echo "speedup_since.sh: $exe not built" >&2; exit 2; }
done
mkdir -p "$work"

# The traces, made once.
# shellcheck source=bench/made_once.sh
source "$here/made_once.sh"
for which in old new; do
  b=$build
  [[ $which == old ]] && b=$old_build
  make_trace "t8.$which" "$b/analyzer/prof-gen-trace" "$work/t8.$which" -n 100000000 -r 4
  make_trace "g4096.$which" "$b/analyzer/prof-gen-trace" "$work/g4096.$which" -n 20000000 -r 4096
  make_trace "g4.$which" "$b/analyzer/prof-gen-trace" "$work/g4.$which" -n 20000000 -r 4
  make_trace "ex.$which" env PROF_OUTPUT="$work/ex.$which" "$mpiexec" -n 2 \
    env LD_PRELOAD="$(realpath "$b/libprof/src/libprof.so")" "$loop" --exchange-only 1600000
done
# Both builds' traces as a read from storage leaves them in the page cache
# (bench/as_read.py), so neither is timed in a state hours there left.
for which in old new; do
  "$here/as_read.py" "$work/t8.$which" "$work/g4096.$which" "$work/g4.$which" "$work/ex.$which"
done

# Options both builds take; this build's --no-index keeps it from writing a
# window index beside the trace, which older builds did not write.
quiet="-o /dev/null -q --no-progress"
new_quiet="$quiet"
if "$build/analyzer/prof-analyze" --help | grep -q -- --no-index; then new_quiet="$quiet --no-index"; fi
old_analyze=$old_build/analyzer/prof-analyze
new_analyze=$build/analyzer/prof-analyze

machine_line "$rounds"
echo "== the exchange trace (default workers)"
"$here/time_pairs.py" -n "$rounds" -- "$old_analyze $work/ex.old $quiet" "$new_analyze $work/ex.new $new_quiet"
echo "== the synthetic 10^8, two workers"
"$here/time_pairs.py" -n "$rounds" -- "$old_analyze $work/t8.old -j 2 $quiet" "$new_analyze $work/t8.new -j 2 $new_quiet"
for ranks in 4096 4; do
  for json in "" "--json /dev/null"; do
    echo "== 2x10^7 events over $ranks ranks, text${json:+ and JSON}"
    "$here/time_pairs.py" -n "$rounds" -- "$old_analyze $work/g$ranks.old $quiet $json" \
      "$new_analyze $work/g$ranks.new $new_quiet $json"
  done
done
