#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/pair_instructions.sh: instructions per cached cuMemAlloc_v2+cuMemFree_v2 pair, through the
# fake driver (tests/fakecuda), under callgrind: the floor (libcudapool_floor.so: the shim's
# interposition path to hooks that hand back a fixed pointer), the floor that also asks for the
# context id (libcudapool_floor_ctx.so), and the shim (default settings; thread_cache:always).
# Each at two pair counts, the difference divided by the difference of the counts (start-up
# cancels); then, for the shim, the functions that take the pair's instructions (callgrind's
# inclusive counts per pair). Instructions, not time (the GPU benchmark, run_gpu_bench.sh's floor
# table, has the time). A benchmark, never a test.
#
#   ninja -C build cudapool cudapool_floor cudapool_floor_ctx pair_instructions fakecuda
#   bench/pair_instructions.sh [BUILD_DIR]
#
# CUDAPOOL_LIB_BASELINE=PATH adds a row for another build of the shim (an earlier commit).
set -euo pipefail

build=${1:-build}
bin=$build/bench/pair_instructions
fake=$build/tests/fakecuda
command -v valgrind >/dev/null || { echo "pair_instructions: needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
for f in "$bin" "$fake/libcuda.so.1" "$build/shim/libcudapool.so" "$build/shim/libcudapool_floor.so" \
  "$build/shim/libcudapool_floor_ctx.so"; do
  [ -e "$f" ] || { echo "pair_instructions: $f is missing (build it: see the header)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=20000
large=120000

# instructions NAME LIB CONF PAIRS: total instructions of one run (its callgrind file kept).
instructions() {
  env -u CUDAPOOL_LOG LD_LIBRARY_PATH="$fake" LD_PRELOAD="$2" CUDAPOOL_CONF="$3" \
    valgrind --tool=callgrind --callgrind-out-file="$work/$1-$4.out" "$bin" "$4" >/dev/null 2>&1
  sed -n 's/^summary: //p' "$work/$1-$4.out"
}

printf '| library | settings | instructions per pair | beyond the floor with the context id |\n| --- | --- | --- | --- |\n'
declare -A per
while read -r name lib conf; do
  [ "$conf" = - ] && conf=""
  path=$build/shim/$lib
  if [ "$name" = baseline ]; then
    [ -n "${CUDAPOOL_LIB_BASELINE:-}" ] || continue
    path=$CUDAPOOL_LIB_BASELINE
    lib="baseline ($path)"
  fi
  a=$(instructions "$name" "$path" "$conf" "$small")
  b=$(instructions "$name" "$path" "$conf" "$large")
  per[$name]=$(((b - a) / (large - small)))
  beyond=-
  [ -n "${per[floorctx]:-}" ] && [ "$name" != floorctx ] && beyond=$((per[$name] - per[floorctx]))
  printf '| %s | %s | %s | %s |\n' "$lib" "${conf:-defaults}" "${per[$name]}" "$beyond"
done <<'LIST'
floor libcudapool_floor.so -
floorctx libcudapool_floor_ctx.so -
shim libcudapool.so -
always libcudapool.so thread_cache:always
baseline - -
LIST
echo
echo "The fake's cuCtxGetId is no model of the driver's cost (it counts calls in a map under a lock:"
echo "floorctx minus floor); the last column is the shim's own work on the pair."

# The shim's pair, function by function (inclusive: with what each calls), per pair of the large
# run; functions called fewer than once per pair left out.
echo
echo "The shim's pair (defaults): inclusive instructions per pair of the shim's functions (and the"
echo "fake driver's, marked) that run at least once a pair:"
callgrind_annotate --inclusive=yes --threshold=100 "$work/shim-$large.out" 2>/dev/null |
  awk -v n="$large" '/libcudapool\.so|libcuda\.so\.1/ {
      v = $1; gsub(",", "", v); if (v / n < 1) next
      # (callgrind names the hooks by the fake's object too: both define cuMemAlloc_v2)
      fake = $0 ~ /fakecuda::|cuCtxGetId|cuGetProcAddress/ ? " (fake driver)" : ""
      $1 = ""; sub(/^ +/, ""); sub(/^\( *[0-9.]+%\) +/, ""); sub(/^\?\?\?:/, ""); sub(/ \[[^]]*\]$/, "")
      printf "  %7.1f  %s%s\n", v / n, substr($0, 1, 120), fake }' | head -n 30
