#!/usr/bin/env python3
"""Fortran MPI_Send and MPI_Recv (tests/shim/fortran_p2p_sites.F90) from two
source lines each per rank, alternating, then an MPI_Irecv, an MPI_Isend and
an MPI_Waitall, N times each, at 2 ranks.

`sites`: under prof-run, the exit code and output are those of the plain run,
and `prof-analyze --callsites` (JSON) lists each of the fourteen lines with N
calls and its own byte count (4 or 8 bytes a call, none for the waits): the
binding's call sites are told apart call by call, not by the binding's return
address, for the calls that post a message as for those that block.

`resolved`: under callgrind with libprof preloaded, each rank looks up the
rank's site table (resolve_call_site, the rare path) at most a handful of
times (once per site, function and thread), not once per call: a Fortran
call's site is found in the thread's cache, as a C call's is
(docs/design/shim-hot-path.md, "Fortran binding sites"). Exits 77 (skipped)
without valgrind.

Usage: check_fortran_p2p_sites.py sites MPIEXEC PROF_RUN PROF_ANALYZE TRACE N PROGRAM
       check_fortran_p2p_sites.py resolved MPIEXEC LIBPROF WORK_DIR N PROGRAM"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

RANKS = 2
SOURCE = "fortran_p2p_sites.F90"
# (function, line) -> bytes a call, from the program's text.
SITES = {("MPI_Send", 20): 4, ("MPI_Recv", 21): 4, ("MPI_Send", 22): 8, ("MPI_Recv", 23): 8,
         ("MPI_Irecv", 24): 4, ("MPI_Isend", 25): 4, ("MPI_Waitall", 26): 0,
         ("MPI_Recv", 28): 4, ("MPI_Send", 29): 4, ("MPI_Recv", 30): 8, ("MPI_Send", 31): 8,
         ("MPI_Irecv", 32): 4, ("MPI_Isend", 33): 4, ("MPI_Waitall", 34): 0}
# The functions of those lines; the program's others (MPI_Init, MPI_Comm_rank,
# ...) may keep a site in MPICH's binding.
FUNCTIONS = {function for function, _ in SITES}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check_sites(mpiexec, prof_run, analyze, trace, n, program):
    shutil.rmtree(trace, ignore_errors=True)
    plain = subprocess.run([mpiexec, "-n", str(RANKS), program, str(n)], capture_output=True, text=True)
    profiled = subprocess.run([mpiexec, "-n", str(RANKS), prof_run, program, str(n)],
                              capture_output=True, text=True, env=dict(os.environ, PROF_OUTPUT=trace))
    if plain.returncode != 0 or profiled.returncode != 0:
        fail(f"exit codes: plain {plain.returncode}, profiled {profiled.returncode}\n{profiled.stderr}")
    if plain.stdout != profiled.stdout:
        fail(f"outputs differ:\n{plain.stdout}\n{profiled.stdout}")
    json_path = trace + ".json"
    run = subprocess.run([analyze, "--callsites", "--no-index", "--json", json_path, trace],
                         capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"prof-analyze failed: {run.stderr}")
    got = {}
    for c in json.load(open(json_path))["intervals"][0]["callsites"]:
        if c["function"] not in FUNCTIONS:
            continue
        if c["file"] is None or os.path.basename(c["file"]) != SOURCE:
            fail(f"a {c['function']} site not in {SOURCE}: {c}")
        got[(c["function"], c["line"])] = (c["calls"], c["bytes"])
    want = {site: (n, size * n) for site, size in SITES.items()}
    if got != want:
        fail(f"sites (function, line) -> (calls, bytes): {sorted(got.items())}, "
             f"expected {sorted(want.items())}")
    print(f"{SOURCE}: {len(SITES)} lines, {n} calls each, bytes by line")


def resolve_calls(path):
    """Calls of resolve_call_site in one callgrind profile."""
    # Function names are compressed: the first fn= or cfn= line of an id
    # names it; calls= counts the calls of the last cfn= line's function.
    names, total, callee = {}, 0, None
    spec = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")
    with open(path, errors="replace") as f:
        for line in f:
            m = spec.match(line.rstrip("\n"))
            if m:
                if m.group(3) is not None:
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "cfn":
                    callee = names.get(m.group(2), "")
            elif line.startswith("calls=") and callee and "resolve_call_site" in callee:
                total += int(line[6:].split()[0])
    return total


def check_resolved(mpiexec, libprof, work, n, program):
    if shutil.which("valgrind") is None:
        print("valgrind not installed: skipped")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run = subprocess.run([mpiexec, "-n", str(RANKS), "valgrind", "--tool=callgrind",
                          "--trace-children=yes", f"--callgrind-out-file={work}/cg.%p",
                          "env", f"LD_PRELOAD={libprof}", program, str(n)],
                         capture_output=True, text=True,
                         env=dict(os.environ, PROF_OUTPUT=os.path.join(work, "trace")))
    if run.returncode != 0 or f"round trips {2 * n}" not in run.stdout:
        fail(f"the program under callgrind: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
    # The profiles of the ranks (env's own process exec()s the program: one
    # profile each, with the program's calls).
    counts = [resolve_calls(p) for p in sorted(glob.glob(os.path.join(work, "cg.*")))]
    counts = [c for c in counts if c > 0]
    if len(counts) != RANKS:
        fail(f"expected {RANKS} profiles calling resolve_call_site, got counts {counts}")
    # Each rank's sites: its seven lines, MPI_Init's, MPI_Comm_rank's,
    # MPI_Finalize's and what MPI calls inside them, well under 2 * N.
    bound = 16
    if any(c > bound for c in counts):
        fail(f"resolve_call_site called {counts} times per rank for {2 * n} Fortran "
             f"MPI_Send and MPI_Recv calls each: more than {bound}, so calls missed the cache")
    print(f"resolve_call_site per rank: {counts} for {2 * n} Fortran calls each")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("sites", "resolved"):
        sys.exit(__doc__)
    if sys.argv[1] == "sites":
        if len(sys.argv) != 8:
            sys.exit(__doc__)
        mpiexec, prof_run, analyze, trace, n, program = sys.argv[2:]
        check_sites(mpiexec, prof_run, analyze, trace, int(n), program)
    else:
        if len(sys.argv) != 7:
            sys.exit(__doc__)
        mpiexec, libprof, work, n, program = sys.argv[2:]
        check_resolved(mpiexec, libprof, work, int(n), program)


if __name__ == "__main__":
    main()
