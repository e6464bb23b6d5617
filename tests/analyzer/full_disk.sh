#!/usr/bin/env bash
# A TMPDIR that fills up while the root causes wait there is the machine's
# failure, not the trace's: prof-analyze exits 1 (as for an output it cannot
# write), not 2 ("input unusable"), and names TMPDIR and the reason. The same
# trace with room to spare is analyzed. An OTF2 archive that fills the disk
# is one error naming the cause, not libotf2's own lines. A report that
# fills the disk leaves an earlier file of its name as it was.
# In an MPI job where one process's TMPDIR fills up, the job exits 1 too.
# Usage: full_disk.sh PROF_GEN_TRACE PROF_ANALYZE OUTDIR MPIEXEC
set -uo pipefail
gen=$1 analyze=$2 out=$3 mpiexec=$4
umount "$out/tmp" 2>/dev/null
umount "$out/disk" 2>/dev/null
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../integration/small_tmpfs.sh"
"$gen" -n 300000 -r 4 "$out/trace" >/dev/null || fail "prof-gen-trace"
mount_small_tmpfs "$out/tmp" 64k
TMPDIR="$out/tmp" "$analyze" --no-progress --no-index "$out/trace" -o /dev/null --json "$out/r.json" 2>"$out/err"
rc=$?
[ $rc -eq 1 ] || fail "a full TMPDIR: exit status $rc, expected 1: $(cat "$out/err")"
grep -q "TMPDIR" "$out/err" && grep -q "No space left on device" "$out/err" ||
  fail "a full TMPDIR: the message names neither TMPDIR nor the reason: $(cat "$out/err")"
timeout -k 5 100 "$mpiexec" -n 1 "$analyze" --no-progress --no-index "$out/trace" -o /dev/null --json "$out/r.json" : \
  -n 1 env TMPDIR="$out/tmp" "$analyze" --no-progress --no-index "$out/trace" -o /dev/null --json "$out/r.json" \
  2>"$out/err"
rc=$?
[ $rc -eq 1 ] || fail "a full TMPDIR on process 1 of a job: exit status $rc, expected 1: $(cat "$out/err")"
grep -q "TMPDIR" "$out/err" || fail "a full TMPDIR on process 1 of a job: TMPDIR not named: $(cat "$out/err")"
"$analyze" --no-progress --no-index "$out/trace" -o /dev/null --json "$out/r.json" || fail "with room in /tmp"
mount_small_tmpfs "$out/disk" 64k  # (the trap now unmounts this one; the first goes with rm below)
umount "$out/tmp"
echo "an earlier Chrome trace" >"$out/disk/c.json"
"$analyze" --no-progress --no-index "$out/trace" -o /dev/null --chrome-trace "$out/disk/c.json" 2>"$out/err"
rc=$?
[ $rc -eq 1 ] || fail "--chrome-trace on a full disk: exit status $rc, expected 1: $(cat "$out/err")"
grep -q "^prof-analyze: error: cannot write $out/disk/c.json: No space left on device" "$out/err" ||
  fail "--chrome-trace on a full disk: the error names neither the file nor the reason: $(cat "$out/err")"
[ "$(cat "$out/disk/c.json")" = "an earlier Chrome trace" ] ||
  fail "--chrome-trace on a full disk: the earlier file of that name was not kept"
[ "$(ls "$out/disk")" = "c.json" ] || fail "--chrome-trace on a full disk left files behind: $(ls "$out/disk")"
"$analyze" --no-progress --no-index "$out/trace" -o /dev/null --otf2 "$out/disk/archive" 2>"$out/err"
rc=$?
[ $rc -eq 1 ] || fail "--otf2 on a full disk: exit status $rc, expected 1: $(cat "$out/err")"
[ "$(wc -l <"$out/err")" -eq 1 ] && grep -q "^prof-analyze: error: --otf2 .*No space left on device" "$out/err" ||
  fail "--otf2 on a full disk: expected one error naming the cause: $(cat "$out/err")"
echo PASS
