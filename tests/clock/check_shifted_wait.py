#!/usr/bin/env python3
"""Checks the late-sender waits of shifted_wait.c's report (every interval).

Usage: check_shifted_wait.py right|wrong REPORT_JSON PROGRAM_OUTPUT DUMP_TXT

Each interval's expected wait, for its receiving rank, is the program's own:
the sender's CLOCK_MONOTONIC just before MPI_Send minus the receiver's just
before MPI_Recv (one clock on one machine, never shifted). The analyzer's value
may differ by the bound the trace states for the two ranks' clock offsets (the
JSON `clock` error_s of each: half the round trip of its sync, plus its
leader's where it shares its leader's clock), plus the microseconds between
the program's reading and the profiler's; SCHEDULING leaves room for a
preemption there. A 3 s shift left uncorrected, or corrected with the wrong
sign or unit, moves a rank by seconds, and one of its two intervals (whichever's
sender is shown too early) then has no wait.
"right": every wait matches; "wrong": at least one does not (the
unsynchronized run, which shows that the check can fail)."""
import json
import re
import sys

SCHEDULING = 0.005  # seconds


def main(mode, report_path, program_path, dump_path):
    if mode not in ("right", "wrong"):
        print(f"FAIL unknown mode {mode!r} (right or wrong)")
        return 2
    program = open(program_path).read()
    m = re.search(r"^shifted_wait ranks (\d+)$", program, re.M)
    if not m:
        print(f"FAIL no 'shifted_wait ranks' line in {program_path}")
        return 1
    ranks = int(m.group(1))
    phases = [(int(m.group(1)), int(m.group(2)), float(m.group(4)) - float(m.group(3)))
              for m in re.finditer(r"shifted_wait interval (\d+) receiver (\d+) "
                                   r"recv_enter (\S+) send_enter (\S+)", program)]
    if sorted(i for i, _, _ in phases) != list(range(1, 2 * ranks - 1)):
        print(f"FAIL expected intervals 1..{2 * ranks - 2} in {program_path}, "
              f"found {sorted(i for i, _, _ in phases)}")
        return 1

    # Each rank's bound (docs/metrics.md, "Clock offsets"): half its largest
    # round trip, plus how far its offset drifted from the start's sync to
    # the end's.
    rtts, bounds = [], {}
    for part in re.split(r"^file ", open(dump_path).read(), flags=re.M)[1:]:
        rank = int(re.search(r"rank-(\d+)\.prof", part.split("\n", 1)[0]).group(1))
        syncs = {m.group(1): (float(m.group(2)), float(m.group(3)) * 1e-9)
                 for m in re.finditer(r"^clock (\S+) ticks=\S+ offset_ns=(\S+) rtt_ns=(\S+)", part, re.M)}
        if not syncs:
            continue
        rtts += [rtt for _, rtt in syncs.values()]
        drift = abs(syncs["final"][0] - syncs["init"][0]) * 1e-9 if {"init", "final"} <= syncs.keys() else 0.0
        bounds[rank] = max(rtt for _, rtt in syncs.values()) / 2 + drift
    if not rtts:
        print(f"FAIL no clock definitions in {dump_path}")
        return 1
    print(f"{ranks} ranks; sync RTTs up to {max(rtts) * 1e6:.1f} us")

    report = json.load(open(report_path))
    failures, mismatches = [], 0
    # The report states the bound it was made with: JSON `clock` (the run's
    # scheme; each rank's bound, the largest as max_error_s) and the text line
    # after Level 0.
    clock = report.get("clock")
    if not clock:
        print("FAIL JSON has no clock")
        return 1
    per_rank = {p["rank"]: p["error_s"] for p in clock["per_rank"]}
    if sorted(per_rank) != list(range(ranks)):
        failures.append(f"clock.per_rank lists ranks {sorted(per_rank)}")
    text = open(report_path.replace("report.json", "report.txt")).read()
    if clock["scheme"] == "none":
        # Nothing measured the offsets: no bound is claimed.
        if clock["max_error_s"] is not None or any(e is not None for e in per_rank.values()):
            failures.append(f"scheme none claims a bound: {clock}")
        line = "Clock offsets not measured (scheme none)"
        per_rank = {r: 0.0 for r in per_rank}
    else:
        # (The dump prints offsets and round trips to 0.001 ns: the bound
        # from it is within 2 ps of the report's.)
        for rank, bound in sorted(bounds.items()):
            if abs(per_rank.get(rank, -1) - bound) > 1e-11:
                failures.append(f"clock rank {rank}: error_s {per_rank.get(rank)} is not half its largest round "
                                f"trip plus its drift, {bound}")
        if max(per_rank.values(), default=-1) != clock["max_error_s"]:
            failures.append(f"clock.max_error_s {clock['max_error_s']} is not the largest error_s")
        line = f"Clock offsets known within {clock['max_error_s'] * 1e6:.3f} us (scheme {clock['scheme']})"
    if line not in text:
        failures.append(f"the text report lacks '{line}'")
    print(f"clock: {line}")

    for interval, receiver, expected in sorted(phases):
        sender = interval if interval < ranks else 0
        tolerance = per_rank.get(receiver, 0) + per_rank.get(sender, 0) + SCHEDULING
        # The sender sleeps 40 ms from the receiver's word that it is about to
        # wait: a wait too short to tell from none means the program failed.
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
              f"waits for rank {sender} {got:.6f} s, program's {expected:.6f} s, "
              f"error {error * 1e3:.3f} ms (tolerance {tolerance * 1e3:.3f} ms)")
    for f in failures:
        print("FAIL", f)
    if failures:
        return 1
    ok = mismatches == 0 if mode == "right" else mismatches > 0
    print(f"{'ok  ' if ok else 'FAIL'} {mismatches} of {len(phases)} waits outside the tolerance "
          f"({'none' if mode == 'right' else 'at least one'} must be)")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
