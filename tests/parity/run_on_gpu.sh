#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/parity/run_on_gpu.sh: the one command that runs the parity harness on the GPU machine.
#
#   OUT=/some/dir tests/parity/run_on_gpu.sh [run_parity.py options, e.g. --cases a,b]
#
# Run from the repo root (it changes there itself). Needs python3 with torch (CUDA), ninja and
# nvcc; cudapool is $CUDAPOOL (default scripts/cudapool). Writes $OUT/parity.log,
# $OUT/parity-table.md and $OUT/parity-results.json. Exit status: run_parity.py's (0 = all cases
# equal, 1 = some differ or failed, 2 = usage). See docs/parity.md.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
if [ -z "${OUT:-}" ]; then
  OUT=tests/parity/out
  echo "run_on_gpu: OUT is not set; writing to $OUT" >&2
fi
mkdir -p "$OUT" || exit 2
PY="${PYTHON:-python3}"
# Stop starting new cases after this many seconds, so a slow machine still returns results
# within a 10-minute command (the cases not run are reported as skipped).
BUDGET="${PARITY_BUDGET_S:-500}"

{
  echo "run_on_gpu: $(date -u +%Y-%m-%dT%H:%M:%SZ) host $(uname -n)" \
    "repo $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 |
      sed 's/^/run_on_gpu: gpu: /'
  fi
  echo "run_on_gpu: $("$PY" --version 2>&1); CUDAPOOL=${CUDAPOOL:-scripts/cudapool}"
  # The traces are committed; make them only if some are missing, and never for a cases file of
  # someone else's (--cases-file F: its traces are F's).
  cases_file=tests/parity/cases.json
  prev=""
  for a in "$@"; do
    [ "$prev" = --cases-file ] && cases_file=$a
    case $a in --cases-file=*) cases_file=${a#--cases-file=} ;; esac
    prev=$a
  done
  if [ "$cases_file" = tests/parity/cases.json ]; then
    "$PY" tests/parity/make_traces.py --if-missing || exit 2
  fi
  cp "$cases_file" "$OUT/cases.json" 2>/dev/null
  "$PY" tests/parity/run_parity.py --out "$OUT" --budget-s "$BUDGET" "$@"
} 2>&1 | tee "$OUT/parity.log"
exit "${PIPESTATUS[0]}"
