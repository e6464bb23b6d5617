# shellcheck shell=bash
# Sourced by the benchmarks that keep their traces between runs
# (scale_targets.sh, speedup_since.sh, mpi_job.sh). make_trace NAME COMMAND...
# runs the command that writes $work/NAME unless $work/NAME.made says an
# earlier run finished it: a trace is complete once its rank files and the
# marker written after them exist, so an interrupted one is made again.
# machine_line ROUNDS prints the line that heads their figures: the cores, the
# CPU (a VM's host may change from one day to the next, and its figures with
# it), the clock its core runs at now (bench/core_clock, where $build has it:
# on one day the same VM's core ran at 3.3 to 4.1 GHz, spells of an hour or
# more, and every wall with it), the latency of a load from the shared cache
# (bench/cache_latency: on a shared host other tenants evict it in spells of
# seconds, and the analysis's speed an event falls by a third with it), the load
# and the time.
# shellcheck disable=SC2154  # (work, build: set by the sourcing script)
make_trace() {
  local name=$1; shift
  [[ -e $work/$name.made ]] && return
  rm -rf "${work:?}/$name"
  "$@" > /dev/null
  touch "$work/$name.made"
}

machine_line() {
  local cpu clock="" cache=""
  cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)
  # (2*10^8 steps a chain: about 0.4 s.)
  if [[ -x ${build:-}/bench/core_clock ]]; then clock=$("$build/bench/core_clock" 200000000 2>/dev/null || true); fi
  # (Sampled for 1 s.)
  if [[ -x ${build:-}/bench/cache_latency ]]; then cache=$("$build/bench/cache_latency" 4096 1 2>/dev/null || true); fi
  echo "machine: $(nproc) cores${cpu:+ ($cpu)}${clock:+, core clock: $clock}${cache:+, shared cache: $cache}, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC'), $1 rounds"
}
