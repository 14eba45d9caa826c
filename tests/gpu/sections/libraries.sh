# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/libraries.sh: the GPU suite's section libraries: cuBLAS, cuFFT, Thrust and CUB
# under the shim (described below). Sourced by tests/gpu/run.sh (which sets the variables and runs
# test_libraries when GPU_TESTS_ONLY names libraries, or by default); not a script to run alone, and
# not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# cuBLAS and cuFFT (each with its own static cudart) and Thrust and CUB (the program's cudart):
# results checked against the CPU under the shim (default, sync) and without it; then a logged run
# whose log must hold more alloc events than the program's own cudaMalloc calls (the libraries'
# workspace allocations reached the pool).
test_libraries() {
  in_modes libraries 180 '[0-9]* rounds of .*' raw shim shim:reuse_fence:sync || return
  logs_ready libraries-log || return
  log_run libraries 1 "$BIN/libraries" 10
  local f direct allocs
  f=$(largest_log libraries)
  direct=$(grep -o 'direct cudaMalloc calls [0-9]*' "$LOGS/log-libraries.log" | grep -o '[0-9]*$')
  if [ -n "$f" ] && [ -n "$direct" ]; then
    allocs=$(grep -c '"action":"alloc"' "$f")
    if [ "$allocs" -gt "$direct" ]; then
      pass libraries-pooled "$allocs alloc events in the log, $direct of them the program's own cudaMalloc calls: the libraries' allocations reached the pool ($(action_counts "$f"))"
    else
      fail libraries-pooled "$allocs alloc events in the log, not more than the program's own $direct cudaMalloc calls"
    fi
  else
    fail libraries-pooled "no log or no count of direct cudaMalloc calls"
  fi
}
