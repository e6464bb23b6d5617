#!/bin/sh
# prof-run's own usage: no program is a usage error (2, usage on stderr, nothing
# on stdout); --help prints it and exits 0; "--" ends prof-run's options (the
# program after it runs, its exit status returned; "--" alone is no program).
#   prof_run_usage.sh PROF_RUN WORKDIR
run=$1 work=$2
mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$run" 2>err >out
[ $? -eq 2 ] || fail "no program: exit status not 2"
grep -q usage err || fail "no program: no usage on stderr"
[ -s out ] && fail "no program: something on stdout"
"$run" --help | grep -q usage || fail "--help: no usage"
"$run" -- 2>/dev/null
[ $? -eq 2 ] || fail "'--' alone: exit status not 2"
"$run" -- sh -c 'exit 7'
[ $? -eq 7 ] || fail "'-- sh -c exit 7': exit status not 7"
echo PASS
