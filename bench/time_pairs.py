#!/usr/bin/env python3
"""Times whole processes in alternating pairs: what a user pays for a command
against another (docs/performance.md quotes its medians).

Each round runs A then B (odd rounds B then A, so a drift of the machine
within a round falls on both alike), after one warm-up run of each that is not
counted. For each finished process the kernel's own accounting (wait4) gives
the user and system CPU seconds and the peak resident memory; the wall time is
taken around the process. Prints, for each command, the median, min and max
of wall, CPU and peak; with two commands also the ratio A/B of wall and CPU
taken round by round (a ratio per round, then their median), which holds when
the machine's speed drifts between rounds.

Usage: bench/time_pairs.py [-n ROUNDS] [--warmup N] -- 'COMMAND A' ['COMMAND B']
Each command is one string split as a shell splits words (no shell runs it);
its output goes to /dev/null. The exit status of every run is checked: a
command that fails is reported and the figures are not printed.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run_once(argv):
    """Runs argv to its end; returns (wall s, cpu s, peak KiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"time_pairs.py: '{shlex.join(argv)}' exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def line(name, values, fmt):
    return (f"  {name:<9} median {fmt.format(statistics.median(values))}"
            f"  (min {fmt.format(min(values))}, max {fmt.format(max(values))})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5, help="counted rounds (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs of each first (default 1)")
    parser.add_argument("commands", nargs="+", help="one or two command strings")
    args = parser.parse_args()
    if len(args.commands) > 2 or args.n < 1:
        parser.error("give one or two commands and at least one round")
    commands = [shlex.split(c) for c in args.commands]
    for _ in range(args.warmup):
        for argv in commands:
            run_once(argv)
    figures = [[] for _ in commands]
    for round_index in range(args.n):
        order = range(len(commands)) if round_index % 2 == 0 else reversed(range(len(commands)))
        for which in order:
            figures[which].append(run_once(commands[which]))
    for label, argv, runs in zip("AB", commands, figures):
        print(f"{label}: {shlex.join(argv)}  ({len(runs)} runs)")
        print(line("wall s", [r[0] for r in runs], "{:.3f}"))
        print(line("cpu s", [r[1] for r in runs], "{:.3f}"))
        print(line("peak KiB", [r[2] for r in runs], "{:,}"))
    if len(commands) == 2:
        a, b = figures
        print("A/B, round by round:")
        print(line("wall", [x[0] / y[0] for x, y in zip(a, b)], "{:.3f}x"))
        print(line("cpu", [x[1] / y[1] for x, y in zip(a, b)], "{:.3f}x"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
