#!/usr/bin/env bash
# The analysis under a sanitizer, run by hand, not by ctest: from scratch on
# 2 cores, the thread build and its runs take about 15 minutes, the address
# build about 35 (with the GUI) and its runs 3.
#
#   tests/analyzer/sanitize.sh thread|address [BUILD_DIR]
#
# builds prof-analyze, prof-gen-trace, the analyzer's unit tests, the shim
# (libprof.so) and the integration tests' programs with -fsanitize=thread, or
# with -fsanitize=address,undefined, into BUILD_DIR (default build-tsan or
# build-asan), without jemalloc (a sanitizer brings its own allocator), then
# runs
#   - the analyzer's unit tests (analysis, timeline, window index, OTF2, ...);
#   - prof-analyze with two workers on synthetic traces of 4, 256 and 2048
#     ranks, every report at once, then a --window of the first, and a trace
#     with one rank file cut short and another with a flipped byte (every
#     report, and a --window);
#   - the analysis as an MPI job (mpiexec -n 2, two workers each), on the
#     trace of 256 ranks and on the damaged one, its reports compared with
#     the plain command's;
#   - the shim in the integration tests' MPI programs, each run's trace
#     checked against the program's log of its calls, with PROF_BCAST=shm
#     and PROF_SYNC=hierarchical too, 3 and 5 ranks, Fortran, MPI_THREAD_MULTIPLE,
#     a program's own exit status, a forked child; then the integration
#     tests' scripts: bad settings, a full disk, a reused output, a killed
#     copy, missing chunks, hangs (under thread their sanitizer reports alone:
#     see hang() below);
#   - address only: crashes (the shim's crash handler), and the hangs that
#     crash;
#   - address only: the GUI's tests (gui_tests, offscreen), with prof-gui and
#     prof-analyze built with the same flags, on traces these runs record as
#     ctest's fixtures do. (Not under thread: Qt's own threads are not
#     instrumented, and TSan would report their synchronization as races.)
# It stops at the first sanitizer report (exit status 1) and says where its
# log is. The suppressions are in tests/analyzer/tsan-suppressions.txt,
# lsan-suppressions.txt and ubsan-suppressions.txt, each with why.
set -euo pipefail

kind=${1:-}
case $kind in
  thread) flags="-fsanitize=thread" ;;
  address) flags="-fsanitize=address,undefined -fno-omit-frame-pointer" ;;
  *) echo "usage: $0 thread|address [BUILD_DIR]" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
build=${2:-$source_dir/build-${kind:0:1}san}
mkdir -p "$build"
build=$(cd "$build" && pwd)
# (After the line above: the runs change directory, so the work folder's path
# must not be relative to where the script was started.)
work=$build/sanitize-work

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -G Ninja -S "$source_dir" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$flags" \
  "-DCMAKE_SHARED_LINKER_FLAGS=$flags" "-DPROF_BUILD_GUI=$([[ $kind == address ]] && echo ON || echo OFF)" \
  -DPROF_ANALYZE_JEMALLOC=OFF \
  -DPROF_ANALYZE_STATIC_CXX_RUNTIME=OFF "${launcher[@]}" > "$build/sanitize-cmake.log"
ninja -C "$build" analyzer/prof-analyze analyzer/prof-gen-trace tests/analyzer/analyzer_tests
# The shim too, inside MPI programs built with the same flags; and with
# address, the GUI.
two_rank_programs=(semantics comms mprobe coverage_coll coverage_p2p threads long_gap)
ninja -C "$build" libprof/src/libprof.so libprof/tools/prof-dump tests/integration/integ_trace_check \
  "${two_rank_programs[@]/#/tests/integration/integ_}" tests/integration/integ_ring tests/integration/integ_fortran \
  tests/integration/integ_hello tests/integration/integ_crash tests/integration/integ_fork \
  tests/integration/integ_busy tests/integration/integ_sequence tests/integration/libinteg_kill_in_copy.so \
  tests/integration/integ_hang tests/integration/integ_hang_fortran
