# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/errors.sh: the GPU suite's section errors: the programs errors, odd_uses and
# ipc_check: error paths and legal but unusual uses, whose answers (RESULT lines) must read as
# without the shim; the explained out-of-memory; IPC exports. Sourced by tests/gpu/run.sh (which
# sets the variables and runs test_errors when GPU_TESTS_ONLY names errors, or by default); not a
# script to run alone, and not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_errors() {
  have errors || { fail errors "not built"; return; }
  local rc_raw rc_shim rc_tc raw="$LOGS/errors-raw.log" shim="$LOGS/errors-shim.log"
  local tc="$LOGS/errors-tc.log"
  checked_run errors-raw 180 raw "every check passes without the shim" "$BIN/errors"
  rc_raw=$?
  checked_run errors-shim 180 shim "every check passes under the shim" "$BIN/errors"
  rc_shim=$?
  # The same with thread caches forced on (the program uses the legacy stream only until its
  # graph and fork cases).
  checked_run errors-tc 180 shim:thread_cache:always "every check passes under the shim with thread_cache:always" \
    "$BIN/errors"
  rc_tc=$?
  if [ $rc_raw != 125 ]; then
    [ $rc_shim = 125 ] || same_results "$raw" "$shim" errors-same
    [ $rc_tc = 125 ] || same_results "$raw" "$tc" errors-tc-same
  fi
  # The device filled with 4 GiB chunks: the shim explains the out-of-memory it answered.
  if [ $rc_shim != 125 ]; then
    if grep -q 'cudapool: out of memory on device 0: tried to allocate 4.00 GiB' "$shim" &&
      grep -q 'cudapool:   why: ' "$shim"; then
      pass errors-oom-explained "$(grep -m1 'cudapool:   why: ' "$shim" | cut -c1-160)"
    else
      fail errors-oom-explained "no explanation of the 4 GiB out-of-memory in $shim"
    fi
  fi
  # Legal but unusual uses (no current context, cudaFreeAsync of a cudaMalloc block, relaxed
  # capture, a host function, a freed pointer's range and attributes, 200000 live blocks): the
  # same answers as without the shim.
  if have odd_uses; then
    local m tag
    for m in raw shim shim:thread_cache:always shim:expandable_segments:True; do
      tag=odd_uses-$(mode_tag "$m")
      checked_run "$tag" 120 "$m" "every check passes" "$BIN/odd_uses"
      [ $? = 125 ] || [ "$m" = raw ] || same_results "$LOGS/odd_uses-raw.log" "$LOGS/$tag.log" "$tag-same"
    done
  else
    fail odd_uses "not built"
  fi
  # IPC: an export that succeeds must show the importing process the exporter's bytes; under the
  # shim a block inside a segment (the second of two 512 B blocks) must be refused.
  in_modes ipc_check 120 'ipc_check: [0-9]+ of 3 exported.*' raw shim shim:expandable_segments:True ||
    return
  if grep -q 'second_512B: export refused' "$LOGS/ipc_check-default.log"; then
    pass ipc_check-refused "under the shim the block inside a segment was not exported"
  else
    fail ipc_check-refused "under the shim the block inside a segment was exported: $(grep 'second_512B' "$LOGS/ipc_check-default.log")"
  fi
}
