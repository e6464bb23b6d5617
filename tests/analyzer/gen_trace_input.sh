#!/usr/bin/env bash
# prof-gen-trace on bad input: a usage error exits 1 with a message naming the
# option and writes nothing; a directory that holds a trace is never mixed
# with a new one (refused, or replaced whole with --replace); a count that
# cannot fit on the disk is refused before a byte is written.
# Usage: gen_trace_input.sh PROF_GEN_TRACE OUTDIR
set -uo pipefail
gen=$1 out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

# expect_refused NAME MESSAGE_PART ARGS...: exit 1, the message, no rank file.
expect_refused() {
  local name=$1 part=$2; shift 2
  "$gen" "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  [[ $rc == 1 ]] || fail "$name: exit $rc, expected 1: $(cat "$out/$name.err")"
  grep -q -- "$part" "$out/$name.err" || fail "$name: message without '$part': $(cat "$out/$name.err")"
}
expect_refused negative-events "--events: '-5'" -n -5 "$out/a"
expect_refused zero-events "--events: '0'" -n 0 "$out/a"
expect_refused text-events "--events: 'abc'" -n abc "$out/a"
expect_refused over-2^64 "--events" -n 18446744073709551616 "$out/a"
expect_refused negative-run-id "--run-id: '-1'" --run-id -1 "$out/a"
expect_refused no-ranks "--ranks" -r 0 "$out/a"
expect_refused no-chunk "--chunk-bytes: Value 0" --chunk-bytes 0 "$out/a"
expect_refused tiny-chunk "--chunk-bytes: Value 10" --chunk-bytes 10 "$out/a"
expect_refused empty-dir "OUT_DIR is empty" -n 100 ''
[[ -z $(ls -A "$out/a" 2>/dev/null) ]] || fail "a refused run wrote $(ls "$out/a")"
expect_refused too-big "more than the" -n 100000000000000 "$out/a"
[[ -z $(ls -A "$out/a" 2>/dev/null) ]] || fail "a count too big for the disk wrote $(ls "$out/a")"

"$gen" -n 4000 -r 4 "$out/t" >/dev/null || fail "a first trace"
cp "$out/t/rank-00003.prof" "$out/rank3"
expect_refused holds-a-trace "already holds a trace" -n 2000 -r 2 "$out/t"
cmp -s "$out/t/rank-00003.prof" "$out/rank3" || fail "a refused run changed the trace"
"$gen" -n 2000 -r 2 --replace "$out/t" >/dev/null || fail "--replace"
[[ $(ls "$out/t") == $'rank-00000.prof\nrank-00001.prof' ]] || fail "--replace left $(ls "$out/t" | tr '\n' ' ')"
echo "PASS"