if [[ $kind == address ]]; then
  ninja -C "$build" gui/prof-gui tests/gui/gui_tests tests/shim/shim_callsites_c tests/analyzer/analyzer_compare_runs
fi

export TSAN_OPTIONS="halt_on_error=1 suppressions=$here/tsan-suppressions.txt"
# (alloc_dealloc_mismatch: GCC 12's std::stable_sort takes its buffer with
# operator new and gives it back through free, inlined: a report inside
# libstdc++ on every sort of a non-trivial type.)
export ASAN_OPTIONS="halt_on_error=1 detect_leaks=1 alloc_dealloc_mismatch=0"
export LSAN_OPTIONS="suppressions=$here/lsan-suppressions.txt print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 suppressions=$here/ubsan-suppressions.txt"
# UCX's memory hooks and the sanitizers' interceptors of malloc and mmap do
# not go together (a sanitized MPI process crashes in MPI_Init with them).
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no

analyze=$build/analyzer/prof-analyze
gen=$build/analyzer/prof-gen-trace
rm -rf "$work"
mkdir -p "$work"
step=0
run() {  # run NAME COMMAND...: the command's output to its log; stop at a failure
  local name=$1; shift
  step=$((step + 1))
  local log=$work/$step-$name.log
  step_name=$name  # (shim's output directory)
  if ! "$@" > "$log" 2>&1; then
    echo "sanitize.sh: $name failed (a sanitizer report or an error): $log" >&2
    grep -m1 -E "(ERROR|WARNING): [A-Za-z]+Sanitizer|runtime error:" "$log" >&2 || tail -5 "$log" >&2
    exit 1
  fi
  echo "ok: $name"
}

run unit-tests "$build/tests/analyzer/analyzer_tests" --gtest_brief=1
run gen-4 "$gen" "$work/g4" -n 200000 -r 4
run gen-256 "$gen" "$work/g256" -n 400000 -r 256
run gen-2048 "$gen" "$work/g2048" -n 400000 -r 2048 --call-sites 3
for t in g4 g256 g2048; do
  run "analyze-$t" "$analyze" "$work/$t" -j 2 -q --no-progress --functions --wait-states --callsites \
    -o "$work/$t.txt" --json "$work/$t.json" --chrome-trace "$work/$t.chrome.json" --otf2 "$work/$t.otf2"
done
run window-g4 "$analyze" "$work/g4" -j 2 -q --no-progress --window 0.001:0.003 -o "$work/g4.window.txt"
# Damage: one rank's file cut short, another's byte flipped in its middle.
cp -r "$work/g4" "$work/damaged"
rm -f "$work/damaged/window-index.bin"
size=$(stat -c %s "$work/damaged/rank-00001.prof")
truncate -s $((size * 2 / 3)) "$work/damaged/rank-00001.prof"
size=$(stat -c %s "$work/damaged/rank-00002.prof")
printf '\xff' | dd of="$work/damaged/rank-00002.prof" bs=1 seek=$((size / 2)) conv=notrunc status=none
# (Exit status 3 and nothing else: damaged input, its salvaged report written.)
damaged() {  # damaged [OPTIONS]...: prof-analyze on it exits with 3
  local status=0
  $damaged_launcher "$analyze" "$work/damaged" -j 2 -q --no-progress "$@" || status=$?
  [[ $status == 3 ]]
}
damaged_launcher=""
run analyze-damaged damaged --no-index --functions --wait-states --callsites -o "$work/damaged.txt" \
  --json "$work/damaged.json" --chrome-trace "$work/damaged.chrome.json" --otf2 "$work/damaged.otf2"
run window-damaged damaged --window 0.001:0.003 -o "$work/damaged.window.txt"
run mpi-job mpiexec -n 2 "$analyze" "$work/g256" -j 2 -q --no-progress --no-index --functions --wait-states \
  --callsites -o "$work/g256.job.txt" --json "$work/g256.job.json"
