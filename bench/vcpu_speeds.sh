#!/usr/bin/env bash
# Whether the machine's CPUs run alike right now: one analysis worker (-j 1)
# pinned to the first CPU against one pinned to each other CPU
# (bench/time_pairs.py, alternating rounds; A is the first CPU). On a virtual
# machine the host may give one vCPU much less than another for minutes
# (docs/performance.md, "Two workers, stage by stage": 1.42x on 2026-12-04),
# and an analysis with one worker a CPU then runs at the slower one's pace:
# check before timing workers against each other or against a target.
#
#   bench/vcpu_speeds.sh TRACE [BUILD_DIR] [ROUNDS]
# Prints bench/time_pairs.py's figures for each pair: A/B above 1 means the
# other CPU is the faster.
set -euo pipefail

trace=${1:?usage: bench/vcpu_speeds.sh TRACE [BUILD_DIR] [ROUNDS]}
build=${2:-build}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
analyze=$build/analyzer/prof-analyze
[[ -x $analyze ]] || { echo "vcpu_speeds.sh: $analyze not built" >&2; exit 2; }
[[ -d $trace ]] || { echo "vcpu_speeds.sh: no trace directory $trace" >&2; exit 2; }
command -v taskset > /dev/null || { echo "vcpu_speeds.sh: taskset (util-linux) not found" >&2; exit 2; }

# The CPUs this shell may run on (a cgroup or a taskset may allow fewer than
# the machine has).
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
run="$analyze $trace -j 1 -o /dev/null -q --no-progress --no-index"
for cpu in "${cpus[@]:1}"; do
  echo "== CPU ${cpus[0]} (A) against CPU $cpu (B)"
  "$here/time_pairs.py" -n "$rounds" -- "taskset -c ${cpus[0]} $run" "taskset -c $cpu $run"
done
