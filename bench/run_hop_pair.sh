#!/usr/bin/env bash
# This build's shim against another's (BASELINE_SHIM): the ping-pong hop's
# one-way latency and MPI_Comm_rank's cost, paired finely enough to decide
# "within 2 ns" for the hop (docs/performance.md, "libprof cost per MPI call").
#
# Where the noise comes from, and what each step does about it:
#  - the two ranks migrating between cores, or sharing one: each is bound to
#    a core of its own (hydra's -bind-to core);
#  - hiccups inside a run (another process scheduled, a chunk of the trace
#    copied out): each run's figure is the median over 201 short blocks
#    (shim_overhead --hop), so a disturbed block is left out, not averaged in;
#  - the machine's drift between runs: each round runs the two shims in the
#    order A B B A (this, baseline, baseline, this), which cancels a drift
#    linear over the round, and the round's figure is the difference of the
#    two shims' means; the rounds are many and short (one run is about a
#    second), so that a slow change of the machine falls within rounds.
# Prints the median of the rounds' differences, their interquartile range
# and a bootstrap 90% interval of the median, and the verdict at 2 ns.
# Usage: BASELINE_SHIM=OTHER/libprof.so bench/run_hop_pair.sh [BUILD_DIR] [ROUNDS]
#   ROUNDS defaults to 45 (about 3 minutes); run it on a quiet machine: a
#   figure taken while others build or run says nothing. TMPDIR picks where
#   the traces are written.
set -euo pipefail
build=${1:-build}
rounds=${2:-45}
bin="$build/bench/shim_overhead"
lib="$build/libprof/src/libprof.so"
: "${BASELINE_SHIM:?run_hop_pair.sh: set BASELINE_SHIM to the shim to compare with (a libprof.so)}"
for f in "$bin" "$lib" "$BASELINE_SHIM"; do
  [ -f "$f" ] || { echo "run_hop_pair.sh: $f missing (build the shim_overhead and prof targets)" >&2; exit 2; }
done
[ "$rounds" -ge 4 ] 2> /dev/null || { echo "run_hop_pair.sh: ROUNDS must be a number, at least 4" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # SHIM OUT: one run under SHIM (preloaded into the ranks only)
  PROF_OUTPUT="$work/trace" mpiexec -bind-to core -n 2 env LD_PRELOAD="$1" "$bin" --hop > "$2"
  rm -rf "$work/trace"
}
for i in $(seq "$rounds"); do
  run "$lib" "$work/this.$i.a"
  run "$BASELINE_SHIM" "$work/base.$i.a"
  run "$BASELINE_SHIM" "$work/base.$i.b"
  run "$lib" "$work/this.$i.b"
done
PAIRED_DIFF_DIR="$(dirname "$0")" python3 - "$work" "$rounds" "$BASELINE_SHIM" <<'PY'
import os, statistics, sys
sys.path.insert(0, os.environ["PAIRED_DIFF_DIR"])
from paired_diff import spread, verdict  # noqa: E402
work, rounds, baseline = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def one(path):
    return dict((k, float(v)) for k, v in (line.split() for line in open(path)))
med = statistics.median
def mean_of(kind, i, key):
    return (one(f"{work}/{kind}.{i}.a")[key] + one(f"{work}/{kind}.{i}.b")[key]) / 2
print(f"rounds: {rounds}, each this/baseline/baseline/this, 2 ranks bound to a core each")
print(f"baseline: {baseline}")
out = {}
for key, name in (("pingpong_ns", "hop one-way"), ("comm_rank_ns", "MPI_Comm_rank")):
    this = [mean_of("this", i, key) for i in range(1, rounds + 1)]
    base = [mean_of("base", i, key) for i in range(1, rounds + 1)]
    print(f"{name:14s} this {med(this):8.2f} ns, baseline {med(base):8.2f} ns (medians of the rounds)")
    text, interval = spread([t - b for t, b in zip(this, base)])
    print(f"{name:14s} this - baseline {text}")
    out[name] = verdict(interval)
print(f"hop: {out['hop one-way']}; cheap call: {out['MPI_Comm_rank']} (by the 90% intervals)")
PY
