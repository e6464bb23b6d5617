#!/usr/bin/env python3
"""Checks prof-analyze's JSON for threads.c (2 ranks, 4 threads each): per rank,
MPI time <= its time (the union of the threads' calls, not their sum), the
rank's time in interval 1 as the stamps bracket it, efficiency within [0, 1].
Usage: check_threads.py REPORT.json STAMPS_DIR [CHROME_TRACE.json]"""
import sys

from realrun import ROUNDING, SLACK, Checker, check_invariants, rank_of

THREADS = 4


def main(report_path, stamps_dir, chrome_trace=None):
    c = Checker(report_path, stamps_dir, chrome_trace)
    check_invariants(c)
    node = c.one(1)
    if node:
        c.between("interval 1 efficiency", node["main"]["efficiency"], 0.0, 1.0)
        for r in (0, 1):
            p, s = rank_of(node, r), c.stamps[r]
            c.between(f"interval 1 rank {r} time (from the stamps)", p["time"],
                      s["1.out"] - s["1.in"] - SLACK, s["1.end"] - s["1.begin"] + SLACK)
            c.between(f"interval 1 rank {r} MPI time (the union of the threads' calls)",
                      p["mpi_time"], 0.0, p["time"] + ROUNDING)
            summed = sum(s[f"thread.{t}.mpi_seconds"] for t in range(THREADS))
            print(f"     rank {r}: the threads' calls add up to {summed:.6f} s against a time of "
                  f"{p['time']:.6f} s")
            if summed <= p["time"]:
                print(f"     note: rank {r}'s threads barely overlapped in this run, so it cannot "
                      "tell a union from a sum")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
