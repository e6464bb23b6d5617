#!/bin/bash
# The shim must not change what the application does: exit code, output.
#
#   transparency.sh CASE SHIM MPIEXEC HELLO OUTDIR
#
# CASE:
#   exit_code     hello returns 3 after MPI_Finalize: 3 under the shim too, same
#                 stdout, nothing on stderr, a trace written.
#   no_init       processes that never call MPI_Init (/bin/true, and mpiexec
#                 itself): no file, no output, even with bad settings.
#   bad_settings  each bad PROF_* value: exactly one message on stderr naming
#                 the variable (and, for PROF_TIMER, the accepted values); the
#                 application's output and exit code unchanged; no trace. Also
#                 with the bad value on rank 1 only, and with a setting the
#                 shim's own collectives follow (PROF_SYNC, PROF_BCAST) set
#                 otherwise on rank 1 than on rank 0: no hang, one message.
#   strict        PROF_STRICT=1 with a bad setting or an unwritable output: the
#                 run fails (non-zero exit) and says why, also under
#                 PROF_LOG_LEVEL=off, and also where only one rank has both.
set -u
case_=$1 shim=$2 mpiexec=$3 hello=$4 out=$5
rm -rf "$out"
mkdir -p "$out"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# The environment must not carry settings from outside.
unset PROF_OUTPUT PROF_TIMER PROF_SYNC PROF_BUFFER_MB PROF_STRICT PROF_LOG_LEVEL PROF_HANG_WARN \
      PROF_TEST_CLOCK_SHIFT_NS PROF_EXPECT_DIR

# run NAME [ENV=V...] -- CMD...: runs with a timeout in $out/NAME.cwd;
# sets rc, and leaves NAME.stdout / NAME.stderr.
run() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  mkdir -p "$out/$name.cwd"
  (cd "$out/$name.cwd" && env "${envs[@]}" timeout -k 5 40 "$@" \
      >"$out/$name.stdout" 2>"$out/$name.stderr")
  rc=$?
  echo "[$name] ${envs[*]} $* -> $rc"
  sed 's/^/    stdout: /' "$out/$name.stdout" | head -20
  sed 's/^/    stderr: /' "$out/$name.stderr" | head -20
}

# Rank lines come in any order.
same_output() { cmp -s <(sort "$out/$1.stdout") <(sort "$out/$2.stdout"); }
no_files() { [ -z "$(ls -A "$out/$1.cwd")" ]; }

case "$case_" in
exit_code)
  run plain -- "$mpiexec" -n 2 "$hello" 3
  [ $rc -eq 3 ] || fail "without the shim, hello should exit with 3 (got $rc)"
  run profiled "PROF_OUTPUT=$out/trace" "LD_PRELOAD=$shim" -- "$mpiexec" -n 2 "$hello" 3
  [ $rc -eq 3 ] || fail "under the shim, exit status $rc instead of 3"
  same_output plain profiled || fail "stdout differs under the shim"
  [ -s "$out/profiled.stderr" ] && fail "the shim wrote to stderr"
  [ -f "$out/trace/rank-00000.prof" ] && [ -f "$out/trace/rank-00001.prof" ] ||
    fail "no trace written"
  # A singleton (no mpiexec) too.
  run singleton "PROF_OUTPUT=$out/trace1" "LD_PRELOAD=$shim" -- "$hello" 3
  [ $rc -eq 3 ] || fail "singleton under the shim: exit status $rc instead of 3"
  [ -f "$out/trace1/rank-00000.prof" ] || fail "singleton: no trace written"
  ;;
no_init)
  for bad in "" PROF_TIMER=bogus PROF_OUTPUT=/proc/x; do
    tag=${bad%%=*}
    run "true${tag:+_$tag}" $bad "LD_PRELOAD=$shim" -- /bin/true
    [ $rc -eq 0 ] || fail "/bin/true under the shim: exit status $rc"
    [ -s "$out/true${tag:+_$tag}.stdout" ] || [ -s "$out/true${tag:+_$tag}.stderr" ] &&
      fail "/bin/true under the shim printed something"
    no_files "true${tag:+_$tag}" || fail "/bin/true under the shim created files"
    run "mpiexec${tag:+_$tag}" $bad "LD_PRELOAD=$shim" -- "$mpiexec" -n 1 /bin/true
    [ $rc -eq 0 ] || fail "mpiexec -n 1 /bin/true under the shim: exit status $rc"
    [ -s "$out/mpiexec${tag:+_$tag}.stdout" ] || [ -s "$out/mpiexec${tag:+_$tag}.stderr" ] &&
      fail "mpiexec -n 1 /bin/true under the shim printed something"
    no_files "mpiexec${tag:+_$tag}" || fail "mpiexec -n 1 /bin/true under the shim created files"
  done
  # An explicit PROF_OUTPUT is not created either.
  run named "PROF_OUTPUT=$out/never" "LD_PRELOAD=$shim" -- "$mpiexec" -n 1 /bin/true
  [ -e "$out/never" ] && fail "PROF_OUTPUT created by a process that never called MPI_Init"
  ;;
