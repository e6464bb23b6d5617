#!/usr/bin/env python3
"""Checks prof-analyze's JSON for delay.c (2 ranks): rank 0's wait in interval 1
(its MPI_Allreduce) is caused by interval 3 on rank 1, by about the 30 ms rank 1
computed there beyond rank 0 (as the stamps measure it), and the critical path
holds rank 1's interval 3. Tolerance: the clocks' error bound plus 5% of the
planted 30 ms.
Usage: check_delay.py REPORT.json STAMPS_DIR"""
import sys

from realrun import Checker, Span, check_invariants

PLANTED = 0.030


def main(report_path, stamps_dir):
    c = Checker(report_path, stamps_dir)
    check_invariants(c)
    in1, in3 = c.one(1), c.one(3)
    if not (in1 and in3):
        return c.finish()
    intervals = c.report["intervals"]
    index3 = intervals.index(in3)
    clock = c.report["clock"]["max_error_s"] if c.report.get("clock") else 0.0
    tol = 2 * clock + 0.05 * PLANTED
    # What rank 1 spent beyond rank 0 in intervals 3 and 4, from the stamps
    # around the markers (interval 1's own instants and the root's are a few
    # microseconds, within the tolerance).
    excess3 = c.marked_time(1, "3") - c.marked_time(0, "3")
    excess4 = c.marked_time(1, "4") - c.marked_time(0, "4")
    causes = in1["caused_by"]
    c.result("interval 1's waits have a cause", len(causes) > 0, str(causes))
    if causes:
        top = causes[0]
        c.result("the first cause is interval 3 on rank 1",
                 top["interval"] == index3 and top["rank"] == 1, str(top))
        # The wait is charged in proportion to the excesses: interval 3 gets
        # W * d3 / (d3 + d4), whatever else made rank 1 arrive late (its
        # leave of the MPI_Barrier, when the machine is busy).
        waited = sum(p["seconds"] for p in in1["waited_for"])
        d3_lo, d3_hi = max(excess3.lo, 0.0), max(excess3.hi, 0.0)
        d4_lo, d4_hi = max(excess4.lo, 0.0), max(excess4.hi, 0.0)
        share = Span(waited * d3_lo / (d3_lo + d4_hi), waited * d3_hi / max(d3_hi + d4_lo, 1e-12))
        # (The stamps, not the planted 30 ms, are the oracle: a busy machine
        # stretches the computation.)
        print(f"     rank 1's excess in interval 3 by the stamps: {excess3} (planted {PLANTED})")
        c.within("its seconds (the wait's share of rank 1's excess in interval 3)", top["seconds"], share, tol)
        c.result("causes within the waits", sum(x["seconds"] for x in causes) <= waited + 1e-6,
                 f"{sum(x['seconds'] for x in causes):.6f} <= {waited:.6f}")
    # The path runs back from the last rank's end through rank 1's computation.
    c.within("interval 3's time on the critical path (rank 1's T there)",
             in3["critical_path_s"], c.marked_time(1, "3"), tol)
    c.near("the root's time on the critical path is the run's span",
           intervals[0]["critical_path_s"], c.report["run_span_s"], 1e-6)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
