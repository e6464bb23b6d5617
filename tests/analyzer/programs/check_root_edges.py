#!/usr/bin/env python3
"""Checks prof-analyze's JSON for root_edges.c (2 ranks): on each rank the
root runs from MPI_Init's return to MPI_Finalize's call, so its time lies
between the program's stamps there, however long the profiler's clock syncs
inside the two calls waited for the late rank; rank 0, which waited for rank 1
in both, is idle for about rank 1's LATE_MS of computation at the end.
Usage: check_root_edges.py REPORT.json STAMPS_DIR [CHROME_TRACE.json]"""
import sys

from realrun import CLOCKS, Checker, check_invariants

LATE = 0.300  # root_edges.c's LATE_MS
# What may pass between MPI_Init's record and the stamp after its return, and
# between the stamp before MPI_Finalize (and the stamps' writing) and its
# record: a few microseconds on a quiet machine; a descheduled rank, more.
GAP = 0.05


def main(report_path, stamps_dir, chrome_trace=None):
    c = Checker(report_path, stamps_dir, chrome_trace)
    check_invariants(c)
    root = c.report["intervals"][0]
    per_rank = {p["rank"]: p for p in root["per_rank"]}
    for rank in (0, 1):
        stamped = c.stamp(rank, "finalize.call") - c.stamp(rank, "init.return")
        c.between(f"rank {rank}: the root runs from MPI_Init's return to MPI_Finalize's call",
                  per_rank[rank]["time"], stamped - CLOCKS, stamped + 2 * GAP)
    # Rank 1 computed LATE before MPI_Finalize; rank 0 waited for it there.
    c.between("rank 0 idle for rank 1's computation before MPI_Finalize", per_rank[0]["idle_time"],
              LATE - 2 * GAP, per_rank[1]["time"])
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
