"""Shared checks for the real-run analyzer tests (programs run under the profiler).

Expected values come from the programs' own CLOCK_MONOTONIC stamps (realrun.h),
so they follow what the run really did, however the machine scheduled it. The
profiler's timestamps lie inside the program's stamps.

Where a check is given the run's Chrome trace, a stamped call's enter and leave
are the trace's own, carried onto the stamps' clock by the rank's offset: the
one offset under which every stamped call the rank recorded lies inside its
stamps (checked), known to microseconds. That holds however long the rank was
descheduled between a stamp and the profiler's timestamp. Without the trace,
SLACK bounds that gap instead: right on a quiet machine, a guess under load.
Either way the bounds stay far below the differences between a right and a
wrong definition, which every test makes tens of milliseconds wide."""
import json
import os

SLACK = 0.002     # seconds, per instant compared (without the trace's calls)
ROUNDING = 1e-6   # the JSON's own rounding, for the invariants
CLOCKS = 0.0005   # the profiler's timer rate and clock synchronization (same-host RTTs: ~1 us)


class Span:
    """A value known to lie in [lo, hi]; arithmetic keeps the bounds true."""

    def __init__(self, lo, hi=None):
        self.lo, self.hi = lo, lo if hi is None else hi

    def __add__(self, o):
        o = o if isinstance(o, Span) else Span(o)
        return Span(self.lo + o.lo, self.hi + o.hi)

    def __sub__(self, o):
        o = o if isinstance(o, Span) else Span(o)
        return Span(self.lo - o.hi, self.hi - o.lo)

    def __mul__(self, o):  # non-negative spans only
        o = o if isinstance(o, Span) else Span(o)
        return Span(self.lo * o.lo, self.hi * o.hi)

    def __truediv__(self, o):  # positive spans only
        o = o if isinstance(o, Span) else Span(o)
        return Span(self.lo / o.hi, self.hi / o.lo)

    def __repr__(self):
        return f"[{self.lo:.6f}, {self.hi:.6f}]"


def span_max(*spans):
    return Span(max(x.lo for x in spans), max(x.hi for x in spans))


def positive(x):
    return span_max(x, Span(0.0))


