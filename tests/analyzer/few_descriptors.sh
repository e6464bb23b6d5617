#!/usr/bin/env bash
# A trace of more ranks than the descriptor limit (ulimit -n) is analyzed whole
# and its outputs written: rank files beyond half the limit are read through
# their mapping alone, and the report equals the one made without a limit.
# prof-gen-trace writes such a trace under the limit too, byte for byte the
# one it writes without.
# Usage: few_descriptors.sh PROF_GEN_TRACE PROF_ANALYZE OUTDIR
set -uo pipefail
gen=$1 analyze=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
"$gen" -n 60000 -r 300 "$out/trace" >/dev/null || fail "prof-gen-trace"
(ulimit -n 64 && "$gen" -n 60000 -r 300 "$out/trace-limited" >/dev/null) 2>"$out/gen-limited.err" ||
  fail "prof-gen-trace under ulimit -n 64: $(head -c 600 "$out/gen-limited.err")"
diff -r "$out/trace" "$out/trace-limited" >/dev/null || fail "prof-gen-trace wrote other files under the limit"
"$analyze" --no-progress "$out/trace" -o "$out/free.txt" --json "$out/free.json" || fail "analysis without a limit"
(ulimit -n 64 && "$analyze" --no-progress "$out/trace" -o "$out/limited.txt" --json "$out/limited.json") \
  2>"$out/limited.err" || fail "under ulimit -n 64: $(head -c 600 "$out/limited.err")"
grep -q "Processors 300" "$out/limited.txt" || fail "not every rank analyzed: $(grep Processors "$out/limited.txt" | head -1)"
cmp -s "$out/free.txt" "$out/limited.txt" || fail "the text report differs under the limit"
cmp -s "$out/free.json" "$out/limited.json" || fail "the JSON report differs under the limit"
echo PASS
