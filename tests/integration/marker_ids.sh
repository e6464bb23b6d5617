#!/bin/bash
# An interval id outside 0..65535 is not recorded (it would be read as another
# interval's) and is said once a rank; ids inside are recorded as they are.
#   marker_ids.sh SHIM MPIEXEC PROGRAM ANALYZE OUTDIR
set -u
shim=$1 mpiexec=$2 program=$3 analyze=$4 out=$5
rm -rf "$out"
mkdir -p "$out"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
PROF_OUTPUT="$out/trace" timeout -k 5 50 "$mpiexec" -n 2 env LD_PRELOAD="$shim" "$program" 2>"$out/stderr"
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc"
[ "$(grep -c "interval id 70000 .* is outside 0..65535" "$out/stderr")" -eq 2 ] ||
  fail "expected one message a rank naming id 70000: $(cat "$out/stderr")"
timeout 60 "$analyze" "$out/trace" -q -o /dev/null --json "$out/report.json" || fail "prof-analyze exit status $?"
python3 - "$out/report.json" <<'PY' || fails=$((fails + 1))
import json, sys
ids = sorted({n["id"] for n in json.load(open(sys.argv[1]))["intervals"] if n["level"] >= 1})
if ids != [7]:
    sys.exit(f"FAIL: intervals {ids}, expected [7] alone")
PY
[ $fails -eq 0 ] || { echo "FAIL: $fails problem(s)"; exit 1; }
echo PASS
