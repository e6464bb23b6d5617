#!/usr/bin/env bash
# prof-bench (the MPIPerf method: synchronized launch slots, max over ranks)
# beside a plain barrier-loop timer (bench/barrier_loop.c: barrier, t0, op, t1;
# the average over ranks of per-rank means, as OSU reports, and the maximum,
# as IMB's t_max) for the same collectives and sizes. Prints a Markdown table
# for docs/performance.md.
#
#   bench/compare_collectives.sh [BUILD_DIR] [RANKS]
# environment: OPS (default "bcast allreduce reduce gather alltoall barrier"),
#              SIZES (default 8,1024,65536,1048576), ITERS (barrier loop, 1000),
#              RUNS (prof-bench --runs, 20:400), MPIEXEC (mpiexec)
set -euo pipefail

build=${1:-build}
ranks=${2:-2}
ops=${OPS:-bcast allreduce reduce gather alltoall barrier}
sizes=${SIZES:-8,1024,65536,1048576}
iters=${ITERS:-1000}
runs=${RUNS:-20:400}
mpiexec=${MPIEXEC:-mpiexec}
bench=$build/prof-bench/prof-bench
loop=$build/prof-bench/barrier_loop
for exe in "$bench" "$loop"; do
  [[ -x $exe ]] || { echo "compare_collectives.sh: $exe not built (cmake --build $build --target prof-bench barrier_loop)" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Timings mean little while others load the machine: say how loaded it was.
load_before=$(cut -d' ' -f1 /proc/loadavg)

op_args=()
for op in $ops; do op_args+=(--op "$op"); done
"$mpiexec" -n "$ranks" "$bench" "${op_args[@]}" --sizes "$sizes" --runs "$runs" --rse 0.02 \
  --csv "$work/bench.csv" --quiet
: > "$work/loop.csv"
for op in $ops; do
  "$mpiexec" -n "$ranks" "$loop" --op "$op" --sizes "$sizes" --iters "$iters" | tail -n +2 >> "$work/loop.csv"
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

python3 - "$work/bench.csv" "$work/loop.csv" "$ranks" "$load_before" "$load_after" <<'EOF'
import csv, sys
bench_csv, loop_csv, ranks, load_before, load_after = sys.argv[1:]
bench = {(r["op"], int(r["bytes"])): r for r in csv.DictReader(open(bench_csv))}
names = ["op", "procs", "bytes", "iters", "avg_s", "max_s"]
loop = {(r["op"], int(r["bytes"])): r for r in csv.DictReader(open(loop_csv), fieldnames=names)}
print(f"{ranks} ranks; load average {load_before} before, {load_after} after\n")
print("| op | bytes | prof-bench mean (us) | 95% CI (us) | runs valid/total | barrier loop avg (us) | off by | barrier loop max (us) | off by |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for key, b in bench.items():
    l = loop.get(key)
    if not l:
        continue
    mean = float(b["mean_s"]) * 1e6
    avg, mx = float(l["avg_s"]) * 1e6, float(l["max_s"]) * 1e6
    off = lambda x: f"{(x - mean) / mean * 100:+.0f}%" if mean > 0 else "n/a"
    print(f"| {key[0]} | {key[1]} | {mean:.2f} | {float(b['ci_low_s'])*1e6:.2f}-{float(b['ci_high_s'])*1e6:.2f} "
          f"| {b['runs_valid']}/{b['runs_total']} | {avg:.2f} | {off(avg)} | {mx:.2f} | {off(mx)} |")
EOF
