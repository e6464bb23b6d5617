#!/usr/bin/env python3
"""The analysis's two-worker speed-up, for one or more prof-analyze binaries.

Each round runs every binary on the trace with `-j 1` and with the default
workers, alternating (so a slow spell of a shared machine hits all of them),
under `nice -n -15` when allowed. Prints per binary and setting the median
wall time (all runs listed), the median user + sys CPU time, and the speed-up
(median wall with -j 1 / median wall with the default workers), with the
load average before and after. docs/performance.md, "Two workers".

Usage: compare_workers.py RUNS TRACE_DIR PROF_ANALYZE...
"""
import os
import resource
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: compare_workers.py RUNS TRACE_DIR PROF_ANALYZE...")
    runs, trace, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"compare_workers.py: {b} is not an executable")
    nice = ["nice", "-n", "-15"] if os.geteuid() == 0 else []
    settings = [("-j1", ["-j", "1"]), ("default", [])]
    results = {(b, s): [] for b in binaries for s, _ in settings}
    load_before = os.getloadavg()
    for _ in range(runs):
        for b in binaries:
            for name, args in settings:
                cmd = nice + [b, trace, "-o", "/dev/null", "-q", "--no-progress"] + args
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
                wall = time.monotonic() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                results[(b, name)].append((wall, cpu))
    load_after = os.getloadavg()
    print(f"{trace}: {runs} rounds, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    for b in binaries:
        walls = {}
        for name, _ in settings:
            r = results[(b, name)]
            walls[name] = statistics.median(w for w, _ in r)
            listed = " ".join(f"{w:.2f}" for w, _ in r)
            print(f"  {b} {name}: wall {walls[name]:.3f} s ({listed}), "
                  f"user+sys {statistics.median(c for _, c in r):.3f} s")
        print(f"  {b} speed-up: {walls['-j1'] / walls['default']:.2f}x")


if __name__ == "__main__":
    main()
