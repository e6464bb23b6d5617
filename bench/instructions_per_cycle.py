#!/usr/bin/env python3
"""Instructions a cycle of prof-analyze builds on one trace, with one worker:
whether a build is faster because it runs fewer instructions or because the
core runs its instructions faster (docs/performance.md, "Where the time
goes": "Instructions a cycle").

For each build: the instructions of one run (callgrind, every thread's: with
one worker, the pass and the report), its median user CPU over the rounds
(the builds alternating, each run pinned to one CPU), the cycles that is at
the core's clock (bench/core_clock, pinned to the same CPU, before and after
the rounds), and instructions a cycle. The kernel's part (the chunks' copy
from the page cache) is system time, and callgrind does not count it, so it
is left out of both.

Usage: bench/instructions_per_cycle.py [-n ROUNDS] [--cpu C] [--clock PROBE]
           [--events N] TRACE_DIR PROF_ANALYZE...
PROBE defaults to build/bench/core_clock; with --events the counts are also
given an event.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile


def analyze_argv(binary, trace):
    return [binary, trace, "-j", "1", "-o", "/dev/null", "-q", "--no-progress", "--no-index"]


def instructions(binary, trace):
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={work}/out"]
                             + analyze_argv(binary, trace),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    found = re.findall(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or not found:
        sys.exit(f"instructions_per_cycle.py: callgrind on {binary} failed:\n{out.stderr[-2000:]}")
    return int(found[-1])


def user_seconds(argv):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"instructions_per_cycle.py: {' '.join(argv)} failed")
    return usage.ru_utime


def clock_ghz(probe, cpu):
    out = subprocess.run(["taskset", "-c", str(cpu), probe], capture_output=True, text=True, check=True).stdout
    values = [float(v) for v in re.findall(r"([0-9.]+) GHz", out)]
    if len(values) != 3:
        sys.exit(f"instructions_per_cycle.py: cannot read {probe}'s output: {out!r}")
    return statistics.median(values), out.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=9, help="timed rounds (default 9)")
    parser.add_argument("--cpu", type=int, default=0, help="the CPU every run is pinned to (default 0)")
    parser.add_argument("--clock", default="build/bench/core_clock", help="bench/core_clock's binary")
    parser.add_argument("--events", type=int, default=0, help="the trace's events, for counts an event")
    parser.add_argument("trace")
    parser.add_argument("builds", nargs="+")
    args = parser.parse_args()
    for path in [args.clock] + args.builds:
        if not os.access(path, os.X_OK):
            sys.exit(f"instructions_per_cycle.py: {path} is not an executable (build it first)")

    counts = [instructions(b, args.trace) for b in args.builds]
    before, before_line = clock_ghz(args.clock, args.cpu)
    users = [[] for _ in args.builds]
    pinned = ["taskset", "-c", str(args.cpu)]
    for b in args.builds:  # (a warm-up run each, not counted)
        user_seconds(pinned + analyze_argv(b, args.trace))
    for round_index in range(args.n):
        order = range(len(args.builds)) if round_index % 2 == 0 else reversed(range(len(args.builds)))
        for i in order:
            users[i].append(user_seconds(pinned + analyze_argv(args.builds[i], args.trace)))
    after, after_line = clock_ghz(args.clock, args.cpu)
    ghz = (before + after) / 2
    print(f"core clock on CPU {args.cpu}: before {before_line}; after {after_line}; used {ghz:.3f} GHz")
    per = f" {'an event':>17}" if args.events else ""
    print(f"{'instructions':>16} {'user s':>8} {'cycles':>16} {'IPC':>6}{per}  build")
    for b, count, times in zip(args.builds, counts, users):
        user = statistics.median(times)
        cycles = user * ghz * 1e9
        extra = f" {count / args.events:7.1f} / {cycles / args.events:6.1f}" if args.events else ""
        print(f"{count:16,d} {user:8.3f} {cycles:16,.0f} {count / cycles:6.2f}{extra}  {b}")
    if args.events:
        print("(an event: instructions / cycles)")


if __name__ == "__main__":
    main()
