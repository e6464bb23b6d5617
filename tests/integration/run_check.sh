#!/bin/bash
# Runs an MPI test program under the shim, validates mpiexec's exit status, then
# compares the trace with the program's expectation logs (trace_check).
#
#   run_check.sh --out DIR --shim LIBPROF --checker TRACE_CHECK --mpiexec MPIEXEC
#                --np N [--status 0|nonzero|N|any] [--timeout S]
#                [--env NAME=VALUE]... -- PROGRAM [ARGS...]
#
# DIR is removed first; the trace goes to DIR/trace, the logs to DIR/expect,
# the program's output to DIR/stdout and DIR/stderr.
set -u
out= shim= checker= mpiexec= np=2 status=0 timeout_s=45
envs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --shim) shim=$2; shift 2 ;;
    --checker) checker=$2; shift 2 ;;
    --mpiexec) mpiexec=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --status) status=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "run_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$out" ] || [ -z "$shim" ] || [ -z "$checker" ] || [ -z "$mpiexec" ] || [ $# -eq 0 ]; then
  echo "run_check.sh: missing arguments" >&2
  exit 2
fi

# Only the settings given here: none from the caller's environment.
unset PROF_OUTPUT PROF_TIMER PROF_SYNC PROF_BUFFER_MB PROF_STRICT PROF_LOG_LEVEL \
      PROF_TEST_CLOCK_SHIFT_NS PROF_EXPECT_DIR
rm -rf "$out"
mkdir -p "$out/expect"
start=$(date +%s%N)
# timeout -k: a hung run must not leave ranks busy-polling the machine.
env PROF_OUTPUT="$out/trace" PROF_EXPECT_DIR="$out/expect" "${envs[@]}" LD_PRELOAD="$shim" \
  timeout -k 5 "$timeout_s" "$mpiexec" -n "$np" "$@" >"$out/stdout" 2>"$out/stderr"
rc=$?
end=$(date +%s%N)
echo "mpiexec -n $np $* -> exit status $rc ($(( (end - start) / 1000000 )) ms)"
if [ -s "$out/stdout" ]; then echo "--- stdout:"; head -c 4000 "$out/stdout"; fi
if [ -s "$out/stderr" ]; then echo "--- stderr:"; head -c 4000 "$out/stderr"; fi

if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "FAIL: mpiexec timed out after ${timeout_s}s"
  exit 1
fi
case "$status" in
  any) ;;
  nonzero)
    if [ $rc -eq 0 ]; then echo "FAIL: expected a non-zero exit status from mpiexec"; exit 1; fi ;;
  *)
    if [ $rc -ne "$status" ]; then echo "FAIL: expected exit status $status, got $rc"; exit 1; fi ;;
esac

"$checker" "$out/trace" "$out/expect"
crc=$?
if [ $crc -ne 0 ]; then
  echo "FAIL: trace_check found differences (exit $crc); rerun: $checker $out/trace $out/expect --dump"
  exit 1
fi
echo "PASS"
