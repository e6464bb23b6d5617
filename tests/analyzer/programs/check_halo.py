#!/usr/bin/env python3
"""Checks prof-analyze's JSON for halo.c (2 ranks): no unknown requests, the
invariants everywhere, and rank 0's PotentSync in the late iteration (interval
2) equal to how late rank 1's sends really were (from the stamps), once, not
once per message. Usage: check_halo.py REPORT.json STAMPS_DIR [CHROME_TRACE.json]"""
import sys

from realrun import SLACK, Checker, check_invariants, check_no_unknown_requests, rank_of

MESSAGES = 64


def main(report_path, stamps_dir, chrome_trace=None):
    c = Checker(report_path, stamps_dir, chrome_trace)
    check_no_unknown_requests(c)
    check_invariants(c)
    loop = c.one(1)
    if loop:
        c.result("interval 1 exe_count", loop["exe_count"] == 199, str(loop["exe_count"]))
    late = c.one(2)
    if late:
        # Rank 0's receives wait from their posting (before rank 0's first
        # Isend) to the enter of rank 1's sends (between its stamps).
        first_send = c.stamp(1, "late.isend0")
        last_send = c.stamp(1, "late.isend63")
        low = max(0.0, first_send - c.stamp(0, "late.isend0")) - SLACK
        high = max(0.0, last_send - c.stamp(0, "late.irecv0")) + SLACK
        print(f"     rank 1's sends came {first_send - c.stamp(0, 'late.irecv0'):.6f} s after "
              f"rank 0's first Irecv (a per-message sum would be about {MESSAGES} times that)")
        c.between("late iteration: rank 0 potential sync", rank_of(late, 0)["potential_sync"],
                  low, high)
        if high < 2 * SLACK:
            print("     note: rank 0 reached the late iteration late itself, so this run cannot "
                  "tell a per-message sum from the right value")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
