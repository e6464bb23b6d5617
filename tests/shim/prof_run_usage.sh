#!/bin/sh
# prof-run's own usage: no program is a usage error (2, usage on stderr, nothing
# on stdout); --help prints it and exits 0; "--" ends prof-run's options (the
# program after it runs, its exit status returned; "--" alone is no program);
# an unknown option is a usage error too, not a program. Installed under a
# path with a space (LD_PRELOAD cannot hold it), it says so and runs nothing.
#   prof_run_usage.sh PROF_RUN LIBPROF WORKDIR
run=$1 lib=$2 work=$3
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
"$run" --bogus 2>err >out
[ $? -eq 2 ] || fail "--bogus: exit status not 2"
grep -q "unknown option '--bogus'" err || fail "--bogus: not named on stderr: $(cat err)"
rm -rf "sp ace" && mkdir -p "sp ace/bin" "sp ace/lib" || exit 1
cp "$run" "sp ace/bin/" && ln -s "$lib" "sp ace/lib/libprof.so" || exit 1
rm -f ran
"$PWD/sp ace/bin/prof-run" sh -c 'touch ran' 2>err
[ $? -eq 127 ] || fail "under a path with a space: exit status not 127"
grep -q "cannot preload '$PWD/sp ace/bin/../lib/libprof.so'" err || fail "under a path with a space: $(cat err)"
[ -e ran ] && fail "under a path with a space: the program ran unprofiled"
rm -rf "sp ace"
echo PASS
