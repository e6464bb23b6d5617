#!/usr/bin/env bash
# Runs a command and prints the peaks of its resident memory by kind, sampled
# every 10 ms from /proc/PID/status: anonymous (the heap), file-backed (mapped
# files: the root causes' log, mapped back after the pass) and their sum. GNU
# time's peak is the sum's; this tells which kind set it (a brief peak between
# two samples can be missed).
#   bench/resident_peaks.sh build/analyzer/prof-analyze /tmp/g16384 --json /dev/null -o /dev/null -q
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: bench/resident_peaks.sh COMMAND [ARGS...]" >&2; exit 2; }
"$@" &
pid=$!
anon=0 file=0 both=0
while kill -0 "$pid" 2> /dev/null; do
  read -r a f < <(awk '/^RssAnon:/ {a = $2} /^RssFile:/ {f = $2} END {print a + 0, f + 0}' "/proc/$pid/status" 2> /dev/null || echo "0 0")
  (( a > anon )) && anon=$a
  (( f > file )) && file=$f
  (( a + f > both )) && both=$((a + f))
  sleep 0.01
done
status=0
wait "$pid" || status=$?
echo "peak KB: anon $anon, file $file, sum $both (exit status $status)"
exit "$status"
