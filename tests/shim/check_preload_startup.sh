#!/usr/bin/env bash
# What preloading libprof.so costs a process that is not an MPI rank (mpiexec,
# the hydra proxy, a shell a job script runs): it maps libprof.so and nothing
# else the process would not map anyway but glibc's libm (mpiexec, the proxy
# and every rank load it themselves), and it starts and exits as before, also
# when every symbol is bound at load (LD_BIND_NOW=1). Then the design's own
# form, `LD_PRELOAD=libprof.so mpiexec -n 2 PROGRAM`, under LD_BIND_NOW=1 as
# well, gives the plain run's output and exit code and writes a trace.
# Usage: check_preload_startup.sh LIBPROF MPIEXEC TRACE_DIR PROGRAM ARGS...
set -uo pipefail
lib=$1 mpiexec=$2 trace=$3; shift 3
fail=0

# The shared objects a non-MPI program maps (cat reading its own map).
mapped() { env "$@" cat /proc/self/maps | awk '$6 ~ /\.so/ { n = split($6, p, "/"); print p[n] }' | sort -u; }

plain=$(mapped)
for bind in "" "LD_BIND_NOW=1"; do
  preloaded=$(mapped $bind LD_PRELOAD="$lib"); rc=$?
  extra=$(comm -13 <(echo "$plain") <(echo "$preloaded") | grep -v -x -e libprof.so -e 'libm\.so\.6')
  echo "${bind:-lazy binding}: maps beyond the plain run: $(comm -13 <(echo "$plain") <(echo "$preloaded") | tr '\n' ' ')"
  [ "$rc" -eq 0 ] || { echo "FAIL: ${bind:-lazy binding}: the preloaded program exited $rc"; fail=1; }
  [ -z "$extra" ] || { echo "FAIL: ${bind:-lazy binding}: preloading maps $(echo $extra)"; fail=1; }
  grep -qx libprof.so <<< "$preloaded" || { echo "FAIL: libprof.so was not preloaded"; fail=1; }
done

rm -rf "$trace"
want=$("$mpiexec" -n 2 "$@"); want_rc=$?
got=$(LD_BIND_NOW=1 PROF_OUTPUT="$trace" LD_PRELOAD="$lib" "$mpiexec" -n 2 "$@"); got_rc=$?
echo "plain (rc $want_rc): $want"
echo "LD_BIND_NOW=1 LD_PRELOAD=libprof.so mpiexec (rc $got_rc): $got"
[ "$want_rc" -eq "$got_rc" ] || { echo "FAIL: exit codes differ"; fail=1; }
[ "$want" == "$got" ] || { echo "FAIL: outputs differ"; fail=1; }
[ -f "$trace/rank-00000.prof" ] && [ -f "$trace/rank-00001.prof" ] || { echo "FAIL: no trace in $trace"; fail=1; }
exit $fail
