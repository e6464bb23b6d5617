#!/usr/bin/env python3
"""A program calling MPI_Allreduce from two source lines (FIRST_CALLS times
from FIRST_LINE, SECOND_CALLS times from SECOND_LINE inside interval 7) runs
under the profiler at 2 ranks, exit code and output as without it. Then
`prof-analyze --callsites`: the whole run lists both lines with exactly
2 * the calls each (4 bytes a call), interval 7 the second line alone, and
the JSON report's `callsites` say what the text says; the Chrome export's
MPI_Allreduce slices name their line in `args.site`.

Usage: check_callsites.py MPIEXEC PROF_RUN PROF_ANALYZE TRACE_DIR SOURCE_NAME
       FIRST_LINE FIRST_CALLS SECOND_LINE SECOND_CALLS PROGRAM"""
import json
import os
import shutil
import subprocess
import sys

(mpiexec, prof_run, analyze, trace, source, first_line, first_calls, second_line,
 second_calls, program) = sys.argv[1:]
first_line, first_calls = int(first_line), int(first_calls)
second_line, second_calls = int(second_line), int(second_calls)
ranks = 2


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


shutil.rmtree(trace, ignore_errors=True)
plain = subprocess.run([mpiexec, "-n", str(ranks), program], capture_output=True, text=True)
env = dict(os.environ, PROF_OUTPUT=trace)
profiled = subprocess.run([mpiexec, "-n", str(ranks), prof_run, program], capture_output=True,
                          text=True, env=env)
if plain.returncode != 0 or profiled.returncode != 0:
    fail(f"exit codes: plain {plain.returncode}, profiled {profiled.returncode}\n{profiled.stderr}")
if sorted(plain.stdout.splitlines()) != sorted(profiled.stdout.splitlines()):
    fail(f"outputs differ:\n{plain.stdout}\n{profiled.stdout}")

json_path = trace + ".json"
chrome_path = trace + ".chrome.json"
run = subprocess.run([analyze, "--callsites", "--no-index", "--json", json_path,
                      "--chrome-trace", chrome_path, trace],
                     capture_output=True, text=True)
if run.returncode != 0:
    fail(f"prof-analyze failed: {run.stderr}")
text = run.stdout

# The text's call-site tables, one per interval in report order.
tables = []
lines = text.splitlines()
for i, line in enumerate(lines):
    if line == "---MPI Call Sites---":
        if lines[i + 1] != "Function Site Calls Time Bytes":
            fail("call-site table header: " + lines[i + 1])
        rows = []
        for row in lines[i + 2:]:
            f = row.split()
            if len(f) != 5 or not f[2].isdigit():
                break
            rows.append((f[0], f[1], int(f[2]), int(f[4])))
        tables.append(rows)
report = json.load(open(json_path))
intervals = report["intervals"]
if len(tables) != len(intervals):
    fail(f"{len(tables)} call-site tables in the text, {len(intervals)} intervals in JSON")
for rows, node in zip(tables, intervals):
    from_json = [(c["function"], c["site"], c["calls"], c["bytes"]) for c in node["callsites"]]
    if rows != from_json[:len(rows)] or len(rows) != min(len(from_json), 20):
        fail(f"text {rows} but JSON {from_json}")


def sites(node):
    out = {}
    for c in node["callsites"]:
        if c["function"] != "MPI_Allreduce":
            continue
        if c["file"] is None or os.path.basename(c["file"]) != source:
            fail(f"an MPI_Allreduce site not in {source}: {c}")
        out[c["line"]] = (c["calls"], c["bytes"])
    return out


root = intervals[0]
want = {first_line: (ranks * first_calls, 4 * ranks * first_calls),
        second_line: (ranks * second_calls, 4 * ranks * second_calls)}
if sites(root) != want:
    fail(f"whole run: {sites(root)}, expected {want}")
inner = [n for n in intervals if n["id"] == 7]
if len(inner) != 1:
    fail("no interval 7")
want_inner = {second_line: want[second_line]}
if sites(inner[0]) != want_inner:
    fail(f"interval 7: {sites(inner[0])}, expected {want_inner}")
slices = {}
for ev in json.load(open(chrome_path))["traceEvents"]:
    if ev.get("ph") == "X" and ev.get("name") == "MPI_Allreduce":
        site = ev.get("args", {}).get("site", "")
        slices[site] = slices.get(site, 0) + 1
want_slices = {f"{source}:{first_line}": ranks * first_calls,
               f"{source}:{second_line}": ranks * second_calls}
got_slices = {os.path.basename(k): v for k, v in slices.items()}
if got_slices != want_slices:
    fail(f"Chrome export's MPI_Allreduce sites {slices}, expected {want_slices}")
print(f"{source}: lines {first_line} and {second_line}, {ranks * first_calls} and "
      f"{ranks * second_calls} calls, text and JSON agree")
