#!/bin/bash
# Where the trace goes when the disk fills, the output directory is reused or
# the buffers are big: the application runs unchanged and no trace is lost,
# overwritten or left with space it does not use.
#
#   losses.sh CASE SHIM MPIEXEC BUSY PROF_DUMP PROF_ANALYZE OUTDIR
#
# CASE:
#   full_disk     PROF_OUTPUT on a 1 MiB tmpfs (mounted here: the tests run as
#                 root), a run of far more calls than fit: the same output and
#                 exit status as without the profiler, one message naming
#                 ENOSPC, rank files within the tmpfs (nothing sparse), the
#                 loss counted (meta records_lost), prof-dump and prof-analyze
#                 read the files and report the loss as damage (exit 3, on
#                 stderr and in the text report). Then, the disk full from
#                 the start: unprofiled, and no empty directory left.
#   file_size_limit  a file-size limit (ulimit -f) the trace reaches: the
#                 application's output and exit status as without the profiler
#                 (not ended by SIGXFSZ), one message per rank naming EFBIG,
#                 the loss counted and reported as damage (exit 3).
#   reused_output two runs into one PROF_OUTPUT, the second with fewer ranks:
#                 the first trace stays byte for byte, the second goes to
#                 PROF_OUTPUT-2 and says so on stderr, both analyzable;
#                 PROF_OUTPUT=new/// is new; a link another user planted as
#                 PROF_OUTPUT is refused, not written through.
#   big_buffer    PROF_BUFFER_MB=64, enough calls that the last chunk is a
#                 2 MiB one mostly unused: the file keeps only what was written
#                 (its size less the event bytes is under 128 KiB; untrimmed it
#                 would be over 1 MiB) and reads without damage.
set -u
case_=$1 shim=$2 mpiexec=$3 busy=$4 dump=$5 analyze=$6 out=$7
source "$(dirname "$0")/small_tmpfs.sh"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset PROF_OUTPUT PROF_TIMER PROF_SYNC PROF_BUFFER_MB PROF_STRICT PROF_LOG_LEVEL \
      PROF_TEST_CLOCK_SHIFT_NS PROF_EXPECT_DIR
if mountpoint -q "$out/mnt" 2>/dev/null; then umount "$out/mnt"; fi
rm -rf "$out"
mkdir -p "$out"

# run NAME NP [ENV=V...] -- ARGS...: mpiexec -n NP BUSY ARGS; sets rc, leaves
# NAME.stdout / NAME.stderr.
run() {
  local name=$1 np=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout -k 5 60 "$mpiexec" -n "$np" "$busy" "$@" \
    >"$out/$name.stdout" 2>"$out/$name.stderr"
  rc=$?
  echo "[$name] ${envs[*]} mpiexec -n $np busy $* -> $rc"
  sed 's/^/    stdout: /' "$out/$name.stdout" | head -10
  sed 's/^/    stderr: /' "$out/$name.stderr" | head -10
}
same_output() { cmp -s <(sort "$out/$1.stdout") <(sort "$out/$2.stdout"); }

# read_ok TRACE_DIR WHAT STATUSES: prof-dump and prof-analyze read it, never
# killed by a signal, and exit with one of STATUSES (3: damage or loss
# reported, report salvaged).
read_ok() {
  local dir=$1 what=$2 allowed=$3 r
  timeout 60 "$dump" "$dir" --no-events --stats >"$out/dump.txt" 2>"$out/dump.err"
  r=$?
  case " $allowed " in
    *" $r "*) ;;
    *) fail "$what: prof-dump exit status $r, expected one of $allowed ($(head -c 300 "$out/dump.err"))" ;;
  esac
  timeout 60 "$analyze" "$dir" -o "$out/report.txt" >/dev/null 2>"$out/analyze.err"
  r=$?
  case " $allowed " in
    *" $r "*) ;;
    *) fail "$what: prof-analyze exit status $r, expected one of $allowed ($(head -c 300 "$out/analyze.err"))" ;;
  esac
}