run job-same-text cmp "$work/g256.job.txt" "$work/g256.txt"
run job-same-json cmp "$work/g256.job.json" "$work/g256.json"
# The damaged trace as a job: the same exit status, the same reports.
damaged_launcher="mpiexec -n 2"
run mpi-job-damaged damaged --no-index --functions --wait-states --callsites -o "$work/damaged.job.txt" \
  --json "$work/damaged.job.json"
run job-damaged-same-text cmp "$work/damaged.job.txt" "$work/damaged.txt"
run job-damaged-same-json cmp "$work/damaged.job.json" "$work/damaged.json"
run mpi-job-window-damaged damaged --window 0.001:0.003 -o "$work/damaged.window.job.txt"
run job-damaged-same-window cmp "$work/damaged.window.job.txt" "$work/damaged.window.txt"
# The shim in the integration tests' programs (tests/integration/run_check.sh:
# each run's exit status, then its trace against the program's own log of its
# calls), with the shared-memory broadcast and the hierarchical clock sync
# too. No leak check there: MPICH's and UCX's blocks left at exit would be
# reported with the shim's. (verify_asan_link_order: the shim is preloaded
# before the program's own runtime.)
shim_asan_options="$ASAN_OPTIONS detect_leaks=0 verify_asan_link_order=0"
shim() {  # shim PROGRAM RANKS [run_check.sh's options]... [-- PROGRAM'S ARGUMENTS] (under run: its step's name)
  local program=$1 ranks=$2 options=() signals=""; shift 2
  while [[ $# -gt 0 && $1 != -- ]]; do options+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  # (ASan's handlers of SIGSEGV and SIGABRT are left to the shim's crash
  # handler in the crash program's runs: that handler is what they test.)
  [[ $program == crash ]] && signals="handle_segv=0 handle_abort=0"
  ASAN_OPTIONS="$shim_asan_options $signals" \
    bash "$source_dir/tests/integration/run_check.sh" --out "$work/$step_name" \
    --shim "$build/libprof/src/libprof.so" --checker "$build/tests/integration/integ_trace_check" \
    --mpiexec mpiexec --np "$ranks" --timeout 120 "${options[@]}" -- "$build/tests/integration/integ_$program" "$@"
}
for program in "${two_rank_programs[@]}" fortran; do run "shim-$program" shim "$program" 2; done
run shim-coverage_coll-bcast-shm shim coverage_coll 2 --env PROF_BCAST=shm
run shim-coverage_coll-3 shim coverage_coll 3
run shim-comms-5 shim comms 5
run shim-ring-hierarchical shim ring 3 --env PROF_SYNC=hierarchical
run shim-hello-exit-3 shim hello 2 --status 3 -- 3
for mode in exit exec; do run "shim-fork-$mode" shim fork 2 -- "$mode"; done
# (Not under thread: UCX's own SIGSEGV handler frees memory, which TSan
# reports as a call unsafe in a signal handler.)
if [[ $kind == address ]]; then
  # (mpiexec's status as tests/integration/CMakeLists.txt expects it.)
  for mode_status in segv:nonzero abort:7 noexit:any noexit_slow:any sigkill:nonzero; do
    run "shim-crash-${mode_status%%:*}" shim crash 2 --status "${mode_status##*:}" -- "${mode_status%%:*}"
  done
fi
# The integration tests' scripts of settings, losses and hangs, with this
# build's shim, programs, prof-dump and prof-analyze (the arguments
# tests/integration/CMakeLists.txt gives them). The hangs' segv and abort
# cases test the shim's crash handler, as above.
integ=$source_dir/tests/integration
programs=$build/tests/integration
script() {  # script SCRIPT CASE ARGUMENTS...: the shim's settings as shim() has them
  local name=$1 case_=$2 signals=""; shift 2
  [[ $name == hang ]] && signals="handle_segv=0 handle_abort=0"
  ASAN_OPTIONS="$shim_asan_options $signals" bash "$integ/$name.sh" "$case_" "$build/libprof/src/libprof.so" "$@"
}
for case_ in exit_code no_init bad_settings strict; do
  run "transparency-$case_" script transparency "$case_" mpiexec "$programs/integ_hello" "$work/transparency-$case_"
done
for case_ in full_disk reused_output big_buffer; do
  run "losses-$case_" script losses "$case_" mpiexec "$programs/integ_busy" "$build/libprof/tools/prof-dump" \
    "$analyze" "$work/losses-$case_"
done
for case_ in clean kill_partial kill_whole full_disk; do
  run "home-copy-$case_" script home_copy "$case_" "$programs/libinteg_kill_in_copy.so" mpiexec \
    "$programs/integ_sequence" "$build/libprof/tools/prof-dump" "$integ/home_copy_check.py" "$work/home-copy-$case_"
done
run missing-chunks env ASAN_OPTIONS="$shim_asan_options" \
  bash "$integ/missing_chunks.sh" "$build/libprof/src/libprof.so" mpiexec "$programs/integ_busy" \
  "$build/libprof/tools/prof-dump" "$analyze" "$integ/chunk_surgery.py" "$work/missing-chunks"
hang() {  # hang CASE: hang.sh's checks; under thread, its sanitizer reports alone
  local program=integ_hang status=0
  [[ $1 == *_fortran ]] && program=integ_hang_fortran
  script hang "$1" mpiexec "$programs/$program" "$build/libprof/tools/prof-dump" "$analyze" "$work/hang-$1" || status=$?
  # (Under thread the script's own checks cannot hold: TSan delivers the
  # job's SIGTERM only once a rank's thread reaches instrumented code, seconds
  # late, and its hook after each call keeps a fast wrapper's hand-over to
  # the general one from being a tail call, so a call's site is the
  # wrapper's. The shim's heartbeat thread runs beside the stuck calls all
  # the same.)
  [[ $kind == thread ]] || return $status
}
if [[ $kind == address ]]; then
  for case_ in deadlock_term deadlock_kill segv abort deadlock_term_fortran; do run "hang-$case_" hang "$case_"; done
else
  for case_ in deadlock_term deadlock_kill; do run "hang-$case_" hang "$case_"; done
fi
# (A report in a run whose status the check does not fix would pass it.)
reported=$(grep -rlE "ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer" "$work"/shim-* \
  "$work"/transparency-* "$work"/losses-* "$work"/home-copy-* "$work"/missing-chunks "$work"/hang-* || true)
if [[ -n $reported ]]; then
  echo "sanitize.sh: a report in $reported" >&2
  exit 1
fi
if [[ $kind == address ]]; then
  # The GUI's tests, on the traces tests/gui/CMakeLists.txt's fixtures record:
  # a run of the call-site program, and two runs of the comparison's program.
  record() {  # record DIR PROGRAM [NAME=VALUE]...: a 2-rank run under this build's shim
    local dir=$1 program=$2; shift 2
    rm -rf "$dir"
    env ASAN_OPTIONS="$shim_asan_options" PROF_OUTPUT="$dir" "$@" \
      mpiexec -n 2 "$build/bin/prof-run" "$program" < /dev/null
  }
  run record-callsites record "$work/callsites-trace" "$build/tests/shim/shim_callsites_c"
  run record-compare-a record "$work/compare-traces/a" "$build/tests/analyzer/analyzer_compare_runs" PROF_BCAST=native
  run record-compare-b record "$work/compare-traces/b" "$build/tests/analyzer/analyzer_compare_runs" PROF_BCAST=shm \
    COMPARE_SLOW_MS=200 COMPARE_EXTRA=1
  run gui-tests env QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$work/gui-config" \
    PROF_GUI_CALLSITES_TRACE="$work/callsites-trace" PROF_GUI_COMPARE_TRACES="$work/compare-traces" \
    "$build/tests/gui/gui_tests"
fi
echo "sanitize.sh: no $kind sanitizer report (logs in $work)"
