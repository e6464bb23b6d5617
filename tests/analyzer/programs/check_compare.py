#!/usr/bin/env python3
"""Checks run_compare.sh's outputs: A's `run` record against what the program
found itself (its library's version line, whether libucp is mapped), the host
name and the settings; then the comparison of A and B: PROF_BCAST and
UCX_LOG_LEVEL among the differences, interval 2 first after the whole run
with about the planted 1 s more lost time, interval 3 only in B."""
import json
import socket
import sys

work, program = sys.argv[1], sys.argv[2]
facts = dict(line.rstrip("\n").split("=", 1) for line in open(f"{work}/facts"))
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


run = json.load(open(f"{work}/a.json"))["run"]
first_line = run["mpi_library"].split("\n")[0] if run["mpi_library"] else None
check(first_line == facts["library_line"], f"mpi_library's first line {first_line!r} != {facts['library_line']!r}")
check(run["library"] and run["library_version"] and run["library_version"] in facts["library_line"]
      and facts["library_line"].startswith(run["library"]),
      f"library {run['library']!r} {run['library_version']!r} not read from {facts['library_line']!r}")
if facts["libucp_mapped"] == "1":
    check(run["transport"]["name"] == "ucx", f"transport {run['transport']} but libucp is mapped")
    version = run["transport"]["version"] or ""
    check(len(version.split(".")) >= 2 and all(p.isdigit() for p in version.split(".")),
          f"UCX version {version!r}")
else:
    check(run["transport"]["name"] != "ucx", f"transport {run['transport']} without libucp mapped")
check(run["hosts"] == [{"host": socket.gethostname(), "ranks": [0, 1]}], f"hosts {run['hosts']}")
check(run["ranks_per_node"] == 2, f"ranks_per_node {run['ranks_per_node']}")
check(run["command"] is not None and run["command"].split(" ")[0].endswith(program.split("/")[-1]),
      f"command {run['command']!r}")
check(run["prof_settings"].get("PROF_BCAST") == "native", f"PROF_BCAST {run['prof_settings'].get('PROF_BCAST')}")
check("PROF_BCAST" in run["prof_settings_from_env"], "PROF_BCAST not marked as set")
check(run["prof_settings"].get("PROF_SYNC") == "hierarchical", "PROF_SYNC's default not recorded")
check("UCX_LOG_LEVEL" not in run["transport"]["settings"], "A records a UCX_LOG_LEVEL it was not given")
text = open(f"{work}/a.txt").read()
check("\n---Run---\n" in text and "Settings PROF_BCAST=native PROF_OUTPUT=" in text, "A's text has no run block")

c = json.load(open(f"{work}/compare.json"))
diffs = {d["what"]: (d["a"], d["b"]) for d in c["run_differences"]}
check(diffs.get("PROF_BCAST") == ("native", "shm"), f"PROF_BCAST not among the differences: {diffs}")
check(diffs.get("UCX_LOG_LEVEL") == (None, "warn"), f"UCX_LOG_LEVEL not among the differences: {diffs}")
check("PROF_OUTPUT" not in diffs and "ranks" not in diffs, f"differences listed that are none: {diffs}")
entries = c["compare"]
check(entries[0]["id"] is None, "the whole run is not first")
check(entries[1]["id"] == 2, f"interval {entries[1]['id']} comes first, not the slowed interval 2")
delta = entries[1]["diff"]["lost_time"] if entries[1]["id"] == 2 else None
# Rank 1 waits the 1 s rank 0 sleeps. On a loaded machine (other builds)
# every collective's waits stretch by up to a few tenths of a second, so the
# planted second is what must stand out.
check(delta is not None and 0.8 <= delta <= 2.0, f"interval 2's lost time changed by {delta}, not about +1 s")
only_b = [e for e in entries if e["a"] is None]
check([e["id"] for e in only_b] == [3], f"only in B: {[e['id'] for e in only_b]}")
check(all(e["b"] is not None for e in entries), "an interval only in A")
text = open(f"{work}/compare.txt").read()
check("PROF_BCAST: native -> shm\n" in text, "the text does not list PROF_BCAST")
only_b_text = text.split("\n---Only in B---\n", 1)[-1]
check(only_b_text.startswith("Interval 3 (") and "compare_runs.c:" in only_b_text.split("\n")[0],
      "the text does not list interval 3 apart")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