case "$case_" in
full_disk)
  mount_small_tmpfs "$out/mnt" 1m
  rounds=400 local_calls=500  # 200800 calls, about 1.6 MB of records per rank
  run plain 2 -- $rounds $local_calls
  [ $rc -eq 0 ] || fail "without the profiler, busy exited with $rc"
  run full 2 "PROF_OUTPUT=$out/mnt/trace" "LD_PRELOAD=$shim" -- $rounds $local_calls
  [ $rc -eq 0 ] || fail "on a full disk, exit status $rc instead of 0"
  same_output plain full || fail "on a full disk, the application's output changed"
  grep -q ENOSPC "$out/full.stderr" || fail "no message naming ENOSPC"
  grep -qi -e "file exists" -e "no such device" "$out/full.stderr" &&
    fail "the message names the wrong error"
  n=$(grep -c ENOSPC "$out/full.stderr")
  [ "$n" -le 2 ] || fail "$n messages naming ENOSPC (one per rank at most)"
  for f in "$out"/mnt/trace/rank-*.prof; do
    size=$(stat -c %s "$f")
    echo "    $(basename "$f"): $size bytes, $(( $(stat -c %b "$f") * $(stat -c %B "$f") )) on disk"
    [ "$size" -le 1048576 ] || fail "$(basename "$f") is $size bytes, more than the 1 MiB tmpfs"
  done
  [ -f "$out/mnt/trace/rank-00000.prof" ] || fail "no rank file"
  # Records lost are damage: exit status 3, said on stderr and in the text
  # report, and no rank is blamed for ending early.
  read_ok "$out/mnt/trace" "full disk" "3"
  grep -q "records lost when recording" "$out/dump.err" || fail "prof-dump does not say records were lost"
  grep -q "records lost when recording" "$out/analyze.err" || fail "prof-analyze's stderr does not say records were lost"
  grep -qi "cut short" "$out/analyze.err" && fail "prof-analyze blames a rank cut short: $(cat "$out/analyze.err")"
  grep -q "^---Records lost when recording" "$out/report.txt" || fail "the text report does not show the records lost"
  grep "meta records_lost\|^end \|^stats" "$out/dump.txt" | sed 's/^/    /'
  # Every call is either in the trace or counted as lost, on each rank.
  calls=$((4 + rounds * (2 + local_calls)))
  for f in "$out"/mnt/trace/rank-*.prof; do
    "$dump" "$f" --no-events --stats >"$out/rank.txt" 2>&1
    lost=$(sed -n 's/^meta records_lost=//p' "$out/rank.txt")
    events=$(sed -n 's/^stats .* events=\([0-9]*\).*/\1/p' "$out/rank.txt")
    [ -n "$lost" ] && [ "$lost" -gt 0 ] || fail "$(basename "$f"): the loss is not counted in the trace"
    [ $(( ${events:-0} + ${lost:-0} )) -eq $calls ] ||
      fail "$(basename "$f"): $events events + $lost lost, expected $calls calls in all"
  done
  # A disk full from the start: the run goes on unprofiled and leaves no empty
  # directory behind (neither the trace's nor the parents it made).
  dd if=/dev/zero of="$out/mnt/filler" bs=64k 2>/dev/null
  run full_at_start 2 "PROF_OUTPUT=$out/mnt/new/trace" "LD_PRELOAD=$shim" -- 10
  [ $rc -eq 0 ] || fail "disk full at start: exit status $rc"
  grep -q "ENOSPC\|No space left" "$out/full_at_start.stderr" || fail "disk full at start: no message naming ENOSPC"
  [ -e "$out/mnt/new" ] && fail "disk full at start: left $(find "$out/mnt/new")"
  ;;
file_size_limit)
  # 8 MiB (blocks of 1 KiB): less than MPICH's own shared memory files need
  # ends the run without the profiler too (SIGXFSZ); about 10 MB of records a
  # rank pass it.
  rounds=2600 local_calls=500
  ( ulimit -f 8192 && run plain 2 -- $rounds $local_calls && exit $rc )
  rc=$?
  [ $rc -eq 0 ] || fail "without the profiler, under ulimit -f, busy exited with $rc"
  ( ulimit -f 8192 && run limited 2 "PROF_OUTPUT=$out/trace" "LD_PRELOAD=$shim" -- $rounds $local_calls
    exit $rc )
  rc=$?
  [ $rc -eq 0 ] || fail "under ulimit -f, exit status $rc instead of 0 (SIGXFSZ is $(kill -l XFSZ 2>/dev/null))"
  same_output plain limited || fail "under ulimit -f, the application's output changed"
  n=$(grep -c "EFBIG" "$out/limited.stderr")
  [ "$n" -ge 1 ] && [ "$n" -le 2 ] || fail "$n messages naming EFBIG, expected one per rank at most (at least one)"
  read_ok "$out/trace" "file-size limit" "3"
  grep -q "records lost when recording" "$out/analyze.err" || fail "prof-analyze's stderr does not say records were lost"
  ;;
reused_output)
  run first 3 "PROF_OUTPUT=$out/trace" "LD_PRELOAD=$shim" -- 100
  [ $rc -eq 0 ] || fail "first run: exit status $rc"
  [ -s "$out/first.stderr" ] && fail "first run into a new directory: the shim wrote to stderr"
  (cd "$out/trace" && sha256sum rank-*.prof) >"$out/first.sums"
  run second 2 "PROF_OUTPUT=$out/trace" "LD_PRELOAD=$shim" -- 50
  [ $rc -eq 0 ] || fail "second run: exit status $rc"
  (cd "$out/trace" && sha256sum -c --quiet "$out/first.sums") ||
    fail "the first trace changed"
  [ "$(ls "$out/trace" | wc -l)" -eq 3 ] || fail "files added to the first trace: $(ls "$out/trace")"
  [ "$(ls "$out/trace-2" 2>/dev/null | wc -l)" -eq 2 ] || fail "the second trace is not in trace-2"
  [ "$(wc -l <"$out/second.stderr")" -eq 1 ] || fail "expected one line on stderr"
  grep -q "$out/trace-2" "$out/second.stderr" || fail "the message does not name $out/trace-2"
  read_ok "$out/trace" "first trace" "0"
  grep -q "^trace .* world_size=3 ranks=3" "$out/dump.txt" || fail "first trace: not its 3 ranks"
  read_ok "$out/trace-2" "second trace" "0"
  grep -q "^trace .* world_size=2 ranks=2" "$out/dump.txt" || fail "second trace: not its 2 ranks"
  # The trace records PROF_OUTPUT as resolved: the directory it went to.
  timeout 60 "$analyze" "$out/trace-2" -q -o /dev/null --json "$out/second.json" >/dev/null 2>&1
  python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["run"]["prof_settings"]["PROF_OUTPUT"]
