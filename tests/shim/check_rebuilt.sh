#!/usr/bin/env bash
# Call sites resolved after the run name the lines of the binary that ran: the
# trace records each loaded object's build id, and when the file on disk has
# another one (rebuilt since), its call sites stay object+offset and the
# analysis says which binary was rebuilt.
# Usage: check_rebuilt.sh MPIEXEC PROF_RUN PROF_ANALYZE OUTDIR PROGRAM ARGS...
set -uo pipefail
mpiexec=$1 prof_run=$2 analyze=$3 out=$4; shift 4
program=$1; shift
rm -rf "$out"
mkdir -p "$out"
cp "$program" "$out/app"
fail() { echo "FAIL: $*"; exit 1; }
PROF_OUTPUT="$out/trace" timeout -k 5 60 "$mpiexec" -n 2 "$prof_run" "$out/app" "$@" >/dev/null ||
  fail "the profiled run failed"
# The raw markers' call sites are resolved from their return addresses.
"$analyze" "$out/trace" -o "$out/before.txt" 2>"$out/before.err" || fail "analysis failed: $(cat "$out/before.err")"
# (The file as the compiler named it: a build through ccache with base_dir
# names it relative to the build directory, ../examples/jacobi_demo.c.)
grep -q "LineNumber = 40 SourceFile = \([^ ]*/\)\?jacobi_demo.c) Level=2" "$out/before.txt" || fail "the raw marker's site is not resolved: $(grep Interval "$out/before.txt")"
grep -q "rebuilt" "$out/before.err" && fail "a binary reported rebuilt: $(cat "$out/before.err")"
# The same program, built again: another build id.
objcopy --remove-section=.note.gnu.build-id "$out/app" || fail "objcopy"
"$analyze" "$out/trace" -o "$out/after.txt" 2>"$out/after.err"
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc after a rebuild (the trace is not damaged)"
grep -q "binaries rebuilt since the run" "$out/after.err" || fail "no warning: $(cat "$out/after.err")"
grep -q "$out/app" "$out/after.err" || fail "the warning does not name the binary"
grep -q "LineNumber = 40 SourceFile = \([^ ]*/\)\?jacobi_demo.c" "$out/after.txt" && fail "resolved against the rebuilt binary"
grep -q "LineNumber = 0 SourceFile = app+0x[0-9a-f]*) Level=2" "$out/after.txt" || fail "the site is not object+offset: $(grep Interval "$out/after.txt")"
echo PASS
