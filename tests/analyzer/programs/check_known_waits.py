#!/usr/bin/env python3
"""Checks prof-analyze's JSON for tests/analyzer/programs/known_waits.c (2 ranks).

The program makes rank 0 late by computing D = 40 ms in each phase. How late it
really was depends on the machine's load, so the expected characteristics are
derived from the program's stamps (realrun.py's Span: bounds that hold however
the ranks were scheduled), never from D itself; D only makes a wrong definition
(0, or 2D) miss those bounds by tens of milliseconds.
Usage: check_known_waits.py REPORT.json STAMPS_DIR [CHROME_TRACE.json]"""
import sys

from realrun import (Checker, Span, check_invariants, check_no_unknown_requests, positive,
                     rank_of, span_max)

EXECUTIONS_5_6 = 3


def main(report_path, stamps_dir, chrome_trace=None):
    c = Checker(report_path, stamps_dir, chrome_trace)
    check_no_unknown_requests(c)
    check_invariants(c)
    ranks = (0, 1)

    for iid, name in [(1, "late sender (Recv)"), (2, "late sender (Irecv+Wait)"),
                      (3, "late entry (Allreduce)")]:
        n = c.one(iid)
        if not n:
            continue
        key = str(iid)
        time = {r: c.marked_time(r, key) for r in ranks}
        execution = span_max(*time.values())
        if iid == 1:
            mpi = {0: c.duration(0, "1.send"), 1: c.duration(1, "1.recv")}
            sync = {0: Span(0.0), 1: positive(c.enter(0, "1.send") - c.enter(1, "1.recv"))}
        elif iid == 2:
            mpi = {0: c.duration(0, "2.send"), 1: c.duration(1, "2.irecv") + c.duration(1, "2.wait")}
            sync = {0: Span(0.0), 1: positive(c.enter(0, "2.send") - c.enter(1, "2.irecv"))}
        else:
            mpi = {r: c.duration(r, "3.allreduce") for r in ranks}
            last = span_max(*(c.enter(r, "3.allreduce") for r in ranks))
            sync = {r: positive(last - c.enter(r, "3.allreduce")) for r in ranks}
        cpu = {r: positive(time[r] - mpi[r]) for r in ranks}
        c.within(f"{name}: execution time", n["main"]["execution_time"], execution)
        c.within(f"{name}: rank 1 potential sync", rank_of(n, 1)["potential_sync"], sync[1])
        c.within(f"{name}: rank 1 MPI time", rank_of(n, 1)["mpi_time"], mpi[1])
        c.within(f"{name}: rank 0 potential sync", rank_of(n, 0)["potential_sync"], sync[0])
        c.within(f"{name}: rank 0 CPU time", rank_of(n, 0)["cpu_time"], cpu[0])
        c.within(f"{name}: efficiency", n["main"]["efficiency"],
                 (cpu[0] + cpu[1]) / (execution + execution))
        # Its wait by kind, on rank 0 (the late sender or the last member).
        kind = "wait_at_nxn" if iid == 3 else "late_sender"
        c.within(f"{name}: rank 1 {kind}", wait_of(c, n, kind, 1), sync[1])
        c.result(f"{name}: waited for rank 0", partners(n)[:1] == [0], str(partners(n)))

    n = c.one(4)
    if n:
        time = {r: c.marked_time(r, "4") for r in ranks}
        execution = span_max(*time.values())
        c.within("imbalance: execution time", n["main"]["execution_time"], execution)
        for r in ranks:
            c.within(f"imbalance: rank {r} idle", rank_of(n, r)["idle_time"],
                     positive(execution - time[r]))
        c.within("imbalance: MPI time", n["main"]["mpi_time"], Span(0.0))
        c.within("imbalance: efficiency", n["main"]["efficiency"],
                 (time[0] + time[1]) / (execution + execution))

    outer, inner = c.one(5), c.one(6)
    if outer and inner:
        checks = [("interval 5 exe_count", outer["exe_count"], EXECUTIONS_5_6),
                  ("interval 5 level", outer["level"], 1),
                  ("interval 6 exe_count", inner["exe_count"], EXECUTIONS_5_6),
                  ("interval 6 level", inner["level"], 2),
                  ("interval 6 parent is interval 5",
                   c.report["intervals"][inner["parent"]]["id"], 5)]
        for what, got, want in checks:
            c.result(what, got == want, f"{got} (want {want})")
        for node, iid in [(outer, 5), (inner, 6)]:
            # Each rank's executions summed, then the longest rank (docs/metrics.md).
            per_rank = []
            for r in ranks:
                summed = Span(0.0)
                for k in range(EXECUTIONS_5_6):
                    summed = summed + c.marked_time(r, f"{iid}.{k}")
                per_rank.append(summed)
            total = span_max(*per_rank)
            c.within(f"interval {iid} execution time (3 executions)",
                     node["main"]["execution_time"], total)
    n = c.one(7)
    if n:
        # Rank 0's synchronous send waits from its enter until rank 1 issues
        # the receive, 50 ms later: a late receiver, apart from Potential Sync.
        late = positive(c.enter(1, "7.recv") - c.enter(0, "7.ssend"))
        c.within("late receiver: rank 0 late_receiver", wait_of(c, n, "late_receiver", 0), late)
        c.within("late receiver: rank 0 potential sync", rank_of(n, 0)["potential_sync"], Span(0.0))
        c.result("late receiver: waited for rank 1", partners(n)[:1] == [1], str(partners(n)))
    return c.finish()


def wait_of(c, node, kind, rank):
    """A rank's seconds of one wait kind (wait_states' per_rank follows the
    report's top-level ranks)."""
    return node["wait_states"][kind]["per_rank"][c.report["ranks"].index(rank)]


def partners(node):
    return [p["rank"] for p in node["waited_for"]]


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
