#!/usr/bin/env python3
"""What running two cores at once costs, against what two workers cost.

Each round runs, alternating: one `prof-analyze -j 1` alone; two `-j 1` runs
of the same trace at once (two processes: they share only the machine); one
run with `-j 2`. Prints the median user + sys CPU time of each (the pair's per
process) and their ratios to the lone run, with the median wall times. If two
processes at once cost about what one costs alone but two workers cost more,
the difference is the workers' own (hand-offs, waits, shared lines), not the
machine's. docs/performance.md, "Where the time goes". Runs in a session of its own at
autogroup nice -15 (compare_workers.py).

Usage: workers_contention.py RUNS TRACE_DIR PROF_ANALYZE
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_workers import raise_session_priority  # noqa: E402


def cpu_of(proc):
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"workers_contention.py: {proc.args} failed")
    return usage.ru_utime + usage.ru_stime


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: workers_contention.py RUNS TRACE_DIR PROF_ANALYZE")
    runs, trace, binary = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    if not os.access(binary, os.X_OK):
        sys.exit(f"workers_contention.py: {binary} is not an executable")
    priority = raise_session_priority()
    nice = ["nice", "-n", "-15"] if os.geteuid() == 0 else []

    def start(workers):
        return subprocess.Popen(nice + [binary, trace, "-o", "/dev/null", "-q", "--no-progress", "-j", str(workers)],
                                stderr=subprocess.DEVNULL)

    cpu = {"alone": [], "pair": [], "two workers": []}
    wall = {k: [] for k in cpu}
    load_before = os.getloadavg()
    for _ in range(runs):
        t = time.monotonic()
        cpu["alone"].append(cpu_of(start(1)))
        wall["alone"].append(time.monotonic() - t)
        t = time.monotonic()
        a, b = start(1), start(1)
        cpu["pair"] += [cpu_of(a), cpu_of(b)]
        wall["pair"].append(time.monotonic() - t)
        t = time.monotonic()
        cpu["two workers"].append(cpu_of(start(2)))
        wall["two workers"].append(time.monotonic() - t)
    load_after = os.getloadavg()
    med = statistics.median
    print(f"{trace}: {runs} rounds, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; {priority}")
    alone = med(cpu["alone"])
    for k in cpu:
        print(f"  {k}: user+sys {med(cpu[k]):.3f} s ({med(cpu[k]) / alone:.2f}x alone"
              f"{', per process' if k == 'pair' else ''}), wall {med(wall[k]):.3f} s")


if __name__ == "__main__":
    main()
