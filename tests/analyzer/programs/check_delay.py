#!/usr/bin/env python3
"""Checks prof-analyze's JSON for delay.c (2 ranks): rank 0's wait in interval 1
(its MPI_Allreduce) is caused by rank 1, whose excess over rank 0 since the
MPI_Barrier (about the planted 30 ms, as the stamps measure it; at most the
wait) is charged to the intervals it executed in proportion to its time in
each: interval 3 comes first. The critical path holds rank 1's interval 3.
Tolerance: the clocks' error bound plus 5% of the planted 30 ms.
Usage: check_delay.py REPORT.json STAMPS_DIR [CHROME_TRACE.json]"""
import sys

from realrun import Checker, Span, check_invariants

PLANTED = 0.030


def main(report_path, stamps_dir, chrome_trace=None):
    c = Checker(report_path, stamps_dir, chrome_trace)
    check_invariants(c)
    in1, in3 = c.one(1), c.one(3)
    if not (in1 and in3):
        return c.finish()
    intervals = c.report["intervals"]
    index3 = intervals.index(in3)
    clock = c.report["clock"]["max_error_s"] if c.report.get("clock") else 0.0
    tol = 2 * clock + 0.05 * PLANTED
    # Each rank's stretch: from its MPI_Barrier's leave to its MPI_Allreduce's
    # enter; rank 1's excess is the difference of the two lengths.
    stretch = {r: c.enter(r, "1.allreduce") - c.leave(r, "barrier") for r in (0, 1)}
    excess = stretch[1] - stretch[0]
    causes = in1["caused_by"]
    c.result("interval 1's waits have a cause", len(causes) > 0, str(causes))
    if causes:
        top = causes[0]
        c.result("the first cause is interval 3 on rank 1",
                 top["interval"] == index3 and top["rank"] == 1, str(top))
        # The charge is the excess, at most the wait; interval 3's share of it
        # is rank 1's time there over its whole stretch (whatever else made
        # rank 1 arrive late, e.g. its leave of the MPI_Barrier on a busy
        # machine, is in the stretch too).
        waited = sum(p["seconds"] for p in in1["waited_for"])
        charged = Span(max(0.0, min(waited, excess.lo)), max(0.0, min(waited, excess.hi)))
        time3 = c.marked_time(1, "3")
        share = charged * time3 / stretch[1]
        # (The stamps, not the planted 30 ms, are the oracle: a busy machine
        # stretches the computation.)
        print(f"     rank 1's excess by the stamps: {excess}, in interval 3: {time3} of {stretch[1]}"
              f" (planted {PLANTED} more)")
        c.within("its seconds (the charge times rank 1's share of its time in interval 3)",
                 top["seconds"], share, tol)
        c.within("the causes sum to the charge (rank 1's excess, at most the wait)",
                 sum(x["seconds"] for x in causes), charged, tol)
        c.result("causes within the waits", sum(x["seconds"] for x in causes) <= waited + 1e-6,
                 f"{sum(x['seconds'] for x in causes):.6f} <= {waited:.6f}")
    # The path runs back from the last rank's end through rank 1's computation.
    c.within("interval 3's time on the critical path (rank 1's T there)",
             in3["critical_path_s"], c.marked_time(1, "3"), tol)
    c.near("the root's time on the critical path is the run's span",
           intervals[0]["critical_path_s"], c.report["run_span_s"], 1e-6)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
