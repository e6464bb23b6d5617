#!/usr/bin/env python3
"""PROF_CALLSITES=0: the program calling MPI_Allreduce from two source lines
(check_callsites.py's) runs at 2 ranks with the output and exit code it has
without the profiler, and the trace says PROF_CALLSITES=0. Every call is
still traced (the function profile counts CALLS MPI_Allreduce calls a rank)
but none carries a call site: `prof-analyze --callsites` tables and JSON
`callsites` are empty, and the Chrome export's slices have no `args.site`.

Usage: check_callsites_off.py MPIEXEC PROF_RUN PROF_ANALYZE TRACE_DIR CALLS PROGRAM"""
import json
import os
import shutil
import subprocess
import sys

mpiexec, prof_run, analyze, trace, calls, program = sys.argv[1:]
ranks = 2


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


shutil.rmtree(trace, ignore_errors=True)
plain = subprocess.run([mpiexec, "-n", str(ranks), program], capture_output=True, text=True)
env = dict(os.environ, PROF_OUTPUT=trace, PROF_CALLSITES="0")
profiled = subprocess.run([mpiexec, "-n", str(ranks), prof_run, program], capture_output=True,
                          text=True, env=env)
if plain.returncode != 0 or profiled.returncode != 0:
    fail(f"exit codes: plain {plain.returncode}, profiled {profiled.returncode}\n{profiled.stderr}")
if sorted(plain.stdout.splitlines()) != sorted(profiled.stdout.splitlines()):
    fail(f"outputs differ:\n{plain.stdout}\n{profiled.stdout}")

json_path = trace + ".json"
chrome_path = trace + ".chrome.json"
run = subprocess.run([analyze, "--callsites", "--no-index", "--json", json_path,
                      "--chrome-trace", chrome_path, trace], capture_output=True, text=True)
if run.returncode != 0:
    fail(f"prof-analyze failed: {run.stderr}")
report = json.load(open(json_path))
settings = report.get("run", {}).get("prof_settings", {})
if settings.get("PROF_CALLSITES") != "0":
    fail(f"the trace records PROF_CALLSITES as {settings.get('PROF_CALLSITES')!r}")
want_calls = ranks * int(calls)
for node in report["intervals"]:
    if node["callsites"]:
        fail(f"interval {node['id']}: call sites recorded with PROF_CALLSITES=0: {node['callsites']}")
root = report["intervals"][0]
counted = [f["calls"] for f in root["functions"] if f["name"] == "MPI_Allreduce"]
if counted != [want_calls]:
    fail(f"MPI_Allreduce calls in the function profile: {counted}, expected {want_calls}")
lines = run.stdout.splitlines()
for i, line in enumerate(lines):
    if line == "---MPI Call Sites---" and i + 2 < len(lines) and lines[i + 2].startswith("MPI_"):
        fail("the text lists a call site: " + lines[i + 2])
sited = [ev for ev in json.load(open(chrome_path))["traceEvents"]
         if ev.get("ph") == "X" and ev.get("name") == "MPI_Allreduce" and "site" in ev.get("args", {})]
if sited:
    fail(f"Chrome slices with a site: {sited[:2]}")
print(f"PROF_CALLSITES=0: {want_calls} MPI_Allreduce calls, none with a call site")
