#!/usr/bin/env bash
# Whether the machine's CPUs run alike right now: one analysis worker (-j 1)
# pinned to each CPU in turn (taskset -c), ROUNDS rounds alternating, and
# each CPU's median user time. On a virtual machine the host may give one
# vCPU much less than another for minutes (docs/performance.md, "Two
# workers, stage by stage": 1.42x on 2026-12-04), and an analysis with one
# worker a CPU then runs at the slower one's pace: check before timing
# workers against each other or against a target.
#
#   bench/vcpu_speeds.sh TRACE [BUILD_DIR] [ROUNDS]
# Prints a line per CPU (its user times and their median) and the slowest
# median over the fastest.
set -euo pipefail

trace=${1:?usage: bench/vcpu_speeds.sh TRACE [BUILD_DIR] [ROUNDS]}
build=${2:-build}
rounds=${3:-3}
analyze=$build/analyzer/prof-analyze
[[ -x $analyze ]] || { echo "vcpu_speeds.sh: $analyze not built" >&2; exit 2; }
[[ -d $trace ]] || { echo "vcpu_speeds.sh: no trace directory $trace" >&2; exit 2; }
command -v taskset > /dev/null || { echo "vcpu_speeds.sh: taskset (util-linux) not found" >&2; exit 2; }

# The CPUs this shell may run on (a cgroup or a taskset may allow fewer than
# the machine has).
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
declare -A times
for ((round = 0; round < rounds; ++round)); do
  for cpu in "${cpus[@]}"; do
    user=$({ /usr/bin/time -f '%U' taskset -c "$cpu" "$analyze" "$trace" -j 1 -o /dev/null -q --no-progress \
      --no-index > /dev/null; } 2>&1 | tail -1)
    times[$cpu]+="$user "
  done
done
medians=()
for cpu in "${cpus[@]}"; do
  median=$(tr ' ' '\n' <<< "${times[$cpu]}" | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
  medians+=("$median")
  printf 'cpu %s: user %ss, median %s s\n' "$cpu" "${times[$cpu]}" "$median"
done
printf '%s\n' "${medians[@]}" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {if (lo > 0) printf "slowest / fastest: %.3fx\n", hi / lo}'
