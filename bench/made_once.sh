# shellcheck shell=bash
# Sourced by the benchmarks that keep their traces between runs
# (scale_targets.sh, speedup_since.sh). make_trace NAME COMMAND... runs the
# command that writes $work/NAME unless $work/NAME.made says an earlier run
# finished it: a trace is complete once its rank files and the marker written
# after them exist, so an interrupted one is made again.
# shellcheck disable=SC2154  # (work: set by the sourcing script)
make_trace() {
  local name=$1; shift
  [[ -e $work/$name.made ]] && return
  rm -rf "${work:?}/$name"
  "$@" > /dev/null
  touch "$work/$name.made"
}
