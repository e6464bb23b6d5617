#!/bin/bash
# Chunks missing from a real trace (format 8 numbers each stream's chunks):
# a rank file with an events chunk cut out of its middle, or cut at a chunk
# boundary before its stream's last chunk, is reported as damage by
# prof-dump (missing_chunks, exit 3) and prof-analyze (a warning naming the
# file, exit 3), the rest of the trace analyzed; the intact trace gives no
# warning.
#
#   missing_chunks.sh SHIM MPIEXEC BUSY PROF_DUMP PROF_ANALYZE SURGERY_PY OUTDIR
#
# Two runs of busy.c on 2 ranks, mostly MPI_Comm_rank calls (8-byte records,
# no waiting on the other rank):
#   home     PROF_BUFFER_MB=1, 400,000 calls a rank: chunks of 64 KiB to
#            512 KiB, then a home copied out at least once. Rank 1 loses its
#            second chunk; rank 0's file is cut before its last copy, which
#            the jump to its home's number (the home lies before the copies)
#            shows.
#   no_home  PROF_BUFFER_MB=8, 100,000 calls a rank: growing chunks only, the
#            newest last in the file. Rank 1's file is cut before it: only
#            the Live slot's count of the stream's chunks shows the loss.
set -u
shim=$1 mpiexec=$2 program=$3 dump=$4 analyze=$5 surgery=$6 out=$7
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset PROF_OUTPUT PROF_TIMER PROF_SYNC PROF_BUFFER_MB PROF_STRICT PROF_LOG_LEVEL
rm -rf "$out"
mkdir -p "$out"

# record NAME BUFFER_MB ROUNDS
record() {
  timeout -k 5 100 "$mpiexec" -n 2 env "PROF_OUTPUT=$out/$1" "PROF_BUFFER_MB=$2" \
    "LD_PRELOAD=$shim" "$program" "$3" 2000 >"$out/$1.stdout" 2>"$out/$1.stderr"
  local rc=$?
  [ $rc -eq 0 ] || fail "$1: exit status $rc ($(head -c 300 "$out/$1.stderr"))"
}

# calls_of RANK: the calls prof-analyze counted for RANK (analyze.txt).
calls_of() { sed -n "/^---Characteristics per Processor---/,/^\$/s/^$1 1 .* \([0-9]*\)\$/\1/p" "$out/analyze.txt" | head -1; }

# intact DIR: both tools read it without a word of damage.
intact() {
  local r
  for r in 0 1; do
    "$dump" "$1/rank-0000$r.prof" --no-events --stats >"$out/dump.txt" 2>&1 ||
      fail "$1 rank $r: prof-dump exit status $? on the intact file"
    grep -q "^stats .* missing_chunks=0 " "$out/dump.txt" || fail "$1 rank $r: $(grep ^stats "$out/dump.txt")"
  done
  "$analyze" --no-progress "$1" >"$out/analyze.txt" 2>&1 ||
    fail "$1: prof-analyze exit status $? on the intact trace: $(head -c 300 "$out/analyze.txt")"
  if grep -q "events chunks\? of stream [0-9]* missing" "$out/analyze.txt"; then
    fail "$1: intact trace reported missing chunks"
  fi
  intact_calls=($(calls_of 0) $(calls_of 1))
  [ ${#intact_calls[@]} -eq 2 ] || fail "$1: no calls per rank in the report"
}

# damaged DIR RANK OTHER WHAT: RANK's file reported missing chunks (WHAT: a
# phrase of the warning); OTHER's read whole and analyzed, its calls as many
# as in the intact trace (intact_calls); the report still made.
damaged() {
  local dir=$1 rank=$2 other=$3 what=$4
  "$dump" "$dir/rank-0000$rank.prof" --no-events --stats >"$out/dump.txt" 2>&1
  local rc=$?
  [ $rc -eq 3 ] || fail "$dir: prof-dump exit status $rc, expected 3"
  grep -q "^stats .* missing_chunks=[1-9]" "$out/dump.txt" ||
    fail "$dir: no missing chunk counted: $(grep ^stats "$out/dump.txt")"
  grep -q "^warning: .*rank-0000$rank.prof: offset [0-9]*: [0-9]* events chunks\? of stream 0 missing $what" \
    "$out/dump.txt" || fail "$dir: no warning 'missing $what': $(grep ^warning "$out/dump.txt" | head -3)"
  "$dump" "$dir/rank-0000$other.prof" --no-events --stats >/dev/null 2>&1 ||
    fail "$dir: rank $other's intact file read as damaged"
  "$analyze" --no-progress "$dir" >"$out/analyze.txt" 2>&1
  rc=$?
  [ $rc -eq 3 ] || fail "$dir: prof-analyze exit status $rc, expected 3: $(head -c 300 "$out/analyze.txt")"
  grep -q "rank-0000$rank.prof: offset [0-9]*: .* missing $what" "$out/analyze.txt" ||
    fail "$dir: prof-analyze names no missing chunk of rank $rank"
  grep -q "^Interval .*Level=0" "$out/analyze.txt" || fail "$dir: no report"
  [ "$(calls_of $other)" = "${intact_calls[$other]}" ] ||
    fail "$dir: rank $other: $(calls_of $other) calls analyzed, ${intact_calls[$other]} in the intact trace"
  echo "  $dir: $(grep -o "[0-9]* events chunks\? of stream 0 missing $what" "$out/analyze.txt" | head -1)"
}

record home 1 200
record no_home 8 50

intact "$out/home"
cp -r "$out/home" "$out/home_removed"
python3 "$surgery" "$out/home_removed/rank-00001.prof" remove 1 || fail "surgery"
damaged "$out/home_removed" 1 0 "before this chunk"

cp -r "$out/home" "$out/home_cut"
python3 "$surgery" "$out/home_cut/rank-00000.prof" cut-last || fail "surgery"
damaged "$out/home_cut" 0 1 "before this chunk"

intact "$out/no_home"
cp -r "$out/no_home" "$out/no_home_cut"
python3 "$surgery" "$out/no_home_cut/rank-00001.prof" cut-last || fail "surgery"
damaged "$out/no_home_cut" 1 0 "after this chunk"

[ $fails -eq 0 ] && echo "PASS" || echo "$fails failure(s)"
[ $fails -eq 0 ]
