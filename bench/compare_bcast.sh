#!/usr/bin/env bash
# The shim's NUMA MPI_Bcast (PROF_BCAST=shm, docs/references.md) against MPICH's,
# measured by prof-bench (synchronized slots, max over ranks). On a noisy machine
# the comparison is made within each prof-bench invocation (native and shm rows
# alternate size by size) and repeated ROUNDS times, alternating root 0 and
# rotating roots; the table gives the median over rounds of each mean and the
# median of the per-round ratios shm / native. Also MPICH's release_gather forced
# with cells of f bytes and a buffer of s x f (the shim's defaults), and a sweep
# of f with the queue b = s x f = 1 MiB fixed (the model's optimum is f* = 8 KiB).
#
#   bench/compare_bcast.sh [BUILD_DIR] [RANKS]
# environment: SIZES (default 8,64,512,1024,4096,32768,65536,262144,1048576,4194304,16777216),
#              ROUNDS (3), RUNS (prof-bench --runs, 20:200), SWEEP (1: do the f sweep),
#              MPIEXEC (mpiexec)
set -euo pipefail

build=${1:-build}
ranks=${2:-2}
sizes=${SIZES:-8,64,512,1024,4096,32768,65536,262144,1048576,4194304,16777216}
rounds=${ROUNDS:-3}
runs=${RUNS:-20:200}
sweep=${SWEEP:-1}
mpiexec=${MPIEXEC:-mpiexec}
bench=$build/prof-bench/prof-bench
[[ -x $bench ]] || { echo "compare_bcast.sh: $bench not built (cmake --build $build --target prof-bench)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), cores: $(nproc), ranks: $ranks"
for round in $(seq 1 "$rounds"); do
  for root in 0 rotate; do
    "$mpiexec" -n "$ranks" "$bench" --op bcast --bcast native,shm --root "$root" --sizes "$sizes" \
      --runs "$runs" --rse 0.02 --quiet --csv "$work/main-$root-$round.csv"
    # MPICH's release_gather forced (it otherwise starts after 5 collectives, which
    # the warm-up covers), cells of 8 KiB in a 1 MiB buffer like the shim's queue.
    MPIR_CVAR_BCAST_POSIX_INTRA_ALGORITHM=release_gather MPIR_CVAR_BCAST_INTRANODE_BUFFER_TOTAL_SIZE=1048576 \
    MPIR_CVAR_BCAST_INTRANODE_NUM_CELLS=128 \
      "$mpiexec" -n "$ranks" "$bench" --op bcast --bcast native --root "$root" --sizes "$sizes" \
      --runs "$runs" --rse 0.02 --quiet --csv "$work/rg-$root-$round.csv"
  done
done
if [[ $sweep == 1 ]]; then
  for round in $(seq 1 "$rounds"); do
    for f in 4096 8192 16384 32768 65536; do
      PROF_BCAST_FRAGMENT=$f PROF_BCAST_SLOTS=$((1048576 / f)) \
        "$mpiexec" -n "$ranks" "$bench" --op bcast --bcast shm --sizes 65536,1048576,4194304 \
        --runs "$runs" --rse 0.02 --quiet --csv "$work/sweep-$f-$round.csv"
    done
  done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "$rounds" "$sweep" <<'PY'
import csv, glob, os, statistics, sys
work, rounds, sweep = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def rows(path):
    with open(path) as f:
        return {(r["impl"], int(r["bytes"])): float(r["mean_s"]) for r in csv.DictReader(f)}
med = statistics.median
for root in ("0", "rotate"):
    main = [rows(p) for p in sorted(glob.glob(f"{work}/main-{root}-*.csv"))]
    rg = [rows(p) for p in sorted(glob.glob(f"{work}/rg-{root}-*.csv"))]
    sizes = sorted({b for r in main for (_, b) in r})
    print(f"\nroot {root}: median over {len(main)} rounds of prof-bench's mean (us); ratio = median of per-round shm/native")
    print("| bytes | MPICH default | MPICH release_gather 8 KiB cells | shm (f 8 KiB, s 128, q 2) | shm / default | shm / release_gather |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in sizes:
        nat = [r[("native", b)] for r in main]
        shm = [r[("shm", b)] for r in main]
        rgv = [r[("native", b)] for r in rg]
        ratio = med([s / n for s, n in zip(shm, nat)])
        ratio_rg = med(shm) / med(rgv)
        print(f"| {b} | {med(nat)*1e6:.2f} | {med(rgv)*1e6:.2f} | {med(shm)*1e6:.2f} | {ratio:.2f} | {ratio_rg:.2f} |")
if sweep:
    print("\nf sweep, b = s x f = 1 MiB, q 2, root 0: median over rounds of the mean (us)")
    fs = sorted({int(os.path.basename(p).split('-')[1]) for p in glob.glob(f"{work}/sweep-*.csv")})
    data = {f: [rows(p) for p in glob.glob(f"{work}/sweep-{f}-*.csv")] for f in fs}
    sizes = sorted({b for f in fs for r in data[f] for (_, b) in r})
    print("| f (s) | " + " | ".join(f"{b} B" for b in sizes) + " |")
    print("| --- | " + " | ".join("---:" for _ in sizes) + " |")
    for f in fs:
        print(f"| {f} ({1048576 // f}) | " + " | ".join(f"{med([r[('shm', b)] for r in data[f]])*1e6:.2f}" for b in sizes) + " |")
PY
