#!/usr/bin/env bash
# Every MPI_ function libmpich.so exports must be defined by libprof.so (the
# generator wraps from one list; this catches a function it misses).
# Usage: check_wrapper_coverage.sh LIBMPICH LIBPROF
set -euo pipefail
# Functions only (T or W); MPI_F_STATUS_IGNORE and the like are data.
mpich=$(nm -D --defined-only "$1" | awk '($2 == "T" || $2 == "W") && $3 ~ /^MPI_/ {print $3}' | sort -u)
prof=$(nm -D --defined-only "$2" | awk '$2 == "T" && $3 ~ /^MPI_/ {print $3}' | sort -u)
missing=$(comm -23 <(echo "$mpich") <(echo "$prof"))
n_mpich=$(echo "$mpich" | wc -l)
n_prof=$(echo "$prof" | wc -l)
echo "libmpich exports $n_mpich MPI_ functions; libprof defines $n_prof"
if [ -n "$missing" ]; then
  echo "not wrapped:"; echo "$missing"
  exit 1
fi
