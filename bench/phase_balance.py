#!/usr/bin/env python3
"""Sums up a phase log of prof-analyze (PROF_ANALYZE_PHASE_LOG=FILE): how
unevenly the workers' phases ran, which is what they wait for at the phase
ends (docs/performance.md, "The waits at the phase ends are the workers' own").

    PROF_ANALYZE_PHASE_LOG=/tmp/phases build/analyzer/prof-analyze TRACE -o /dev/null -q --no-progress
    bench/phase_balance.py /tmp/phases

For each worker: its work summed over the phases (its busy time less the
wait for the other workers' first steps, the log's handover_ns), the waits
the others imposed on it (that handover, and at each phase's end the
phase's longest busy time less its own), and its events.
Then, over the phases, how long an imbalance lasts: the correlation of a
worker's lead over the phase's mean work with its lead some phases on
(near 0: noise that evens out; near 1: one worker slower for long stretches,
which no shorter phase evens out), and the phases where the slowest worker
took over twice the median phase (a spike: a chunk entered, a sweep), with
their share of the waits and the distances between them (a chunk's worth of
phases: the workers' ranks entering their next chunks together).
Last, what the phases would take if a worker could run up to k phases ahead
of the slowest (its mail read k phases late): a replay of the logged work,
each phase of a worker starting when its previous one ends and the last of
phase p-k-1 has ended. Lock-step (k = 0) is how the engine runs, less its
handovers; no limit is each worker's work alone. (A log of five columns,
written before handover_ns was, replays its busy times.)
"""
import argparse
import collections
import statistics
import sys
from typing import NamedTuple


class Sample(NamedTuple):
    """One worker's phase, as the log's line gives it (ns)."""
    busy: int
    cpu: int
    events: int
    handover: int  # of busy, the wait for the other workers' first steps

    @property
    def work(self):
        return self.busy - min(self.busy, self.handover)


def read_log(path):
    phases = {}
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if line.startswith("#") or not line.strip():
                    continue
                try:
                    fields = [int(x) for x in line.split()]
                    if len(fields) == 5:
                        fields.append(0)
                    phase, worker, busy, cpu, events, handover = fields
                except ValueError:
                    sys.exit(f"phase_balance.py: {path}:{number}: not "
                             f"'phase worker busy_ns cpu_ns events handover_ns': {line.rstrip()}")
                phases.setdefault(phase, {})[worker] = Sample(busy, cpu, events, handover)
    except OSError as e:
        sys.exit(f"phase_balance.py: {path}: {e.strerror}")
    return [phases[p] for p in sorted(phases)]


def lag_correlation(series, lag):
    n = len(series) - lag
    if n < 2:
        return float("nan")
    mean = statistics.fmean(series)
    var = statistics.fmean([(x - mean) ** 2 for x in series])
    if var == 0:
        return float("nan")
    return statistics.fmean([(series[i] - mean) * (series[i + lag] - mean) for i in range(n)]) / var


def with_slack(full, workers, slack):
    """The phases' wall if a worker may start phase p once every worker ended p-slack-1."""
    ends = {w: [] for w in workers}
    for p, phase in enumerate(full):
        barrier = max(ends[x][p - slack - 1] for x in workers) if slack is not None and p > slack else 0
        for w in workers:
            start = max(ends[w][p - 1] if p else 0, barrier)
            ends[w].append(start + phase[w].work)
    return max(ends[w][-1] for w in workers)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="the file PROF_ANALYZE_PHASE_LOG named")
    parser.add_argument("--lags", default="1,10,40", help="phases on at which to correlate (default 1,10,40)")
    args = parser.parse_args()
    phases = read_log(args.log)
    if not phases:
        sys.exit(f"phase_balance.py: {args.log}: no phases")
    workers = sorted({w for p in phases for w in p})
    full = [p for p in phases if len(p) == len(workers)]
    print(f"{len(phases)} phases, {len(workers)} workers")
    for w in workers:
        work = sum(p[w].work for p in full)
        handover = sum(p[w].handover for p in full)
        at_ends = sum(max(v.busy for v in p.values()) - p[w].busy for p in full)
        events = sum(p[w].events for p in phases if w in p)
        print(f"  worker {w}: work {work / 1e9:.3f} s, waited {(handover + at_ends) / 1e9:.3f} s "
              f"({handover / 1e9:.3f} s for the others' first steps), events {events}")
    if len(workers) < 2 or len(full) < 3:
        return
    lags = [int(x) for x in args.lags.split(",")]
    for w in workers:
        lead = [p[w].work - statistics.fmean(v.work for v in p.values()) for p in full]
        cells = ", ".join(f"{lag} on {lag_correlation(lead, lag):.2f}" for lag in lags)
        print(f"  worker {w}'s lead over the mean, correlated with its lead: {cells}")
    slowest = [max(v.work for v in p.values()) for p in full]
    median = statistics.median(slowest)
    spike_at = [i for i, s in enumerate(slowest) if s > 2 * median]
    print(f"  median phase {median / 1e3:.0f} us; phases over twice that: {len(spike_at)}")
    if spike_at:
        # What the spikes cost the other workers, and their cadence: a spike
        # every chunk's worth of phases is the workers entering their next
        # chunks (a read and a CRC each) in the same phase.
        imbalance = [slowest[i] * len(workers) - sum(v.work for v in p.values()) for i, p in enumerate(full)]
        share = sum(imbalance[i] for i in spike_at) / max(1, sum(imbalance))
        gaps = collections.Counter(b - a for a, b in zip(spike_at, spike_at[1:]))
        cadence = ", ".join(f"{gap} ({count}x)" for gap, count in gaps.most_common(3))
        print(f"    they hold {share:.0%} of the waits at the phase ends; phases between them, most often: "
              f"{cadence or 'one spike'}")
    logged = sum(max(v.busy for v in p.values()) for p in full)
    lock_step = with_slack(full, workers, 0)
    cells = ", ".join(f"{k} ahead {with_slack(full, workers, k) / lock_step:.3f}x" for k in (1, 2, 4))
    print(f"  phases' wall {logged / 1e9:.3f} s as logged, {lock_step / 1e9:.3f} s in lock-step without the "
          f"handovers; with workers up to {cells}, unbounded {with_slack(full, workers, None) / lock_step:.3f}x")


if __name__ == "__main__":
    main()
