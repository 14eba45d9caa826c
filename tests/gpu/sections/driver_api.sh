# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/driver_api.sh: the GPU suite's section driver_api: cuMemAlloc/cuMemFree pairs
# under the shim (the memory kept cached, by NVML) and without it. Sourced by tests/gpu/run.sh
# (which sets the variables and runs test_driver_api when GPU_TESTS_ONLY names driver_api, or by
# default); not a script to run alone, and not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_driver_api() {
  have driver_api || { fail driver_api "not built"; return; }
  local rc log c
  run driver_api-shim 120 shim "$BIN/driver_api" 10000
  rc=$?
  log="$LOGS/driver_api-shim.log"
  preload_check driver_api-shim $rc "$log"
  verdict driver_api-shim $rc "$log" "10000 checked pairs per size; bare pairs: $(bare_ns "$log")"
  c=$(sed -n 's/^cached: //p' "$log" | head -1)
  case $c in
    yes*) pass driver_api-cached "NVML: $(grep '^NVML used' "$log" | sed 's/.*(//; s/)//')" ;;
    no*) fail driver_api-cached "device memory went back to the driver: cuMemAlloc/cuMemFree were not served by the shim" ;;
    *) [ $rc = 125 ] || info "driver_api-cached: not measured (${c:-no output})" ;;
  esac
  run driver_api-raw 120 raw "$BIN/driver_api" 2000
  rc=$?
  log="$LOGS/driver_api-raw.log"
  verdict driver_api-raw $rc "$log" "no shim; bare pairs: $(bare_ns "$log")"
}
