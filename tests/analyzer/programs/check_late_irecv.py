#!/usr/bin/env python3
"""Checks prof-analyze's JSON for late_irecv.c (2 ranks): rank 0's PotentSync in
interval 1 runs from each MPI_Irecv to the enter of the matching MPI_Send (the
stamps bracket both), so it includes the computation between the Irecv and the
MPI_Wait. Usage: check_late_irecv.py REPORT.json STAMPS_DIR [CHROME_TRACE.json]"""
import sys

from realrun import SLACK, Checker, check_invariants, check_no_unknown_requests, rank_of

EXECUTIONS = 3


def main(report_path, stamps_dir, chrome_trace=None):
    c = Checker(report_path, stamps_dir, chrome_trace)
    check_no_unknown_requests(c)
    check_invariants(c)
    node = c.one(1)
    if node:
        c.result("interval 1 exe_count", node["exe_count"] == EXECUTIONS, str(node["exe_count"]))
        low = high = from_wait = 0.0
        for k in range(EXECUTIONS):
            s0, s1 = c.stamps[0], c.stamps[1]
            # The Wait cannot return before the send started, so the wait ends
            # at the send's enter, which lies in [send0, send1].
            low += max(0.0, s1[f"{k}.send0"] - s0[f"{k}.irecv1"])
            high += max(0.0, s1[f"{k}.send1"] - s0[f"{k}.irecv0"])
            from_wait += max(0.0, s1[f"{k}.send1"] - s0[f"{k}.wait0"])
        tol = EXECUTIONS * SLACK
        print(f"     counted from the MPI_Wait instead, it would be at most {from_wait:.6f}")
        c.between("rank 0 potential sync (from each Irecv to its send)",
                  rank_of(node, 0)["potential_sync"], low - tol, high + tol)
        if from_wait + tol >= low - tol:
            print("     note: the sender was not late past the Wait in this run, so it cannot "
                  "tell the two definitions apart")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
