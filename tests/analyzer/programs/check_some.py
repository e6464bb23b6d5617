#!/usr/bin/env python3
"""Checks prof-analyze's JSON for some.c (2 ranks): Waitsome (interval 1),
Testsome (2) and a Waitall of early and late messages (3) each complete 16
receives; no completion names an unknown request, the invariants hold, and rank
0's PotentSync equals how late the last send was, counted once.
Usage: check_some.py REPORT.json STAMPS_DIR [CHROME_TRACE.json]"""
import sys

from realrun import SLACK, Checker, check_invariants, check_no_unknown_requests, rank_of

MESSAGES = 16


def main(report_path, stamps_dir, chrome_trace=None):
    c = Checker(report_path, stamps_dir, chrome_trace)
    check_no_unknown_requests(c)
    check_invariants(c)
    for phase, name in [(1, "Waitsome"), (2, "Testsome"), (3, "Waitall, early and late")]:
        node = c.one(phase)
        if not node:
            continue
        calls = node.get("calls", {})
        c.result(f"{name}: 16 MPI_Irecv counted", calls.get("MPI_Irecv") == MESSAGES,
                 str(calls.get("MPI_Irecv")))
        # The union of [Irecv_m, Send_m enter] over m: at least from the last
        # Irecv to the last send, at most from the first Irecv to it.
        s0, s1 = c.stamps[0], c.stamps[1]
        low = max(0.0, s1[f"{phase}.send15.0"] - s0[f"{phase}.irecv15"]) - SLACK
        high = max(0.0, s1[f"{phase}.send15.1"] - s0[f"{phase}.irecv0"]) + SLACK
        c.between(f"{name}: rank 0 potential sync (until the last send)",
                  rank_of(node, 0)["potential_sync"], low, high)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
