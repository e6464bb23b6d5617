#!/usr/bin/env bash
# A trace of more ranks than the reader's budget of file mappings (Linux
# refuses a process more than vm.max_map_count of them) is analyzed with the
# same outputs: PROF_ANALYZE_MAX_MAPPINGS pretends a small budget, past which
# a rank's file is unmapped after each visit and mapped again at the next.
# A budget that is not a number is refused, naming it.
# Usage: few_mappings.sh PROF_GEN_TRACE PROF_ANALYZE OUTDIR
set -uo pipefail
gen=$1 analyze=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
"$gen" -n 60000 -r 300 "$out/trace" >/dev/null || fail "prof-gen-trace"
"$analyze" --no-progress --no-index "$out/trace" -o "$out/free.txt" --json "$out/free.json" \
  --chrome-trace "$out/free.chrome.json" || fail "analysis without a budget"
for j in 1 2; do
  PROF_ANALYZE_MAX_MAPPINGS=16 "$analyze" --no-progress --no-index -j $j "$out/trace" -o "$out/small.txt" \
    --json "$out/small.json" --chrome-trace "$out/small.chrome.json" 2>"$out/small.err" ||
    fail "with 16 mappings, -j $j: $(head -c 600 "$out/small.err")"
  cmp -s "$out/free.txt" "$out/small.txt" || fail "the text report differs with 16 mappings, -j $j"
  cmp -s "$out/free.json" "$out/small.json" || fail "the JSON report differs with 16 mappings, -j $j"
  cmp -s "$out/free.chrome.json" "$out/small.chrome.json" || fail "the Chrome trace differs with 16 mappings, -j $j"
done
PROF_ANALYZE_MAX_MAPPINGS=lots "$analyze" --no-progress "$out/trace" -o "$out/bad.txt" 2>"$out/bad.err"
rc=$?
[ "$rc" = 1 ] || fail "a bad budget: exit $rc, not 1"
grep -q "PROF_ANALYZE_MAX_MAPPINGS 'lots'" "$out/bad.err" || fail "a bad budget is not named: $(cat "$out/bad.err")"
echo PASS
