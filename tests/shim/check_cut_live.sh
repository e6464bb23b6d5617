#!/usr/bin/env bash
# A rank file cut inside its Live chunk, or right after it (before the start
# definitions that give its time base): its raw heartbeat would read as hours
# since boot, so it is not used. The analysis names the damage and exits 3,
# and the rank's last moment alive stays inside the run.
# Usage: check_cut_live.sh MPIEXEC PROF_RUN PROF_ANALYZE OUTDIR PROGRAM ARGS...
set -uo pipefail
mpiexec=$1 prof_run=$2 analyze=$3 out=$4; shift 4
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
PROF_OUTPUT="$out/trace" timeout -k 5 60 "$mpiexec" -n 2 "$prof_run" "$@" >/dev/null || fail "the profiled run failed"
# bytes: a page of header, then the Live chunk's page (trace-format.md).
for cut in 4200:"live chunk cut" 8192:"no time base"; do
  size=${cut%%:*} message=${cut#*:}
  rm -rf "$out/cut" && cp -r "$out/trace" "$out/cut"
  truncate -s "$size" "$out/cut/rank-00001.prof"
  "$analyze" "$out/cut" --json "$out/cut.json" -o /dev/null --no-progress 2>"$out/cut.err"
  rc=$?
  [ $rc -eq 3 ] || fail "cut at $size: exit status $rc, expected 3 (damaged)"
  grep -q "$message" "$out/cut.err" || fail "cut at $size: no '$message' on stderr: $(head -c 600 "$out/cut.err")"
  python3 - "$out/cut.json" "$size" <<'PY' || exit 1
import json, sys
report = json.load(open(sys.argv[1]))
alive = {r["rank"]: r["last_alive"] for r in report["run_end"]["ranks"]}
if not 0 <= alive[1] <= 60:
    print(f"FAIL: cut at {sys.argv[2]}: rank 1 last alive at {alive[1]} s, outside the run")
    sys.exit(1)
PY
done
echo PASS
