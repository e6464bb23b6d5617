#!/usr/bin/env bash
# Runs bench/shim_overhead plain and under prof-run, alternating, RUNS times
# each at 2 ranks, and prints medians and ratios (docs/performance.md).
# Usage: bench/run_shim_overhead.sh [BUILD_DIR] [RUNS]
# With BASELINE_SHIM=/path/to/another/libprof.so, a third run under that shim
# alternates with the two, and the script prints this build against it (the
# cost of a change to the hot path, from one run). BASELINE_SHIM=BUILD/bench/
# libtimestamps_shim.so gives the measured floor (timestamps only); TMPDIR
# picks where the traces are written (their pages cost per record).
set -euo pipefail
build=${1:-build}
runs=${2:-5}
bin="$build/bench/shim_overhead"
prof_run="$build/bin/prof-run"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq "$runs"); do
  mpiexec -n 2 "$bin" > "$work/plain.$i"
  PROF_OUTPUT="$work/trace.$i" mpiexec -n 2 "$prof_run" "$bin" > "$work/prof.$i"
  if [ -n "${BASELINE_SHIM:-}" ]; then
    PROF_OUTPUT="$work/base.$i" LD_PRELOAD="$BASELINE_SHIM" mpiexec -n 2 "$bin" > "$work/baseline.$i"
    rm -rf "$work/base.$i"
  fi
  # bytes per event: the event payload of rank 0's file over its calls
  bytes=$("$build/libprof/tools/prof-dump" --stats --no-events "$work/trace.$i/rank-00000.prof" \
          | awk '$1 == "streams" {for (k = 1; k < NF; k++) if ($k == "event_bytes") print $(k + 1)}')
  echo "event_bytes ${bytes:-0}" >> "$work/prof.$i"
  rm -rf "$work/trace.$i"
  # bytes per event of message traffic alone
  PROF_OUTPUT="$work/heavy.$i" mpiexec -n 2 "$prof_run" "$bin" --message-heavy-only > "$work/heavy_out.$i"
  hbytes=$("$build/libprof/tools/prof-dump" --stats --no-events "$work/heavy.$i/rank-00000.prof" \
          | awk '$1 == "streams" {for (k = 1; k < NF; k++) if ($k == "event_bytes") print $(k + 1)}')
  hcalls=$(awk '$1 == "calls" {print $2}' "$work/heavy_out.$i")
  echo "heavy_event_bytes ${hbytes:-0}" >> "$work/prof.$i"
  echo "heavy_calls ${hcalls:-1}" >> "$work/prof.$i"
  rm -rf "$work/heavy.$i"
done
python3 - "$work" "$runs" "${BASELINE_SHIM:-}" <<'PY'
import statistics, sys
work, runs, baseline = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(kind):
    out = {}
    for i in range(1, runs + 1):
        for line in open(f"{work}/{kind}.{i}"):
            k, v = line.split()
            out.setdefault(k, []).append(float(v))
    return out
p, q = load("plain"), load("prof")
med = lambda xs: statistics.median(xs)
print(f"runs: {runs} of each, alternating, 2 ranks")
print(f"rdtsc (floor: two per call)   {med(p['rdtsc_ns']):8.2f} ns")
print(f"MPI_Comm_rank plain           {med(p['comm_rank_ns']):8.2f} ns")
print(f"MPI_Comm_rank profiled        {med(q['comm_rank_ns']):8.2f} ns")
added = [b - a for a, b in zip(p['comm_rank_ns'], q['comm_rank_ns'])]
print(f"added per call (median)       {med(added):8.2f} ns  (floor {2 * med(p['rdtsc_ns']):.2f} ns)")
print(f"ping-pong one-way plain       {med(p['pingpong_us']):8.3f} us")
print(f"ping-pong one-way profiled    {med(q['pingpong_us']):8.3f} us")
added_pp = [b - a for a, b in zip(p['pingpong_us'], q['pingpong_us'])]
print(f"added one-way latency         {med(added_pp) * 1000:8.1f} ns")
ratio = [b / a for a, b in zip(p['message_heavy_s'], q['message_heavy_s'])]
print(f"message-heavy slowdown        {med(ratio):8.3f} x  ({med(p['message_heavy_s']):.3f} s plain)")
bpe = [b / c for b, c in zip(q['event_bytes'], q['calls'])]
print(f"bytes per event, all phases   {med(bpe):8.2f}  (mostly MPI_Comm_rank)")
hbpe = [b / c for b, c in zip(q['heavy_event_bytes'], q['heavy_calls'])]
print(f"bytes per event, message-heavy {med(hbpe):8.2f}  (Irecv/Isend/Waitall/Allreduce)")
if baseline:
    b = load("baseline")
    print(f"--- this build against BASELINE_SHIM={baseline}")
    print(f"MPI_Comm_rank baseline shim   {med(b['comm_rank_ns']):8.2f} ns")
    d = [y - x for x, y in zip(b['comm_rank_ns'], q['comm_rank_ns'])]
    r = [y / x for x, y in zip(b['comm_rank_ns'], q['comm_rank_ns'])]
    print(f"per call, this - baseline     {med(d):8.2f} ns  (ratio {med(r):.3f})")
    d = [(y - x) * 1000 for x, y in zip(b['pingpong_us'], q['pingpong_us'])]
    print(f"one-way latency, this - base  {med(d):8.1f} ns  ({med(b['pingpong_us']):.3f} us baseline)")
    r = [y / x for x, y in zip(b['message_heavy_s'], q['message_heavy_s'])]
    print(f"message-heavy, this / base    {med(r):8.3f} x")
PY
