#!/bin/sh
# Runs the window index's libFuzzer target for a bounded time: a small
# generated trace, its index written by prof-analyze, and that index's body
# (the file past its 20-byte header) as the seed.
# usage: run_fuzz_window_index.sh FUZZER GEN_TRACE PROF_ANALYZE WORKDIR SECONDS
set -eu
fuzzer=$1 gen=$2 analyze=$3 work=$4 secs=$5
rm -rf "$work"
mkdir -p "$work/corpus"
"$gen" "$work/trace" --events 6000 --ranks 2 --chunk-bytes 1024 >/dev/null
"$analyze" "$work/trace" -q --no-progress --index -o /dev/null
tail -c +21 "$work/trace/window-index.bin" >"$work/corpus/seed"
cd "$work"
PROF_FUZZ_TRACE="$work/trace" exec "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 corpus
