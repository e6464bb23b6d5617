#!/usr/bin/env bash
# Start-up as the user pays it: whole processes, timed from outside, from the
# spawn to the exit (mpiexec's and the hydra proxy's start-up included), the
# forms alternating round by round:
#   /bin/true, plain and with LD_PRELOAD=libprof.so (a process that never
#     calls MPI: what mpiexec, the proxy or a job's shell pays for the shim);
#   a 2-rank empty MPI program (bench/startup_cost), plain, with the shim
#     preloaded on the launcher (LD_PRELOAD=libprof.so mpiexec -n 2 PROGRAM:
#     mpiexec, the proxy and the ranks all load it), with prof-run
#     (mpiexec -n 2 prof-run PROGRAM) and preloaded into the ranks alone
#     (mpiexec -n 2 env LD_PRELOAD=libprof.so PROGRAM).
# Prints each form's median and the median of the per-round differences
# against its plain form (docs/performance.md, "Start-up as the user pays it").
# OTHER_LIBPROF (optional): a second libprof.so (another build) in the same
# rounds, for the two preloaded forms.
# Usage: bench/run_process_startup.sh [BUILD_DIR] [ROUNDS] [OTHER_LIBPROF]
set -euo pipefail
build=${1:-build}
rounds=${2:-51}
other=${3:-}
lib="$build/libprof/src/libprof.so"
prog="$build/bench/startup_cost"
prof_run="$build/bin/prof-run"
for f in "$lib" "$prog" "$prof_run" ${other:+"$other"}; do
  [ -f "$f" ] || { echo "run_process_startup.sh: $f missing (build the prof and startup_cost targets)" >&2; exit 2; }
done
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
lib=$(abs "$lib") prog=$(abs "$prog") prof_run=$(abs "$prof_run")
[ -n "$other" ] && other=$(abs "$other")
mpiexec=$(command -v mpiexec)
true_bin=$(command -v true | grep / || echo /bin/true)
exec python3 - "$rounds" "$lib" "$prog" "$prof_run" "$mpiexec" "$true_bin" "$other" <<'PY'
import os, shutil, statistics, sys, tempfile, time
rounds = int(sys.argv[1])
lib, prog, prof_run, mpiexec, true_bin, other = sys.argv[2:8]
work = tempfile.mkdtemp()
trace = os.path.join(work, "trace")
# label, plain form's label (None: a plain form), extra environment, argv
forms = [
    ("true", None, {}, [true_bin]),
    ("true, LD_PRELOAD=libprof.so", "true", {"LD_PRELOAD": lib}, [true_bin]),
    ("2-rank MPI program", None, {}, [mpiexec, "-n", "2", prog]),
    ("LD_PRELOAD=libprof.so mpiexec -n 2", "2-rank MPI program", {"LD_PRELOAD": lib},
     [mpiexec, "-n", "2", prog]),
    ("mpiexec -n 2 prof-run", "2-rank MPI program", {}, [mpiexec, "-n", "2", prof_run, prog]),
    ("mpiexec -n 2 env LD_PRELOAD=libprof.so", "2-rank MPI program", {},
     [mpiexec, "-n", "2", "/usr/bin/env", "LD_PRELOAD=" + lib, prog]),
]
if other:
    forms += [
        ("true, other libprof.so", "true", {"LD_PRELOAD": other}, [true_bin]),
        ("other: LD_PRELOAD=... mpiexec -n 2", "2-rank MPI program", {"LD_PRELOAD": other},
         [mpiexec, "-n", "2", prog]),
    ]
base_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
base_env["PROF_OUTPUT"] = trace
devnull = os.open(os.devnull, os.O_WRONLY)

def run(env_extra, argv):
    env = dict(base_env, **env_extra)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 1)]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter_ns()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"run_process_startup.sh: {' '.join(argv)} failed ({status})")
    shutil.rmtree(trace, ignore_errors=True)
    return (t1 - t0) / 1e6

times = {f[0]: [] for f in forms}
for r in range(rounds + 1):
    for label, _, env_extra, argv in forms:
        t = run(env_extra, argv)
        if r:  # the first round warms the caches
            times[label].append(t)
shutil.rmtree(work, ignore_errors=True)
med = statistics.median
print(f"{rounds} rounds, each form once a round in turn; whole processes; ms")
print(f"{'':42} {'median':>8} {'added':>8}  {'added, quartiles':>18}")
for label, plain, _, _ in forms:
    line = f"{label:42} {med(times[label]):8.3f}"
    if plain:
        d = sorted(a - b for a, b in zip(times[label], times[plain]))
        q = statistics.quantiles(d, n=4)
        line += f" {med(d):+8.3f}  {q[0]:+8.3f} {q[2]:+8.3f}"
    print(line)
print("added: the median of the per-round differences against the plain form")
PY
