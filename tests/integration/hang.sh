#!/bin/bash
# A job that hangs or dies inside MPI calls (issue 10): what the trace and the
# report say of it.
#
#   hang.sh CASE SHIM MPIEXEC HANG PROF_DUMP PROF_ANALYZE OUTDIR
#
# CASE:
#   deadlock_term  3 ranks of `hang deadlock` (ranks 0 and 1 each in MPI_Recv
#                  from the other, rank 2 in MPI_Barrier, inside interval 1),
#                  PROF_HANG_WARN=0.5; once every rank is inside its call, 1.5 s
#                  later each rank gets SIGTERM (sent here, by pid).
#   deadlock_kill  the same without PROF_HANG_WARN, killed by SIGKILL.
#   deadlock_term_split
#                  deadlock_term with ranks 0 and 1 on a communicator of the
#                  two in reversed order: PROF_HANG_WARN names each peer by
#                  its rank there and by its world rank.
#   deadlock_term_fortran
#                  deadlock_term with HANG = hang_fortran (MPI_RECV and
#                  MPI_BARRIER from Fortran, through MPICH's Fortran bindings):
#                  the sites must still be the program's lines.
#   segv           3 ranks of `hang segv`: rank 1 dies of SIGSEGV once ranks 0
#                  and 2 are inside MPI_Allreduce (then hydra, or this script,
#                  ends them).
#   abort          the same, but rank 1 calls MPI_Abort.
# Checked (hang_check.py): each call in flight with its function, line, peer,
# tag and what it waits for; the deadlock cycle (and none in segv); last_alive
# within 0.5 s of the kill; the call counted and its time running to the
# rank's last moment alive, interval 1 closed there; the text line
# "Deadlock: ranks 0 and 1 wait for each other in MPI_Recv (hang.c:N)"; the
# Chrome export's in-flight slices; prof-dump's in_flight lines; and
# PROF_HANG_WARN's one line per hanging call (none when it is off).
set -u
case_=$1 shim=$2 mpiexec=$3 prog=$4 dump=$5 analyze=$6 out=$7
here=$(cd "$(dirname "$0")" && pwd)
unset PROF_OUTPUT PROF_TIMER PROF_SYNC PROF_BUFFER_MB PROF_STRICT PROF_LOG_LEVEL \
      PROF_TEST_CLOCK_SHIFT_NS PROF_EXPECT_DIR PROF_HANG_WARN
rm -rf "$out"
mkdir -p "$out/info"
np=3
envs=("PROF_OUTPUT=$out/trace" "LD_PRELOAD=$shim")
case "$case_" in
  deadlock_term|deadlock_term_fortran) mode=deadlock signal=TERM; envs+=("PROF_HANG_WARN=0.5") ;;
  deadlock_term_split) mode=deadlock_split signal=TERM; envs+=("PROF_HANG_WARN=0.5") ;;
  deadlock_kill) mode=deadlock signal=KILL ;;
  segv) mode=segv signal=KILL ;;
  abort) mode=abort signal=KILL ;;
  *) echo "unknown case $case_"; exit 2 ;;
esac

env "${envs[@]}" "$mpiexec" -n $np "$prog" $mode "$out/info" >"$out/stdout" 2>"$out/stderr" &
job=$!

# info-R holds "call ..." once rank R is (about to be) inside its last call.
inside() {
  local r
  for r in "$@"; do grep -q '^call ' "$out/info/info-$r" 2>/dev/null || return 1; done
}
pids() { cat "$out"/info/info-* 2>/dev/null | awk '/^pid /{print $2}'; }
cleanup() {
  local p
  for p in $(pids); do kill -KILL "$p" 2>/dev/null; done
  kill -KILL "$job" 2>/dev/null
  wait "$job" 2>/dev/null
}
wait_for() {  # wait_for SECONDS CMD...: polls CMD every 0.05 s
  local limit=$1 t=0
  shift
  until "$@"; do
    sleep 0.05
    t=$((t + 1))
    [ $t -ge $((limit * 20)) ] && return 1
  done
  return 0
}

kill_time=0
if [ "${mode%_split}" = deadlock ]; then
  if ! wait_for 30 inside 0 1 2; then
    echo "FAIL: the ranks never reached their calls"; ls -la "$out/info"; cat "$out"/info/*; cat "$out/stderr"; cleanup; exit 1
  fi
  sleep 1.5
  kill_time=$(date +%s.%N)
  kill -$signal $(pids)  # all at once, as a batch system does
else
  if ! wait_for 30 inside 0 1 2; then
    echo "FAIL: rank 1 never reached its end"; cat "$out/stderr"; cleanup; exit 1
  fi
  # Hydra ends the others when rank 1 dies; if it has not in 10 s, we do.
  for _ in $(seq 200); do kill -0 "$job" 2>/dev/null || break; sleep 0.05; done
fi
for _ in $(seq 200); do kill -0 "$job" 2>/dev/null || break; sleep 0.05; done
cleanup
echo "--- stderr of the job"; head -20 "$out/stderr"

"$dump" "$out/trace" >"$out/dump.txt" 2>"$out/dump.err"
echo "prof-dump: exit $?"
"$analyze" "$out/trace" -o "$out/report.txt" --json "$out/report.json" \
  --chrome-trace "$out/chrome.json" --no-progress 2>"$out/analyze.err"
echo "prof-analyze: exit $?"
python3 "$here/hang_check.py" "$case_" "$out" "$kill_time" "$(basename "$prog")"
