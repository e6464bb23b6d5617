#!/usr/bin/env python3
"""Checks the late-sender waits of shifted_wait.c's report (intervals 1 and 2).

Usage: check_shifted_wait.py right|wrong REPORT_JSON PROGRAM_OUTPUT DUMP_TXT

Each interval's expected wait, for its receiving rank, is the program's own:
the sender's CLOCK_MONOTONIC just before MPI_Send minus the receiver's just
before MPI_Recv (one clock on one machine, never shifted). The analyzer's value
may differ by the clock synchronization's error, at most half the round trip of
the init or of the final sync (the trace's K definitions, shown by prof-dump),
plus the microseconds between the program's reading and the profiler's;
SCHEDULING leaves room for a preemption there. A 3 s shift left uncorrected, or
corrected with the wrong sign or unit, moves one rank by seconds, and one of
the two intervals (whichever's sender is shown too early) then has no wait.
"right": both waits match; "wrong": at least one does not (the unsynchronized
run, which shows that the check can fail)."""
import json
import re
import sys

SCHEDULING = 0.005  # seconds


def main(mode, report_path, program_path, dump_path):
    if mode not in ("right", "wrong"):
        print(f"FAIL unknown mode {mode!r} (right or wrong)")
        return 2
    phases = [(int(m.group(1)), int(m.group(2)), float(m.group(4)) - float(m.group(3)))
              for m in re.finditer(r"shifted_wait interval (\d+) receiver (\d+) "
                                   r"recv_enter (\S+) send_enter (\S+)", open(program_path).read())]
    if len(phases) != 2:
        print(f"FAIL expected 2 'shifted_wait interval' lines in {program_path}, found {len(phases)}")
        return 1

    rtts = [float(m.group(1)) * 1e-9
            for m in re.finditer(r"^clock \S+ ticks=\S+ offset_ns=\S+ rtt_ns=(\S+)",
                                 open(dump_path).read(), re.M)]
    if not rtts:
        print(f"FAIL no clock definitions in {dump_path}")
        return 1
    tolerance = max(rtts) + SCHEDULING
    print(f"sync RTTs {', '.join(f'{r * 1e6:.1f} us' for r in rtts)}; "
          f"tolerance {tolerance * 1e3:.3f} ms")

    report = json.load(open(report_path))
    failures, mismatches = [], 0
    for interval, receiver, expected in phases:
        # The sender sleeps 40 ms from the barrier; a receiver descheduled for
        # most of that would leave a wait too short to tell from none.
        if expected <= tolerance + 0.001:
            failures.append(f"interval {interval}: inconclusive, the program's own wait "
                            f"{expected:.6f} s is within the tolerance of 0")
            continue
        nodes = [n for n in report["intervals"] if n["level"] == 1 and n["id"] == interval]
        if len(nodes) != 1:
            failures.append(f"interval {interval}: expected one node, found {len(nodes)}")
            continue
        row = next((p for p in nodes[0]["per_rank"] if p["rank"] == receiver), None)
        if row is None:
            failures.append(f"interval {interval}: no rank {receiver}")
            continue
        got = row["potential_sync"]
        error = abs(got - expected)
        mismatches += error > tolerance
        print(f"{'ok  ' if error <= tolerance else 'off '} interval {interval}: rank {receiver} "
              f"late-sender wait {got:.6f} s, program's {expected:.6f} s, error {error * 1e3:.3f} ms")
    # The report states the bound it was made with: JSON `clock` (the run's
    # scheme; each rank's half round trip, the largest as max_error_s) and the
    # text line after Level 0.
    clock = report.get("clock")
    if not clock:
        failures.append("JSON has no clock")
    else:
        bound = max(rtts) / 2
        per_rank = {p["rank"]: p["error_s"] for p in clock["per_rank"]}
        if sorted(per_rank) != [0, 1]:
            failures.append(f"clock.per_rank lists ranks {sorted(per_rank)}")
        if abs(clock["max_error_s"] - bound) > 1e-12 or max(per_rank.values(), default=-1) != clock["max_error_s"]:
            failures.append(f"clock.max_error_s {clock['max_error_s']} is not the largest half round trip {bound}")
        text = open(report_path.replace("report.json", "report.txt")).read()
        line = f"Clock offsets known within {clock['max_error_s'] * 1e6:.3f} us (scheme {clock['scheme']})"
        if line not in text:
            failures.append(f"the text report lacks '{line}'")
        print(f"clock: scheme {clock['scheme']}, max error {clock['max_error_s'] * 1e6:.3f} us")
    for f in failures:
        print("FAIL", f)
    if failures:
        return 1
    ok = mismatches == 0 if mode == "right" else mismatches > 0
    print(f"{'ok  ' if ok else 'FAIL'} {mismatches} of 2 waits outside the tolerance "
          f"({'none' if mode == 'right' else 'at least one'} must be)")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
