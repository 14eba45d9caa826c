#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/cudart_calls.sh: which driver entry points a static-cudart cudaMalloc+cudaFree pair calls,
# counted with cuda-gdb breakpoints on every exported cu* function (libcuda's, and the shim's
# hooks when it is preloaded), for 3 pairs after warm-up (bench/cudart_calls.cu). A diagnostic on
# a GPU machine: it explains the time cudart adds around the shim's hooks. Prints, without and with
# the shim, the number of calls per function between the markers.
#
#   CUDAPOOL_LIB=path/libcudapool.so bench/cudart_calls.sh
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
WORK="${WORK:-/tmp/cudapool-cudart-calls}"
NVCC="${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}"
GDB="${CUDA_GDB:-cuda-gdb}"
mkdir -p "$WORK"
"$NVCC" -O2 -arch="${CUDA_ARCH:-sm_90}" -o "$WORK/cudart_calls" "$REPO/bench/cudart_calls.cu" || exit 1

# count LABEL [PRELOAD]: breakpoints on ^cu[A-Z] set at the first marker, hits listed until the
# second marker.
count() {
  local label=$1 preload=${2:-}
  {
    echo "set pagination off"
    echo "set confirm off"
    echo "set breakpoint pending on"
    [ -n "$preload" ] && echo "set environment LD_PRELOAD=$preload"
    echo "break cudapool_marker_begin"
    echo "run"
    echo "rbreak ^cu[A-Z]"
    echo "break cudapool_marker_end"
    for _ in $(seq 400); do echo "continue"; done
  } >"$WORK/$label.gdb"
  timeout 240 "$GDB" -batch -x "$WORK/$label.gdb" "$WORK/cudart_calls" >"$WORK/$label.out" 2>&1
  echo "== $label: calls during 3 cudaMalloc+cudaFree pairs (function, object, count)"
  awk '/hit Breakpoint [0-9.]+, / && /cudapool_marker_end/ { exit }
       /hit Breakpoint [0-9.]+, / && started { fn = ""; obj = "";
         for (i = 1; i <= NF; i++) { if ($i == "in") fn = $(i + 1); if ($i == "from") obj = $(i + 1) }
         n[fn " " obj]++ }
       /hit Breakpoint [0-9.]+, / && /cudapool_marker_begin/ { started = 1 }
       END { for (k in n) print k, n[k] }' "$WORK/$label.out" | sort
  echo "-- in order:"
  awk '/hit Breakpoint [0-9.]+, / && /cudapool_marker_end/ { exit }
       /hit Breakpoint [0-9.]+, / && started { for (i = 1; i <= NF; i++) if ($i == "in") printf "%s ", $(i + 1) }
       /hit Breakpoint [0-9.]+, / && /cudapool_marker_begin/ { started = 1 }
       END { print "" }' "$WORK/$label.out"
}

count no-shim
[ -f "$SHIM" ] && count shim "$SHIM"