bad_settings)
  run plain -- "$mpiexec" -n 2 "$hello" 3
  [ $rc -eq 3 ] || fail "without the shim, hello should exit with 3 (got $rc)"
  i=0
  for setting in PROF_TIMER=bogus PROF_SYNC=sometimes PROF_BUFFER_MB=0 PROF_STRICT=maybe PROF_HANG_WARN=soon \
                 PROF_LOG_LEVEL=loud PROF_OUTPUT=/proc/x "PROF_OUTPUT=$out/plain.stdout/sub"; do
    i=$((i + 1))
    var=${setting%%=*}
    name="bad$i"
    trace="$out/trace$i"
    env=("PROF_OUTPUT=$trace" "$setting" "LD_PRELOAD=$shim")
    run $name "${env[@]}" -- "$mpiexec" -n 2 "$hello" 3
    [ $rc -eq 3 ] || fail "$setting: exit status $rc instead of 3"
    same_output plain $name || fail "$setting: the application's stdout changed"
    lines=$(wc -l <"$out/$name.stderr")
    [ "$lines" -eq 1 ] || fail "$setting: $lines lines on stderr, expected one message"
    grep -q "$var" "$out/$name.stderr" || fail "$setting: the message does not name $var"
    if [ "$var" = PROF_TIMER ]; then
      for v in tsc monotonic gettimeofday mpi_wtime; do
        grep -q "$v" "$out/$name.stderr" || fail "$setting: the message does not list '$v'"
      done
    fi
    if [ "$var" != PROF_OUTPUT ] && [ -e "$trace" ]; then
      fail "$setting: a trace was written"
    fi
    if [ "$var" = PROF_OUTPUT ] && ls "$out/$name.cwd"/prof-* >/dev/null 2>&1; then
      fail "$setting: a trace went somewhere else"
    fi
  done
  # A misspelt setting is no setting: the run is profiled with the defaults,
  # and rank 0 names it once, with the setting it is closest to.
  run typo "PROF_OUTPUT=$out/trace_typo" "PROF_TIMR=tsc" "LD_PRELOAD=$shim" -- "$mpiexec" -n 2 "$hello" 3
  [ $rc -eq 3 ] || fail "PROF_TIMR=tsc: exit status $rc instead of 3"
  same_output plain typo || fail "PROF_TIMR=tsc: the application's stdout changed"
  [ "$(wc -l <"$out/typo.stderr")" -eq 1 ] && grep -q "PROF_TIMR .*did you mean PROF_TIMER" "$out/typo.stderr" ||
    fail "PROF_TIMR=tsc: expected one warning naming PROF_TIMR and PROF_TIMER: $(cat "$out/typo.stderr")"
  [ -f "$out/trace_typo/rank-00001.prof" ] || fail "PROF_TIMR=tsc: no trace written"
  # A bad setting on rank 1 only (hydra's per-executable -env): rank 1 says
  # so, once; rank 0, which made the directory and its file meanwhile,
  # removes both.
  run bad_rank1 "PROF_OUTPUT=$out/trace_rank1" "LD_PRELOAD=$shim" -- \
      "$mpiexec" -n 1 "$hello" 3 : -n 1 -env PROF_TIMER bogus "$hello" 3
  [ $rc -eq 3 ] || fail "PROF_TIMER=bogus on rank 1: exit status $rc instead of 3"
  same_output plain bad_rank1 || fail "PROF_TIMER=bogus on rank 1: the application's stdout changed"
  [ "$(wc -l <"$out/bad_rank1.stderr")" -eq 1 ] && grep -q PROF_TIMER "$out/bad_rank1.stderr" ||
    fail "PROF_TIMER=bogus on rank 1: expected one message naming PROF_TIMER"
  [ -e "$out/trace_rank1" ] && fail "PROF_TIMER=bogus on rank 1: $(ls -R "$out/trace_rank1" | tr '\n' ' ') left"
  # Valid settings that differ between the ranks where the ranks' own
  # collectives follow them: one message naming the setting, unprofiled.
  for pair in "PROF_SYNC hierarchical ring" "PROF_BCAST shm native"; do
    read -r var zero one <<<"$pair"
    run "mixed_$var" "PROF_OUTPUT=$out/trace_mixed_$var" "LD_PRELOAD=$shim" -- \
        "$mpiexec" -n 1 -env "$var" "$zero" "$hello" 3 : -n 1 -env "$var" "$one" "$hello" 3
    [ $rc -eq 3 ] || fail "$var $zero and $one: exit status $rc instead of 3"
    same_output plain "mixed_$var" || fail "$var $zero and $one: the application's stdout changed"
    [ "$(wc -l <"$out/mixed_$var.stderr")" -eq 1 ] &&
      grep -q "$var is '$one' on rank 1 but '$zero' on rank 0" "$out/mixed_$var.stderr" ||
      fail "$var $zero and $one: expected one message naming $var and both values"
    [ -e "$out/trace_mixed_$var" ] && fail "$var $zero and $one: a trace was left"
  done
  ;;
