#!/bin/bash
# The checker must catch what it is there to catch: on a trace that matches its
# logs (left by an earlier test), each mutation of a log (wrong peer, missing
# call, wrong bytes, cancelled bit, end reason, membership...) must make
# trace_check fail, and the untouched logs must pass.
#
#   checker_selftest.sh CHECKER RUN_DIR SCRATCH MUTATIONS
# RUN_DIR holds trace/ and expect/ (from run_check.sh); MUTATIONS has one
# 'FILE|SED-EXPRESSION' per line (# comments), applied one at a time.
set -u
checker=$1 run=$2 scratch=$3 mutations=$4
mapfile -t lines < <(grep -v -e '^#' -e '^$' "$mutations")
set -- "${lines[@]}"
if ! "$checker" "$run/trace" "$run/expect" >/dev/null 2>&1; then
  echo "FAIL: the unmodified logs do not pass (run the test that makes $run first)"
  exit 1
fi
fails=0 n=0
for m in "$@"; do
  file=${m%%|*} expr=${m#*|}
  n=$((n + 1))
  rm -rf "$scratch"
  mkdir -p "$scratch"
  cp -r "$run/expect" "$scratch/expect"
  cp "$run/expect/$file" "$scratch/before"
  sed -i -e "$expr" "$scratch/expect/$file"
  if cmp -s "$scratch/before" "$scratch/expect/$file"; then
    echo "FAIL: mutation $n ($file: $expr) changed nothing: fix the test"
    fails=$((fails + 1))
    continue
  fi
  if "$checker" "$run/trace" "$scratch/expect" >"$scratch/out" 2>&1; then
    echo "FAIL: mutation $n ($file: $expr) was not detected"
    fails=$((fails + 1))
  else
    echo "ok: mutation $n ($file: $expr) detected:"
    grep -m 3 -E 'trace_check: rank|trace_check: comm|why:' "$scratch/out" | sed 's/^/      /'
  fi
done
rm -rf "$scratch"
if [ $fails -ne 0 ]; then
  echo "FAIL: $fails of $n mutation(s) went unnoticed"
  exit 1
fi
echo "PASS: all $n mutations detected"
