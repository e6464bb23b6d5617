#!/usr/bin/env python3
"""Checks prof-analyze's JSON for tests/analyzer/programs/known_waits.c (2 ranks).

The program makes rank 0 late by D = 40 ms in each phase; the characteristics
must come out at the known values within TOL (scheduling on a 2-core machine,
the busy-polling MPI and the markers' own cost blur them a little)."""
import json
import sys

D = 0.040
TOL = 0.010  # seconds


def main(path):
    report = json.load(open(path))
    by_id = {}
    for node in report["intervals"]:
        if node["level"] > 0:
            by_id.setdefault(node["id"], []).append(node)
    failures = []

    def near(what, got, want, tol=TOL):
        ok = abs(got - want) <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {got:.6f} (want {want:.6f} +- {tol:.3f})")
        if not ok:
            failures.append(what)

    def one(interval_id):
        nodes = by_id.get(interval_id, [])
        if len(nodes) != 1:
            failures.append(f"interval {interval_id}: {len(nodes)} nodes")
            print(f"FAIL interval {interval_id}: expected one node, found {len(nodes)}")
            return None
        return nodes[0]

    def rank(node, r):
        return next(p for p in node["per_rank"] if p["rank"] == r)

    for iid, name in [(1, "late sender (Recv)"), (2, "late sender (Irecv+Wait)"),
                      (3, "late entry (Allreduce)")]:
        n = one(iid)
        if not n:
            continue
        near(f"{name}: execution time", n["main"]["execution_time"], D)
        near(f"{name}: rank 1 potential sync", rank(n, 1)["potential_sync"], D)
        near(f"{name}: rank 1 MPI time", rank(n, 1)["mpi_time"], D)
        near(f"{name}: rank 0 potential sync", rank(n, 0)["potential_sync"], 0.0, 0.002)
        near(f"{name}: rank 0 CPU time", rank(n, 0)["cpu_time"], D)
        near(f"{name}: efficiency", n["main"]["efficiency"], 0.5, 0.15)

    n = one(4)
    if n:
        near("imbalance: execution time", n["main"]["execution_time"], 2 * D)
        near("imbalance: rank 1 idle", rank(n, 1)["idle_time"], D)
        near("imbalance: rank 0 idle", rank(n, 0)["idle_time"], 0.0, 0.002)
        near("imbalance: MPI time", n["main"]["mpi_time"], 0.0, 0.0005)
        near("imbalance: efficiency", n["main"]["efficiency"], 0.75, 0.1)

    outer, inner = one(5), one(6)
    if outer and inner:
        checks = [("interval 5 exe_count", outer["exe_count"], 3),
                  ("interval 5 level", outer["level"], 1),
                  ("interval 6 exe_count", inner["exe_count"], 3),
                  ("interval 6 level", inner["level"], 2),
                  ("interval 6 parent is interval 5",
                   report["intervals"][inner["parent"]]["id"], 5)]
        for what, got, want in checks:
            ok = got == want
            print(f"{'ok  ' if ok else 'FAIL'} {what}: {got} (want {want})")
            if not ok:
                failures.append(what)
        near("interval 5 execution time (3 x 4 ms)", outer["main"]["execution_time"], 0.012, 0.004)
        near("interval 6 execution time (3 x 2 ms)", inner["main"]["execution_time"], 0.006, 0.003)

    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
