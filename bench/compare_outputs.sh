#!/usr/bin/env bash
# Checks that two prof-analyze binaries give byte-identical outputs when each
# output is asked for alone or in the combinations a user gives: the analysis
# computes only the figures the outputs written print (report.h,
# kFiguresNeeded), so every combination takes its own path through it, unlike
# compare_analyzer.sh's one run with every output.
# For each trace directory: the text report plain, with --wait-states, with
# --functions --callsites, with --ranks 0-1, with --no-per-rank (each with the
# default threads and -j 1); JSON alone on stdout; the Chrome export alone;
# the text with an OTF2 archive (its files compared too, the anchor file's
# random trace id aside, read by otf2-print); and
# --compare of the trace with the next one given (the last with the first):
# text, text with --wait-states, and JSON. The exit status and stderr are
# compared too. Exits 1 at the first difference (and keeps both outputs in a
# directory it names).
# Usage: bench/compare_outputs.sh OLD_PROF_ANALYZE NEW_PROF_ANALYZE TRACE_DIR...
# ANALYZE_ARGS (split on blanks) is passed to both, e.g. ANALYZE_ARGS="--window
# 1.5:1.6" (on private copies of the traces: a window writes the window index
# beside the trace; --compare is then skipped, as it takes no window).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: compare_outputs.sh OLD_PROF_ANALYZE NEW_PROF_ANALYZE TRACE_DIR..." >&2
  exit 2
fi
old=$1 new=$2
shift 2
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "compare_outputs.sh: $b is not an executable" >&2; exit 2; }
done
traces=("$@")
work=$(mktemp -d)
read -r -a extra <<< "${ANALYZE_ARGS:-}"

# run NAME ARGS...: both binaries with ARGS ({out} in an argument: a path of
# the binary's own), stdout and stderr kept, then compared.
run() {
  local name=$1
  shift
  for which in old new; do
    local bin=$old
    [ "$which" = new ] && bin=$new
    local args=()
    for a in "$@"; do args+=("${a//\{out\}/$work/$which}"); done
    rm -rf "$work/$which.otf2"
    set +e
    "$bin" "${args[@]}" -q --no-progress --no-index > "$work/$which.out" 2> "$work/$which.err"
    echo "exit $?" >> "$work/$which.err"
    set -e
  done
  for f in out err; do
    if ! cmp -s "$work/old.$f" "$work/new.$f"; then
      echo "DIFFERENT: $name: $f (outputs kept in $work)"
      exit 1
    fi
  done
  if [ -d "$work/old.otf2" ] || [ -d "$work/new.otf2" ]; then
    # (The anchor file traces.otf2 holds a trace id OTF2 draws at random:
    # it is compared as otf2-print reads it, every field but that id.)
    if ! diff -r --exclude=traces.otf2 "$work/old.otf2" "$work/new.otf2" > /dev/null ||
      ! cmp -s <(anchor_fields "$work/old.otf2") <(anchor_fields "$work/new.otf2"); then
      echo "DIFFERENT: $name: the OTF2 archive (outputs kept in $work)"
      exit 1
    fi
  fi
  echo "identical: $name"
}

# The OTF2 anchor file's fields as otf2-print reads them, the random trace id left out.
anchor_fields() {
  otf2-print -A "$1/traces.otf2" | grep -v '^Trace identifier'
}

for i in "${!traces[@]}"; do
  t=${traces[$i]}
  other=${traces[$(( (i + 1) % ${#traces[@]} ))]}
  tag="$t${ANALYZE_ARGS:+ ($ANALYZE_ARGS)}"
  for j in default 1; do
    jobs=()
    [ "$j" = default ] || jobs=(-j 1)
    run "$tag -j $j: text" "$t" "${jobs[@]}" "${extra[@]}"
    run "$tag -j $j: text --wait-states" "$t" "${jobs[@]}" "${extra[@]}" --wait-states
    run "$tag -j $j: text --functions --callsites" "$t" "${jobs[@]}" "${extra[@]}" --functions --callsites
    run "$tag -j $j: text --ranks 0-1" "$t" "${jobs[@]}" "${extra[@]}" --ranks 0-1
    run "$tag -j $j: text --no-per-rank" "$t" "${jobs[@]}" "${extra[@]}" --no-per-rank
  done
  run "$tag: JSON alone" "$t" "${extra[@]}" --json -
  run "$tag: Chrome export alone" "$t" "${extra[@]}" --chrome-trace -
  run "$tag: text and OTF2" "$t" "${extra[@]}" --otf2 "{out}.otf2"
  if [ ${#extra[@]} -eq 0 ]; then
    run "--compare $t $other: text" --compare "$t" "$other"
    run "--compare $t $other: text --wait-states" --compare "$t" "$other" --wait-states
    run "--compare $t $other: JSON" --compare "$t" "$other" --json -
  fi
done
rm -rf "$work"
exit 0