strict)
  for setting in PROF_TIMER=bogus PROF_OUTPUT=/proc/x; do
    var=${setting%%=*}
    # 2 ranks: the run fails.
    name="strict2_$var"
    run $name "PROF_STRICT=1" "$setting" "LD_PRELOAD=$shim" -- "$mpiexec" -n 2 "$hello" 0
    [ $rc -ne 0 ] || fail "PROF_STRICT=1 $setting: the run succeeded"
    # The message naming the variable is checked at 1 rank, where no other
    # rank's abort can race it.
    name="strict1_$var"
    run $name "PROF_STRICT=1" "$setting" "LD_PRELOAD=$shim" -- "$mpiexec" -n 1 "$hello" 0
    [ $rc -ne 0 ] || fail "PROF_STRICT=1 $setting (1 rank): the run succeeded"
    grep -q "$var" "$out/$name.stderr" "$out/$name.stdout" ||
      fail "PROF_STRICT=1 $setting: no message naming $var"
  done
  # PROF_STRICT=1 and a bad setting on rank 1 only: every rank aborts (none
  # goes on into the application's collectives while another waits).
  run strict_rank1 "PROF_OUTPUT=$out/trace_strict_rank1" "LD_PRELOAD=$shim" -- \
      "$mpiexec" -n 1 "$hello" 0 : -n 1 -env PROF_TIMER bogus -env PROF_STRICT 1 "$hello" 0
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] ||
    fail "PROF_STRICT=1 and PROF_TIMER=bogus on rank 1 only: exit status $rc (0: not aborted; 124/137: hung)"
  # An abort says why, whatever PROF_LOG_LEVEL says.
  run strict_quiet "PROF_STRICT=1" "PROF_LOG_LEVEL=off" "PROF_TIMER=bogus" "LD_PRELOAD=$shim" -- \
      "$mpiexec" -n 1 "$hello" 0
  [ $rc -ne 0 ] || fail "PROF_STRICT=1 PROF_LOG_LEVEL=off PROF_TIMER=bogus: the run succeeded"
  grep -q PROF_TIMER "$out/strict_quiet.stderr" || fail "PROF_LOG_LEVEL=off: the abort does not say why"
  # And a good setting under PROF_STRICT=1 runs normally.
  run strict_ok "PROF_STRICT=1" "PROF_OUTPUT=$out/trace_ok" "LD_PRELOAD=$shim" -- \
      "$mpiexec" -n 2 "$hello" 0
  [ $rc -eq 0 ] || fail "PROF_STRICT=1 with good settings: exit status $rc"
  [ -f "$out/trace_ok/rank-00001.prof" ] || fail "PROF_STRICT=1 with good settings: no trace"
  ;;
*)
  echo "transparency.sh: unknown case $case_" >&2
  exit 2
  ;;
esac
if [ $fails -ne 0 ]; then
  echo "FAIL: $fails problem(s)"
  exit 1
fi
echo PASS