sys.exit(0 if v == sys.argv[2] else f"{v!r} instead of {sys.argv[2]!r}")' "$out/second.json" "$out/trace-2" ||
    fail "second trace: JSON prof_settings.PROF_OUTPUT is not the directory it went to"
  # A third run, with a trailing slash, goes to trace-3.
  run third 2 "PROF_OUTPUT=$out/trace/" "LD_PRELOAD=$shim" -- 10
  [ $rc -eq 0 ] || fail "third run: exit status $rc"
  [ -f "$out/trace-3/rank-00001.prof" ] || fail "the third trace is not in trace-3"
  # A file named like the next candidate is passed over: a fourth run goes to trace-5.
  touch "$out/trace-4"
  run fourth 2 "PROF_OUTPUT=$out/trace" "LD_PRELOAD=$shim" -- 10
  [ $rc -eq 0 ] || fail "fourth run: exit status $rc"
  [ -f "$out/trace-5/rank-00001.prof" ] || fail "with a file trace-4 in the way, the fourth trace is not in trace-5"
  # Repeated slashes name the same new directory: no "already holds" message.
  run slashes 2 "PROF_OUTPUT=$out/new///" "LD_PRELOAD=$shim" -- 10
  [ $rc -eq 0 ] || fail "PROF_OUTPUT=new///: exit status $rc"
  [ -s "$out/slashes.stderr" ] && fail "PROF_OUTPUT=new///: the shim wrote to stderr"
  [ -f "$out/new/rank-00001.prof" ] || fail "PROF_OUTPUT=new///: the trace is not in new"
  # A PROF_OUTPUT that another user planted as a link is not written through.
  mkdir -p "$out/elsewhere"
  ln -s "$out/elsewhere" "$out/planted"
  if chown -h nobody "$out/planted" 2>/dev/null; then
    run planted 2 "PROF_OUTPUT=$out/planted" "LD_PRELOAD=$shim" -- 10
    [ $rc -eq 0 ] || fail "planted link: exit status $rc"
    grep -q "symbolic link owned by another user" "$out/planted.stderr" || fail "planted link: not refused"
    [ -z "$(ls "$out/elsewhere")" ] || fail "planted link: written through: $(ls "$out/elsewhere")"
  else
    echo "SKIP: planted link (chown needs root)"
  fi
  ;;
big_buffer)
  # 600 * 502 calls: about 2.4 MB of records per rank, so the last chunk is
  # the 2 MiB one (after 64 KiB + ... + 1 MiB), filled to about a fifth.
  run plain 2 -- 600 500
  run big 2 "PROF_OUTPUT=$out/trace" "PROF_BUFFER_MB=64" "LD_PRELOAD=$shim" -- 600 500
  [ $rc -eq 0 ] || fail "exit status $rc"
  same_output plain big || fail "the application's output changed"
  [ -s "$out/big.stderr" ] && fail "the shim wrote to stderr"
  for f in "$out"/trace/rank-*.prof; do
    "$dump" "$f" --no-events --stats >"$out/dump.txt" 2>&1 || fail "prof-dump $f failed"
    size=$(stat -c %s "$f")
    disk=$(( $(stat -c %b "$f") * $(stat -c %B "$f") ))
    events=$(sed -n 's/^streams .* event_bytes \([0-9]*\).*/\1/p' "$out/dump.txt")
    echo "    $(basename "$f"): $size bytes ($disk on disk), $events bytes of events"
    [ -n "$events" ] && [ "$events" -gt 1048576 ] ||
      fail "$(basename "$f"): ${events:-no} event bytes, expected more than 1 MiB (several chunks)"
    [ $((size - ${events:-0})) -lt 131072 ] ||
      fail "$(basename "$f"): $((size - ${events:-0})) bytes beyond the events (unused chunk space kept)"
    grep -q "^stats .* unsealed_chunks=0 crc_mismatches=0 bad_chunk_headers=0 truncated_chunks=0" \
      "$out/dump.txt" || fail "$(basename "$f"): damage: $(grep '^stats\|^warning' "$out/dump.txt")"
  done
  read_ok "$out/trace" "big buffer" "0"
  ;;
*)
  echo "losses.sh: unknown case $case_" >&2
  exit 2
  ;;
esac
if [ $fails -ne 0 ]; then
  echo "FAIL: $fails problem(s)"
  exit 1
fi
echo PASS
