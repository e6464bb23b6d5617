# shellcheck shell=bash
# Sourced by the scripts that compare two prof-analyze builds on the same
# traces (compare_analyzer.sh, compare_instructions.sh). two_builds_args
# SCRIPT "$@" checks their arguments and sets `old`, `new` and `traces`.
two_builds_args() {
  local script=$1
  shift
  if [ $# -lt 3 ]; then
    echo "usage: $script OLD_PROF_ANALYZE NEW_PROF_ANALYZE TRACE_DIR..." >&2
    exit 2
  fi
  old=$1 new=$2
  shift 2
  # shellcheck disable=SC2034  # (read by the sourcing script)
  traces=("$@")
  local b
  for b in "$old" "$new"; do
    [ -x "$b" ] || { echo "$script: $b is not an executable" >&2; exit 2; }
  done
}
