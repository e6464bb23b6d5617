#!/usr/bin/env python3
"""The analysis's two-worker speed-up, for one or more prof-analyze binaries.

Each round runs every binary on the trace with `-j 1` and with the default
workers, alternating (so a slow spell of a shared machine hits all of them),
under `nice -n -15` when allowed. Prints per binary and setting the median
wall time (all runs listed), the median user + sys CPU time, and the speed-up
(median wall with -j 1 / median wall with the default workers), with the
load average before and after. docs/performance.md, "Where the time goes".

Why a session of its own: with the kernel's autogroups on (Debian's default),
CPU time is shared first between sessions, then by nice within each, so
`nice -n -15` alone gives the runs no more than an equal share against
another session's build. So the script starts a new session and raises its
autogroup's priority (/proc/self/autogroup) when it may, and says whether it
could (docs/design/analysis-engine.md, what the second worker costs).

Usage: compare_workers.py RUNS TRACE_DIR PROF_ANALYZE...
"""
import os
import resource
import statistics
import subprocess
import sys
import time


def raise_session_priority():
    """A session of its own whose autogroup runs at nice -15: what it says."""
    autogroup = "/proc/self/autogroup"
    if os.geteuid() != 0 or not os.path.exists(autogroup):
        return "no autogroup priority (not root, or no autogroups)"
    if os.getsid(0) != os.getpid():
        try:
            os.setsid()
        except PermissionError:
            # A process group leader cannot start a session: run again
            # under setsid(1), which forks first (-w: its exit status).
            if os.environ.get("COMPARE_WORKERS_SESSION") == "1":
                return "no session of its own (setsid failed)"
            env = dict(os.environ, COMPARE_WORKERS_SESSION="1")
            sys.exit(subprocess.run(["setsid", "-w", sys.executable] + sys.argv, env=env).returncode)
    try:
        with open(autogroup, "w") as f:
            f.write("-15")
        with open(autogroup) as f:
            return "session autogroup: " + f.read().strip()
    except OSError as e:
        return f"no autogroup priority ({e})"


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: compare_workers.py RUNS TRACE_DIR PROF_ANALYZE...")
    priority = raise_session_priority()
    runs, trace, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"compare_workers.py: {b} is not an executable")
    nice = ["nice", "-n", "-15"] if os.geteuid() == 0 else []
    settings = [("-j1", ["-j", "1"]), ("default", [])]
    results = {(b, s): [] for b in binaries for s, _ in settings}
    load_before = os.getloadavg()
    for _ in range(runs):
        for b in binaries:
            for name, args in settings:
                cmd = nice + [b, trace, "-o", "/dev/null", "-q", "--no-progress"] + args
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
                wall = time.monotonic() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                results[(b, name)].append((wall, cpu))
    load_after = os.getloadavg()
    print(f"{trace}: {runs} rounds, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; {priority}")
    for b in binaries:
        walls = {}
        for name, _ in settings:
            r = results[(b, name)]
            walls[name] = statistics.median(w for w, _ in r)
            listed = " ".join(f"{w:.2f}" for w, _ in r)
            print(f"  {b} {name}: wall {walls[name]:.3f} s ({listed}), "
                  f"user+sys {statistics.median(c for _, c in r):.3f} s")
        print(f"  {b} speed-up: {walls['-j1'] / walls['default']:.2f}x")


if __name__ == "__main__":
    main()
