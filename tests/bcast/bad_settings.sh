#!/bin/bash
# Each bad PROF_BCAST* value gets one message naming the variable; the program
# still runs (unprofiled, MPICH's broadcast) and exits 0.
#   bad_settings.sh SHIM MPIEXEC BCAST_CHECK OUTDIR
set -u
shim=$1 mpiexec=$2 prog=$3 out=$4
rm -rf "$out"
mkdir -p "$out"
status=0
check() {  # NAME=VALUE... -- EXPECTED_TEXT
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  local expect=$2
  env -u PROF_BCAST -u PROF_BCAST_FRAGMENT -u PROF_BCAST_SLOTS -u PROF_BCAST_SETS -u PROF_BCAST_TREE \
    PROF_OUTPUT="$out/trace-$RANDOM" "${envs[@]}" LD_PRELOAD="$shim" \
    timeout -k 5 60 "$mpiexec" -n 1 "$prog" short >"$out/stdout" 2>"$out/stderr"
  local rc=$?
  if [ $rc -ne 0 ] || ! grep -qF -- "$expect" "$out/stderr" || ! grep -q "^OK: 0 mismatches" "$out/stdout"; then
    echo "FAIL: ${envs[*]}: exit $rc, expected a message containing: $expect"
    cat "$out/stderr"
    status=1
  else
    echo "ok: ${envs[*]} -> $(grep -F -- "$expect" "$out/stderr" | head -c 300)"
  fi
}
check PROF_BCAST=fast -- "PROF_BCAST='fast' is not one of native, shm"
check PROF_BCAST=shm PROF_BCAST_FRAGMENT=1000 -- "PROF_BCAST_FRAGMENT='1000' is not a multiple of the page size from one page to 67108864 bytes: the page size is"
check PROF_BCAST=shm PROF_BCAST_FRAGMENT=8k -- "PROF_BCAST_FRAGMENT='8k'"
check PROF_BCAST=shm PROF_BCAST_SLOTS=0 -- "PROF_BCAST_SLOTS='0' is not an integer in 1..65536"
check PROF_BCAST=shm PROF_BCAST_SETS=x -- "PROF_BCAST_SETS='x' is not an integer in 1..65536"
check PROF_BCAST=shm PROF_BCAST_SLOTS=6 PROF_BCAST_SETS=4 -- "PROF_BCAST_SETS='4' is not an integer in 1..65536 dividing PROF_BCAST_SLOTS: PROF_BCAST_SLOTS is 6, PROF_BCAST_SETS 4"
check PROF_BCAST=shm PROF_BCAST_TREE=binary -- "PROF_BCAST_TREE='binary' is not one of flat, chain, kary:K"
check PROF_BCAST=shm PROF_BCAST_TREE=knomial:1 -- "PROF_BCAST_TREE='knomial:1'"
exit $status
