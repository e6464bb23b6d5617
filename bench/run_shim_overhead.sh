#!/usr/bin/env bash
# Runs bench/shim_overhead plain and under prof-run, alternating, RUNS times
# each at 2 ranks, and prints medians and ratios (docs/performance.md).
# Usage: bench/run_shim_overhead.sh [BUILD_DIR] [RUNS]
# With BASELINE_SHIM=/path/to/another/libprof.so, a third run under that shim
# alternates with the two, and the script prints this build against it (the
# cost of a change to the hot path, from one run): per alternating round, the
# difference of the two shims' figures (paired, so a drift of the machine's
# latency between rounds cancels), then the median of those differences, their
# interquartile range and a bootstrap 90% interval of the median. The two
# shims take turns running first. BASELINE_SHIM=BUILD/bench/
# libtimestamps_shim.so gives the measured floor (timestamps only); TMPDIR
# picks where the traces are written (their pages cost per record).
set -euo pipefail
build=${1:-build}
runs=${2:-5}
bin="$build/bench/shim_overhead"
prof_run="$build/bin/prof-run"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The bytes per event of rank 0's trace file (its event payload over its calls).
event_bytes() {
  "$build/libprof/tools/prof-dump" --stats --no-events "$1/rank-00000.prof" \
    | awk '$1 == "streams" {for (k = 1; k < NF; k++) if ($k == "event_bytes") print $(k + 1)}'
}
profiled() {
  PROF_OUTPUT="$work/trace.$1" mpiexec -n 2 "$prof_run" "$bin" > "$work/prof.$1"
  echo "event_bytes $(event_bytes "$work/trace.$1")" >> "$work/prof.$1"
  rm -rf "$work/trace.$1"
}
baseline() {
  PROF_OUTPUT="$work/base.$1" LD_PRELOAD="$BASELINE_SHIM" mpiexec -n 2 "$bin" > "$work/baseline.$1"
  rm -rf "$work/base.$1"
}
for i in $(seq "$runs"); do
  mpiexec -n 2 "$bin" > "$work/plain.$i"
  if [ -n "${BASELINE_SHIM:-}" ] && [ $((i % 2)) -eq 0 ]; then
    baseline "$i"; profiled "$i"
  else
    profiled "$i"
    if [ -n "${BASELINE_SHIM:-}" ]; then baseline "$i"; fi
  fi
done
# Bytes per event of message traffic alone: the same every run, taken once.
PROF_OUTPUT="$work/heavy" mpiexec -n 2 "$prof_run" "$bin" --message-heavy-only > "$work/heavy_out"
echo "heavy_event_bytes $(event_bytes "$work/heavy")" > "$work/heavy_bytes"
rm -rf "$work/heavy"
PAIRED_DIFF_DIR="$(dirname "$0")" python3 - "$work" "$runs" "${BASELINE_SHIM:-}" <<'PY'
import os, statistics, sys
sys.path.insert(0, os.environ["PAIRED_DIFF_DIR"])
from paired_diff import spread, verdict  # noqa: E402
work, runs, baseline = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(kind):
    out = {}
    for i in range(1, runs + 1):
        for line in open(f"{work}/{kind}.{i}"):
            k, v = line.split()
            out.setdefault(k, []).append(float(v))
    return out
def one(path):
    return dict((k, float(v)) for k, v in (line.split() for line in open(path)))
p, q = load("plain"), load("prof")
med = statistics.median
print(f"runs: {runs} rounds, alternating, 2 ranks")
print(f"rdtsc (floor: two per call)   {med(p['rdtsc_ns']):8.2f} ns")
print(f"MPI_Comm_rank plain           {med(p['comm_rank_ns']):8.2f} ns")
print(f"MPI_Comm_rank profiled        {med(q['comm_rank_ns']):8.2f} ns")
added = [b - a for a, b in zip(p['comm_rank_ns'], q['comm_rank_ns'])]
print(f"added per call (median)       {med(added):8.2f} ns  (floor {2 * med(p['rdtsc_ns']):.2f} ns)")
print(f"ping-pong one-way plain       {med(p['pingpong_ns']):8.2f} ns")
print(f"ping-pong one-way profiled    {med(q['pingpong_ns']):8.2f} ns")
added_pp = [b - a for a, b in zip(p['pingpong_ns'], q['pingpong_ns'])]
print(f"added one-way latency         {med(added_pp):8.2f} ns")
ratio = [b / a for a, b in zip(p['message_heavy_s'], q['message_heavy_s'])]
print(f"message-heavy slowdown        {med(ratio):8.3f} x  ({med(p['message_heavy_s']):.3f} s plain)")
bpe = [b / c for b, c in zip(q['event_bytes'], q['calls'])]
print(f"bytes per event, all phases   {med(bpe):8.2f}  (mostly MPI_Comm_rank)")
heavy = one(f"{work}/heavy_out") | one(f"{work}/heavy_bytes")
print(f"bytes per event, message-heavy {heavy['heavy_event_bytes'] / heavy['calls']:8.2f}  (Irecv/Isend/Waitall/Allreduce)")
if baseline:
    b = load("baseline")
    print(f"--- this build against BASELINE_SHIM={baseline}, paired by round")
    print(f"MPI_Comm_rank baseline shim   {med(b['comm_rank_ns']):8.2f} ns")
    print(f"ping-pong one-way, baseline   {med(b['pingpong_ns']):8.2f} ns")
    text, cheap = spread([y - x for x, y in zip(b['comm_rank_ns'], q['comm_rank_ns'])])
    print(f"cheap call, this - baseline  {text}")
    text, hop = spread([y - x for x, y in zip(b['pingpong_ns'], q['pingpong_ns'])])
    print(f"hop one-way, this - baseline {text}")
    print(f"cheap call: {verdict(cheap)}; hop: {verdict(hop)} (by the 90% intervals)")
    r = [y / x for x, y in zip(b['message_heavy_s'], q['message_heavy_s'])]
    print(f"message-heavy, this / base    {med(r):8.3f} x")
PY
