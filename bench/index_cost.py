#!/usr/bin/env python3
"""What writing the window index costs a whole analysis (docs/performance.md,
"prof-analyze --window").

Alternating rounds of: BEFORE (another build of prof-analyze), AFTER, AFTER
--index (the index built beside the analysis and finished after the report)
and AFTER --no-index, each on TRACE with its window-index.bin removed first.
Per run: "report", when stdout ended (the outputs are written before the index
is finished), and "exit", when the process ended. Then, alternating BEFORE,
AFTER and AFTER --index: a whole analysis and the first `--window WINDOW`
after it (which builds the index where the analysis wrote none).
Prints medians and every run, and the load before and after.

Usage: bench/index_cost.py BEFORE AFTER TRACE [ROUNDS] [WINDOW]
"""
import os
import statistics
import subprocess
import sys
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    before, after, trace = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 11
    window = sys.argv[5] if len(sys.argv) > 5 else "1:1.01"
    index = os.path.join(trace, "window-index.bin")
    common = ["--no-progress", "-q"]
    runs = {"before": [before, trace] + common, "after": [after, trace] + common,
            "after --index": [after, trace] + common + ["--index"],
            "after --no-index": [after, trace] + common + ["--no-index"]}
    print(f"load before: {load()}")
    times = {k: ([], []) for k in runs}
    for _ in range(rounds):
        for name, args in runs.items():
            if os.path.exists(index):
                os.remove(index)
            t0 = time.monotonic()
            p = subprocess.Popen(args, stdout=subprocess.PIPE)
            while p.stdout.read(1 << 16):
                pass
            t1 = time.monotonic()
            p.wait()
            times[name][0].append(t1 - t0)
            times[name][1].append(time.monotonic() - t0)
    first = {"before": [], "after": [], "after --index": []}
    for _ in range(rounds):
        for name in first:
            if os.path.exists(index):
                os.remove(index)
            subprocess.run(runs[name] + ["-o", "/dev/null"], check=True)
            t0 = time.monotonic()
            subprocess.run(runs[name] + ["-o", "/dev/null", "--window", window], check=True)
            first[name].append(time.monotonic() - t0)
    if os.path.exists(index):
        os.remove(index)
    print(f"load after: {load()}")
    ms = lambda v: " ".join(f"{x * 1e3:.0f}" for x in v)
    for name, (report, end) in times.items():
        print(f"{name:17s} report median {statistics.median(report) * 1e3:6.0f} ms, exit median "
              f"{statistics.median(end) * 1e3:6.0f} ms; exits: {ms(end)}")
    for name, v in first.items():
        print(f"{name:17s} first --window {window} after a whole analysis: median "
              f"{statistics.median(v) * 1e3:6.1f} ms; {ms(v)}")


if __name__ == "__main__":
    main()
