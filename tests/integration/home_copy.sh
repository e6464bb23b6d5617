#!/bin/bash
# A thread's home chunk copied out (format 5): a run whose ranks fill their
# home several times reads back every record once, in order, and so does one
# killed inside a copy.
#
#   home_copy.sh CASE SHIM KILL_LIB MPIEXEC SEQUENCE PROF_DUMP CHECK_PY OUTDIR
#
# CASE:
#   clean         2 ranks, 70,000 rounds of sequence.c (about 3.4 MB of records
#                 a rank: a home and at least two copies): each rank's sends
#                 and receives read back exactly, consecutive tags; the file
#                 holds at most PROF_BUFFER_MB (1 MiB) beyond its records.
#   kill_partial  the same, rank 0 killed (SIGKILL) inside its second copy,
#                 the copy half written: its slot says "copying", and every
#                 record up to the kill reads back once (the home has them).
#   kill_whole    killed right after the second copy was written, before the
#                 slot said so: the same (the copy is dropped, not doubled).
#   full_disk     PROF_OUTPUT on a 6 MiB tmpfs (mounted here: the tests run as
#                 root), full once the homes are being copied out: the
#                 application's output and exit status unchanged, the shim
#                 names ENOSPC, each rank's records read back once up to where
#                 the disk filled (the home that could not be copied kept, not
#                 lost), and the records read plus the loss counted (meta
#                 records_lost) make every call the clean run records; at
#                 least one home was copied out before (which rank's is the
#                 scheduler's choice).
set -u
case_=$1 shim=$2 kill_lib=$3 mpiexec=$4 program=$5 dump=$6 check=$7 out=$8
source "$(dirname "$0")/small_tmpfs.sh"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset PROF_OUTPUT PROF_TIMER PROF_SYNC PROF_BUFFER_MB PROF_STRICT PROF_LOG_LEVEL
if mountpoint -q "$out/mnt" 2>/dev/null; then umount "$out/mnt"; fi
rm -rf "$out"
mkdir -p "$out"
rounds=70000

case $case_ in
clean)
  timeout -k 5 120 "$mpiexec" -n 2 env "PROF_OUTPUT=$out/trace" "LD_PRELOAD=$shim" \
    "$program" $rounds >"$out/run.stdout" 2>"$out/run.stderr"
  rc=$?
  [ $rc -eq 0 ] || fail "exit status $rc ($(head -c 300 "$out/run.stderr"))"
  for r in 0 1; do
    f=$out/trace/rank-0000$r.prof
    python3 "$check" "$dump" "$f" $rounds $rounds none 2 || fail "rank $r's trace"
    "$dump" "$f" --no-events --stats >"$out/dump.txt" 2>&1
    size=$(stat -c %s "$f")
    events=$(sed -n 's/^streams .* event_bytes \([0-9]*\).*/\1/p' "$out/dump.txt")
    echo "    rank $r: $size bytes, ${events:-?} bytes of events"
    [ $((size - ${events:-0})) -lt $((1024 * 1024 + 131072)) ] ||
      fail "rank $r: $((size - ${events:-0})) bytes beyond the events"
  done
  ;;
kill_partial|kill_whole)
  mode=${case_#kill_}
  timeout -k 5 120 "$mpiexec" -n 2 env "PROF_OUTPUT=$out/trace" "LD_PRELOAD=$kill_lib $shim" \
    KILL_IN_COPY_AT=2 KILL_IN_COPY_RANK=0 KILL_IN_COPY_MODE=$mode \
    "$program" $rounds >"$out/run.stdout" 2>"$out/run.stderr"
  rc=$?
  [ $rc -ne 0 ] || fail "the run was not killed (exit status 0)"
  # Rank 0 died inside its second copy: two homes' worth of rounds at least
  # (64 KiB + ... + 512 KiB of growth, then 1 MiB: about 40,000 records).
  python3 "$check" "$dump" "$out/trace/rank-00000.prof" 20000 - copying 2 || fail "rank 0's trace"
  # Rank 1 was killed by mpiexec wherever it was (often inside its own
  # second copy, made at the same round): its records read back once too.
  python3 "$check" "$dump" "$out/trace/rank-00001.prof" 20000 - - 1 || fail "rank 1's trace"
  ;;
full_disk)
  mount_small_tmpfs "$out/mnt" 6m
  timeout -k 5 120 "$mpiexec" -n 2 env "PROF_OUTPUT=$out/mnt/trace" "LD_PRELOAD=$shim" \
    "$program" $rounds >"$out/run.stdout" 2>"$out/run.stderr"
  rc=$?
  [ $rc -eq 0 ] || fail "exit status $rc"
  [ "$(sort "$out/run.stdout")" = "$(printf 'rank 0: %d rounds\nrank 1: %d rounds' $rounds $rounds)" ] ||
    fail "the application's output changed: $(head -c 200 "$out/run.stdout")"
  grep -q ENOSPC "$out/run.stderr" || fail "no message naming ENOSPC: $(head -c 300 "$out/run.stderr")"
  # How the 6 MiB is shared between the ranks is the scheduler's: one rank
  # may fill it before the other copies its home once. So at least one copy
  # in all, which shows the disk filled while homes were being copied out.
  copies=0
  for r in 0 1; do
    f=$out/mnt/trace/rank-0000$r.prof
    python3 "$check" "$dump" "$f" 20000 - none 0 >"$out/check.txt" || fail "rank $r's trace"
    cat "$out/check.txt"
    copies=$((copies + $(sed -n 's/.* \([0-9]*\) events chunk(s) after it.*/\1/p' "$out/check.txt" | head -1)))
    "$dump" "$f" --no-events --stats >"$out/dump.txt" 2>&1
    read_events=$(sed -n 's/^stats .* events=\([0-9]*\).*/\1/p' "$out/dump.txt")
    lost=$(sed -n 's/^meta records_lost=\([0-9]*\)/\1/p' "$out/dump.txt")
    # MPI_Init, MPI_Comm_rank, the rounds' sends and receives, MPI_Finalize.
    echo "    rank $r: ${read_events:-?} records read, ${lost:-no} counted lost"
    [ -n "$lost" ] && [ $(( ${read_events:-0} + lost )) -eq $((2 * rounds + 3)) ] ||
      fail "rank $r: ${read_events:-?} read + ${lost:-0} lost, expected $((2 * rounds + 3))"
  done
  [ $copies -ge 1 ] || fail "no home was copied out before the disk filled"
  ;;
*)
  echo "unknown case $case_"
  exit 2
  ;;
esac
[ $fails -eq 0 ] && echo "PASS" || echo "$fails failure(s)"
[ $fails -eq 0 ]
