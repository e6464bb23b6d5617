#!/usr/bin/env python3
"""Clock synchronization: its time measured here, and modelled at scale.

    bench/sync_model.py BUILD_DIR [REPEAT]

Measures, with tests/clock/clock_sync_test at 2 ranks (TSC timer, REPEAT runs
of each, median):
  t_link   one measured pair (PROF_SYNC=linear, rank 1's clock shifted): the
           ping-pongs until the best round trip stops improving;
  t_shared a rank that reads its node leader's clock (PROF_SYNC=hierarchical,
           no shift): the causality check, the leader's broadcast and gather.
and models the whole synchronization at R ranks, 64 ranks a node (N nodes):
  linear        (R - 1) t_link                 rank 0 against each rank in turn
  ring          2 t_link + (R - 1) t_hop        pairs in two phases, then the
                                                offsets passed down the chain
  hierarchical  ceil(log2 N) (t_link + t_hop)   the leaders' binomial tree
                + 63 t_shared                   each leader checks its members
where t_hop is one message (half the measured round trip). The members'
checks are served one at a time, so they are counted whole; a node's
leaders' rounds run in parallel across pairs. Costs measured on one host
stand for the network's own; what grows with the job is the number of steps.
The error bound grows the same way: half a round trip per measured hop on the
way to rank 0 (linear 1 hop, ring R - 1, hierarchical ceil(log2 N)), and for a
rank that takes its leader's offset, the shared-clock check's best round trip.
"""
import math
import re
import statistics
import subprocess
import sys


def run(build, scheme, shift, repeat):
    out = subprocess.run(
        ["mpiexec", "-n", "2", f"{build}/tests/clock/clock_sync_test", "--schemes", scheme,
         "--timers", "tsc", "--shifts", str(shift), "--repeat", str(repeat)],
        capture_output=True, text=True, timeout=300).stdout
    rows = re.findall(r"^PASS tsc\s+\S+ n=2 \S+ sync=([\d.]+)ms \| r1 \S+ \S+ \S+ rtt=(\d+)", out, re.M)
    if len(rows) != repeat:
        sys.exit(f"clock_sync_test did not pass every run:\n{out}")
    return statistics.median(float(ms) for ms, _ in rows), statistics.median(float(r) for _, r in rows)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    t_link, rtt_ns = run(build, "linear", 5000000, repeat)
    t_shared, _ = run(build, "hierarchical", 0, repeat)
    t_hop = rtt_ns / 2 / 1e6  # ms
    print(f"measured (2 ranks, median of {repeat}): t_link {t_link:.3f} ms, t_shared {t_shared:.3f} ms, "
          f"round trip {rtt_ns:.0f} ns")
    print(f"{'ranks':>7} {'nodes':>6} {'linear ms':>11} {'ring ms':>9} {'hierarchical ms':>16}"
          f" {'linear err us':>14} {'ring err us':>12} {'hier. err us':>13}")
    for ranks in (100, 1000, 10000, 100000):
        nodes = math.ceil(ranks / 64)
        linear = (ranks - 1) * t_link
        ring = 2 * t_link + (ranks - 1) * t_hop
        hierarchical = math.ceil(math.log2(nodes)) * (t_link + t_hop) + 63 * t_shared if nodes > 1 else 63 * t_shared
        half = rtt_ns / 2 / 1e3  # us
        print(f"{ranks:>7} {nodes:>6} {linear:>11.1f} {ring:>9.1f} {hierarchical:>16.1f}"
              f" {half:>14.2f} {(ranks - 1) * half:>12.1f} {math.ceil(math.log2(nodes)) * half + 2 * half:>13.2f}")


if __name__ == "__main__":
    main()
