# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/alloc_basic.sh: the GPU suite's section alloc_basic: the programs
# alloc_basic_static, _shared and _ptds (three cudart builds): checked alloc/free pairs under the
# shim and without it, NVML showing the memory kept cached under the shim, and CUDAPOOL_DISABLE=1
# passing everything through. Sourced by tests/gpu/run.sh (which sets the variables and runs
# test_alloc_basic when GPU_TESTS_ONLY names alloc_basic, or by default); not a script to run alone,
# and not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_alloc_basic() {
  local v rc log c
  for v in static shared ptds; do
    have alloc_basic_$v || { fail "alloc_basic_$v" "not built"; continue; }
    run "alloc_basic_$v-shim" 120 shim "$BIN/alloc_basic_$v" 10000
    rc=$?
    log="$LOGS/alloc_basic_$v-shim.log"
    preload_check "alloc_basic_$v-shim" $rc "$log"
    verdict "alloc_basic_$v-shim" $rc "$log" "10000 checked pairs per size; bare pairs: $(bare_ns "$log")"
    c=$(sed -n 's/^cached: //p' "$log" | head -1)
    case $c in
      yes*) pass "alloc_basic_$v-cached" "NVML: $(grep '^NVML used' "$log" | sed 's/.*(//; s/)//')" ;;
      no*) fail "alloc_basic_$v-cached" "device memory went back to the driver after the frees: the shim did not serve these allocations ($(grep '^NVML used' "$log"))" ;;
      *) [ $rc = 125 ] || info "alloc_basic_$v-cached: not measured (${c:-no output})" ;;
    esac
    run "alloc_basic_$v-raw" 120 raw "$BIN/alloc_basic_$v" 2000
    rc=$?
    log="$LOGS/alloc_basic_$v-raw.log"
    verdict "alloc_basic_$v-raw" $rc "$log" "2000 pairs per size, no shim; bare pairs: $(bare_ns "$log")"
    grep -q '^cached: yes' "$log" && info "alloc_basic_$v-raw: NVML shows memory held after the frees without the shim (measurement noise?)"
  done
  if have alloc_basic_static; then
    run alloc_basic_static-disable 120 disable "$BIN/alloc_basic_static" 2000
    rc=$?
    log="$LOGS/alloc_basic_static-disable.log"
    preload_check alloc_basic_static-disable $rc "$log"
    verdict alloc_basic_static-disable $rc "$log" "CUDAPOOL_DISABLE=1; bare pairs: $(bare_ns "$log")"
    if grep -q '^cached: yes' "$log"; then
      fail alloc_basic_static-disable-passthrough "memory stays held after the frees with CUDAPOOL_DISABLE=1"
    elif grep -q '^cached: no' "$log"; then
      pass alloc_basic_static-disable-passthrough "nothing cached with CUDAPOOL_DISABLE=1"
    fi
  fi
}
