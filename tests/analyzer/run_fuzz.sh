#!/bin/sh
# Runs the reader's libFuzzer target for a bounded time from a seed corpus:
# a small generated trace and its cut-short variants.
# usage: run_fuzz.sh FUZZER GEN_TRACE WORKDIR SECONDS
set -eu
fuzzer=$1 gen=$2 work=$3 secs=$4
rm -rf "$work"
mkdir -p "$work/corpus" "$work/seed"
"$gen" "$work/seed" --events 120 --ranks 1 --chunk-bytes 1024 >/dev/null
cp "$work/seed/rank-00000.prof" "$work/corpus/full"
head -c 700 "$work/seed/rank-00000.prof" >"$work/corpus/cut"
cd "$work"
exec "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus
