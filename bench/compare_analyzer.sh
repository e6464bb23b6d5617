#!/usr/bin/env bash
# Checks that two prof-analyze binaries give byte-identical reports: for each
# trace directory, the text report (with --functions), the JSON report and the
# Chrome export of OLD and NEW are compared with cmp, once with the default
# worker threads and once with -j 1 (docs/design/analysis-engine.md: performance
# changes keep the reports byte-identical).
# Exits 1 at the first difference (and keeps both outputs in a directory it names).
# Usage: bench/compare_analyzer.sh OLD_PROF_ANALYZE NEW_PROF_ANALYZE TRACE_DIR...
# ANALYZE_ARGS (split on blanks) is passed to both, e.g.
# ANALYZE_ARGS="--window 1.575307:1.585307" compares one window's reports.
set -euo pipefail
# shellcheck source=bench/two_builds.sh
source "$(dirname "$0")/two_builds.sh"
two_builds_args compare_analyzer.sh "$@"
work=$(mktemp -d)

for trace in "${traces[@]}"; do
  for threads in default 1; do
    jobs=()
    [ "$threads" = default ] || jobs=(-j "$threads")
    read -r -a extra <<< "${ANALYZE_ARGS:-}"
    for which in old new; do
      bin=$old
      [ "$which" = new ] && bin=$new
      # The exit status is compared too: warnings and damage must read the same.
      set +e
      "$bin" "$trace" "${jobs[@]}" "${extra[@]}" --functions -o "$work/$which.txt" --json "$work/$which.json" \
        --chrome-trace "$work/$which.chrome.json" -q --no-progress 2> "$work/$which.err"
      echo "exit $?" >> "$work/$which.err"
      set -e
    done
    for f in txt json chrome.json err; do
      if ! cmp -s "$work/old.$f" "$work/new.$f"; then
        echo "DIFFERENT: $trace (threads: $threads): $f (outputs kept in $work)"
        exit 1
      fi
    done
    echo "identical: $trace (threads: $threads${ANALYZE_ARGS:+, $ANALYZE_ARGS}): text, JSON, Chrome export, exit status"
  done
done
rm -rf "$work"
exit 0