class Checker:
    def __init__(self, report_path, stamps_dir=None, chrome_trace=None):
        with open(report_path) as f:
            self.report = json.load(f)
        self.stamps = load_stamps(stamps_dir) if stamps_dir else {}
        self.chrome_trace = chrome_trace
        self.calls = None       # (rank, function) -> [(enter, leave)], read at the first use
        self.stamped = {}       # (rank, function kind) -> stamped call names, by CALL.0
        self.offsets = {}
        self.failures = []

    def result(self, what, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
        if not ok:
            self.failures.append(what)
        return ok

    def near(self, what, got, want, tol):
        return self.result(what, abs(got - want) <= tol,
                           f"{got:.6f} (want {want:.6f} +- {tol:.6f})")

    def between(self, what, got, low, high):
        return self.result(what, low <= got <= high, f"{got:.6f} (want in [{low:.6f}, {high:.6f}])")

    def within(self, what, got, span, tol=CLOCKS):
        return self.result(what, span.lo - tol <= got <= span.hi + tol,
                           f"{got:.6f} (want in {span}, +- {tol:.6f})")

    def enter(self, rank, call):
        """The profiler's enter of the call stamped CALL.0 / CALL.1, on the stamps'
        clock: the trace's, or else just after CALL.0."""
        if self.chrome_trace:
            return self.offset(rank) + self.recorded(rank, call)[0]
        t0, t1 = self.stamp(rank, call + ".0"), self.stamp(rank, call + ".1")
        return Span(t0, min(t0 + SLACK, t1))

    def leave(self, rank, call):
        """Its leave: the trace's, or else just before CALL.1."""
        if self.chrome_trace:
            return self.offset(rank) + self.recorded(rank, call)[1]
        t0, t1 = self.stamp(rank, call + ".0"), self.stamp(rank, call + ".1")
        return Span(max(t1 - SLACK, t0), t1)

    def recorded(self, rank, call):
        """(enter, leave) of the call stamped CALL.0 / CALL.1 in the trace, seconds on
        the trace's clock. CALL ends in the function's name ("2.irecv": MPI_Irecv);
        the program stamps every call of that function, so the k-th stamped one on
        the rank is the k-th in the trace."""
        if self.calls is None:
            self.calls = load_calls(self.chrome_trace)
        kind = call.rsplit(".", 1)[-1]
        if (rank, kind) not in self.stamped:
            self.stamped[rank, kind] = [name for _, name in sorted(
                (t, name[:-2]) for name, t in self.stamps.get(rank, {}).items()
                if name.endswith(".0") and name[:-2].rsplit(".", 1)[-1] == kind)]
        stamped = self.stamped[rank, kind]
        function = "MPI_" + kind.capitalize()
        calls = self.calls.get((rank, function), [])
        if len(calls) != len(stamped):
            raise SystemExit(f"FAIL: rank {rank} stamped {len(stamped)} {function} call(s), "
                             f"the trace has {len(calls)}")
        return calls[stamped.index(call)]

    def offset(self, rank):
        """The stamps' clock minus the trace's on RANK: every stamped call's enter
        lies after its CALL.0 and its leave before its CALL.1, which bounds it from
        both sides (to the microseconds a quiet stamp takes). Checked: the bounds
        meet, and the ranks' offsets agree (one host, one clock: what the clock
        synchronization must give)."""
        if rank in self.offsets:
            return self.offsets[rank]
        lo, hi = float("-inf"), float("inf")
        for name in self.stamps.get(rank, {}):
            if name.endswith(".0") and name[:-2] + ".1" in self.stamps[rank]:
                call = name[:-2]
                enter, leave = self.recorded(rank, call)
                lo = max(lo, self.stamp(rank, call + ".0") - enter)
                hi = min(hi, self.stamp(rank, call + ".1") - leave)
        if lo == float("-inf"):
            raise SystemExit(f"FAIL: rank {rank} stamped no call")
        self.result(f"rank {rank}: every stamped call recorded inside its stamps", lo <= hi + CLOCKS,
                    f"offset bounds [{lo:.6f}, {hi:.6f}] (+- {CLOCKS:.6f})")
        found = Span(min(lo, hi), max(lo, hi))
        for other, theirs in self.offsets.items():
            gap = max(found.lo, theirs.lo) - min(found.hi, theirs.hi)
            self.result(f"ranks {other} and {rank}: one clock", gap <= CLOCKS,
                        f"offsets {theirs} and {found} (+- {CLOCKS:.6f})")
        self.offsets[rank] = found
        return found

    def duration(self, rank, call):
        return positive(self.leave(rank, call) - self.enter(rank, call))

    def marked_time(self, rank, name):
        """T_r of the execution stamped NAME.begin/.in/.out/.end around its markers:
        the begin marker lies between .begin and .in, the end marker between .out
        and .end."""
        return (Span(self.stamp(rank, name + ".out"), self.stamp(rank, name + ".end")) -
                Span(self.stamp(rank, name + ".begin"), self.stamp(rank, name + ".in")))

    def stamp(self, rank, name):
        try:
            return self.stamps[rank][name]
        except KeyError:
            raise SystemExit(f"FAIL: no stamp '{name}' from rank {rank}")

    def nodes(self, interval_id):
        return [n for n in self.report["intervals"] if n["level"] > 0 and n["id"] == interval_id]

    def one(self, interval_id):
        found = self.nodes(interval_id)
        if not self.result(f"interval {interval_id} is one node", len(found) == 1,
                           f"{len(found)} node(s)"):
            return None
        return found[0]

    def finish(self):
        print(f"{len(self.failures)} failed")
        return 1 if self.failures else 0


def load_calls(chrome_trace):
    """Each rank's MPI calls in a Chrome trace (prof-analyze --chrome-trace): by
    (rank, function), the (enter, leave) of each in seconds, in order."""
    with open(chrome_trace) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    calls = {}
    for e in events:
        # A rank's main thread is its tid (other threads: 10^6 and above).
        if e.get("ph") == "X" and e.get("cat") == "mpi" and e.get("tid", -1) < 1000000:
            calls.setdefault((e["tid"], e["name"]), []).append(
                (e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6))
    for v in calls.values():
        v.sort()
    return calls


def load_stamps(directory):
    stamps = {}
    for name in os.listdir(directory):
        if not (name.startswith("stamps-rank-") and name.endswith(".txt")):
            continue
        rank = int(name[len("stamps-rank-"):-len(".txt")])
        with open(os.path.join(directory, name)) as f:
            stamps[rank] = {k: float(v) for k, v in (line.split() for line in f if line.strip())}
    return stamps


def rank_of(node, rank):
    return next(p for p in node["per_rank"] if p["rank"] == rank)


def check_invariants(check):
    """docs/metrics.md: per rank and interval, Comm <= MPI <= T, PotentSync <= T,
    TStart <= MPI; efficiency within [0, 1]; a nested interval's Execution Time,
    and its T and MPI per rank, within its parent's; the wait kinds of PotentSync
    sum to it, each kind within [0, T]; root causes within the waits; the
    critical path: each interval within its parent, the root equal to the run's span."""
    bad = []
    intervals = check.report["intervals"]
    for index, node in enumerate(intervals):
        where = f"interval #{index} (id {node['id']}, level {node['level']})"
        eff = node["main"]["efficiency"]
        if not (-ROUNDING <= eff <= 1 + ROUNDING):
            bad.append(f"{where}: efficiency {eff}")
        if node.get("parent") is not None:
            parent = intervals[node["parent"]]
            if node["main"]["execution_time"] > parent["main"]["execution_time"] + ROUNDING:
                bad.append(f"{where}: execution_time {node['main']['execution_time']:.6f} > "
                           f"its parent's {parent['main']['execution_time']:.6f}")
            parent_ranks = {p["rank"]: p for p in parent["per_rank"]}
            for p in node["per_rank"]:
                q = parent_ranks.get(p["rank"])
                for key in ("time", "mpi_time"):
                    if q is not None and p[key] > q[key] + ROUNDING:
                        bad.append(f"{where} rank {p['rank']}: {key} {p[key]:.6f} > "
                                   f"its parent's {q[key]:.6f}")
        for p in node["per_rank"]:
            r, t = p["rank"], p["time"]
            for lesser, greater in [("comm_time", "mpi_time"), ("mpi_time", "time"),
                                    ("potential_sync", "time"), ("time_of_start", "mpi_time")]:
                if p[lesser] > p[greater] + ROUNDING:
                    bad.append(f"{where} rank {r}: {lesser} {p[lesser]:.6f} > "
                               f"{greater} {p[greater]:.6f}")
        # Wait states: each kind within [0, T_r]; the kinds of Potential Sync.
        # sum to it, less what a late receiver took of it (another thread's,
        # in a collective's wait), and with the late receiver to at least it.
        waits = node["wait_states"]
        slot = {rank: i for i, rank in enumerate(check.report["ranks"])}
        for p in node["per_rank"]:
            r, i = p["rank"], slot[p["rank"]]
            kinds = 0.0
            for key, kind in waits.items():
                v = kind["per_rank"][i]
                if not (-ROUNDING <= v <= p["time"] + ROUNDING):
                    bad.append(f"{where} rank {r}: {key} {v:.6f} outside [0, T_r {p['time']:.6f}]")
                if key != "late_receiver":
                    kinds += v
            late_receiver = waits["late_receiver"]["per_rank"][i]
            ps = p["potential_sync"]
            if (kinds > ps + ROUNDING or kinds + late_receiver < ps - ROUNDING
                    or (late_receiver <= ROUNDING and abs(kinds - ps) > ROUNDING)):
                bad.append(f"{where} rank {r}: wait kinds sum to {kinds:.9f} "
                           f"(late_receiver {late_receiver:.9f}), potential_sync {ps:.9f}")
        # Root causes sum to at most the interval's waits; its time on the
        # critical path is within its parent's.
        caused = sum(x["seconds"] for x in node.get("caused_by", []))
        waited = sum(p["seconds"] for p in node["waited_for"])
        if caused > waited + ROUNDING:
            bad.append(f"{where}: caused_by sums to {caused:.6f} > waits {waited:.6f}")
        cp = node.get("critical_path_s")
        if cp is not None and node.get("parent") is not None:
            parent_cp = intervals[node["parent"]]["critical_path_s"]
            if cp > parent_cp + ROUNDING:
                bad.append(f"{where}: critical_path_s {cp:.6f} > its parent's {parent_cp:.6f}")
    # The critical path covers the run's span (from the earliest rank's start to
    # the latest rank's end).
    span = check.report.get("run_span_s")
    if span is not None and intervals and abs(intervals[0]["critical_path_s"] - span) > ROUNDING:
        bad.append(f"root critical_path_s {intervals[0]['critical_path_s']:.9f} != run_span_s {span:.9f}")
    for b in bad[:20]:
        print(f"     {b}")
    check.result("invariants of metrics.md on every interval and rank", not bad,
                 f"{len(bad)} violation(s) over {len(check.report['intervals'])} interval(s)")


def check_no_unknown_requests(check):
    """Every completion and start names a request the analyzer knows."""
    stats = check.report.get("stats", {})
    check.result("stats.unknown_requests", stats.get("unknown_requests", 0) == 0,
                 str(stats.get("unknown_requests")))
    unknown = [w for w in check.report.get("warnings", [])
               if "unknown" in w.get("category", "").lower()]
    for w in unknown:
        print(f"     warning: {w.get('category')} x{w.get('count')}: {w.get('examples')}")
    check.result("no warning about unknown requests", not unknown, f"{len(unknown)} categories")
