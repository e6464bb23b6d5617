#!/bin/bash
# Runs bcast_check under the shim and checks what the shared-memory broadcast
# promises (see CMakeLists.txt for the cases):
#
#   run_bcast.sh CASE SHIM MPIEXEC BCAST_CHECK PROF_ANALYZE OUTDIR NP [NAME=VALUE...]
#
# results:  PROF_BCAST=shm; every result equal to MPICH's, the segment was made
#           (the info line), no fallback, /dev/shm clean, JSON bcast_impl "shm".
# native:   no PROF_BCAST; results right, no segment, JSON bcast_impl "native".
# crash:    a rank SIGKILLs itself among broadcasts on fresh communicators;
#           nothing of the job left in /dev/shm.
# fallback: PROF_TEST_BCAST_FAIL_SHM=1 (the node taken to have no memory to
#           spare); results still right, one warning line per process at most,
#           /dev/shm clean.
# refused:  PROF_BCAST=shm with settings asking more than the node can hold:
#           refused at once with one line saying so, MPICH's broadcast instead.
# With PROF_TEST_NODES=N among the settings, a segment must also have been
# made for a node holding only part of a communicator (the path across nodes).
set -u
case_name=$1 shim=$2 mpiexec=$3 prog=$4 analyze=$5 out=$6 np=$7
shift 7
unset PROF_OUTPUT PROF_TIMER PROF_SYNC PROF_BUFFER_MB PROF_STRICT PROF_LOG_LEVEL PROF_BCAST \
      PROF_BCAST_FRAGMENT PROF_BCAST_SLOTS PROF_BCAST_SETS PROF_BCAST_TREE PROF_TEST_BCAST_FAIL_SHM \
      PROF_TEST_NODES
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

mode=full
envs=(PROF_LOG_LEVEL=info)
case "$case_name" in
  results) envs+=(PROF_BCAST=shm) ;;
  native) mode=short ;;
  crash) envs+=(PROF_BCAST=shm); mode=crash ;;
  fallback) envs+=(PROF_BCAST=shm PROF_TEST_BCAST_FAIL_SHM=1); mode=short ;;
  refused) envs+=(PROF_BCAST=shm); mode=short ;;
  *) echo "run_bcast.sh: unknown case $case_name" >&2; exit 2 ;;
esac
for e in "$@"; do
  if [ "$e" = short ]; then mode=short; else envs+=("$e"); fi
done

env PROF_OUTPUT="$out/trace" "${envs[@]}" LD_PRELOAD="$shim" \
  timeout -k 5 100 "$mpiexec" -n "$np" "$prog" "$mode" >"$out/stdout" 2>"$out/stderr"
rc=$?
echo "mpiexec -n $np $prog $mode (${envs[*]}) -> exit status $rc"
echo "--- stdout:"; head -c 3000 "$out/stdout"
echo "--- stderr:"; head -c 3000 "$out/stderr"
[ $rc -eq 124 ] || [ $rc -eq 137 ] && fail "timed out"

# No segment of this job's processes may remain.
pids=$(sed -n 's/^pids://p' "$out/stdout")
[ -n "$pids" ] || fail "the program did not print its pids"
for pid in $pids; do
  left=$(ls /dev/shm 2>/dev/null | grep -E "^prof-bcast\.$(id -u)\.$pid\." || true)
  [ -z "$left" ] && continue
  rm -f $(printf '/dev/shm/%s ' $left)
  fail "left in /dev/shm: $left"
done

ready=$(grep -c "shared-memory broadcast ready" "$out/stderr")
unavailable=$(grep -c "shared-memory broadcast unavailable" "$out/stderr")
case "$case_name" in
  crash)
    [ $rc -ne 0 ] || fail "expected a non-zero exit status after the kill"
    [ "$ready" -ge 1 ] || fail "no segment was made before the crash"
    echo "PASS"; exit 0 ;;
  results)
    [ "$ready" -ge 1 ] || fail "no shared-memory segment was made (PROF_BCAST=shm not in use?)"
    [ "$unavailable" -eq 0 ] || fail "the broadcast fell back to MPICH's"
    case " ${envs[*]} " in
      *" PROF_TEST_NODES="*)
        sed -n 's/.*ready: \([0-9]*\) processes on this node (\([0-9]*\) in the communicator).*/\1 \2/p' \
            "$out/stderr" | awk '$1 < $2 { spans = 1 } END { exit !spans }' ||
          fail "no communicator spanned several nodes (PROF_TEST_NODES not in effect?)" ;;
    esac ;;
  native)
    [ "$ready" -eq 0 ] || fail "a segment was made without PROF_BCAST=shm" ;;
  refused)
    grep -q "is more than the node can hold" "$out/stderr" || fail "no line saying the segment is too big"
    ;&
  fallback)
    [ "$ready" -eq 0 ] || fail "a segment was made although the node refused it"
    [ "$unavailable" -ge 1 ] && [ "$unavailable" -le "$np" ] ||
      fail "expected one fallback warning per process at most (at least one), got $unavailable" ;;
esac
[ $rc -eq 0 ] || fail "exit status $rc"
grep -q "^OK: 0 mismatches" "$out/stdout" || fail "results differ from MPICH's"

want=shm
[ "$case_name" = native ] && want=native
"$analyze" "$out/trace" --json "$out/report.json" -o /dev/null || fail "prof-analyze failed"
read -r impl fallbacks < <(python3 -c "import json,sys; d = json.load(open(sys.argv[1])); print(d['bcast_impl'], d['bcast_fallbacks'])" "$out/report.json")
[ "$impl" = "$want" ] || fail "JSON bcast_impl is '$impl', expected '$want'"
# The trace says when a communicator fell back (3 communicators broadcast here).
if [ "$case_name" = fallback ] || [ "$case_name" = refused ]; then
  [ "$fallbacks" -ge 1 ] || fail "JSON bcast_fallbacks is $fallbacks after a fallback"
else
  [ "$fallbacks" -eq 0 ] || fail "JSON bcast_fallbacks is $fallbacks, expected 0"
fi
echo "PASS"
