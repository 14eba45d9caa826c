# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/contexts.sh: the GPU suite's section contexts: the programs contexts and
# reset_memory: contexts the program makes and destroys, and 270 cudaDeviceReset calls in a row
# (described below). Sourced by tests/gpu/run.sh (which sets the variables and runs test_contexts
# when GPU_TESTS_ONLY names contexts, or by default); not a script to run alone, and not where
# shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# Contexts the program makes itself (driver API): two beside the primary one, destroyed with
# blocks live and cached, a block of a destroyed context freed, a new context, then (under the
# shim's defaults and with expandable segments) 270 contexts one after another, more than the
# shim's 256 pool slots; about 180 ms each; and 270 cudaDeviceReset calls in a row (reset_memory). Not 256 contexts alive at once: an H200 holds about
# 100 (measured: cuCtxCreate ran out of memory at the 101st). Checked by data; the driver's answers
# must read the same with the shim.
test_contexts() {
  have contexts || { fail contexts "not built"; return; }
  local detail='contexts: [0-9]+ failed checks|INFO cycles .*|INFO alive .*|INFO memory_back .*'
  local mode tag rc rc_raw args log raw="$LOGS/contexts-raw.log"
  for mode in raw shim shim:expandable_segments:True shim:thread_cache:always shim:reuse_fence:sync; do
    tag=contexts-$(mode_tag "$mode")
    case $mode in
      shim | shim:expandable*) args=(270 0) ;;
      *) args=(20 0 500) ;;
    esac
    log="$LOGS/$tag.log"
    checked_run "$tag" 240 "$mode" "" "$BIN/contexts" "${args[@]}"
    rc=$?
    [ "$mode" = raw ] && rc_raw=$rc
    [ $rc = 125 ] && continue
    info "$tag: $(grep -oE "$detail" "$log" | paste -sd ';' | sed 's/;/; /g')"
    [ "$mode" = raw ] || [ "$rc_raw" = 125 ] || same_results "$raw" "$log" "$tag-same"
  done
  # cudart's cudaDeviceReset (a path no hook sees) 270 times, each bringing a new context.
  have reset_memory || { fail reset_memory "not built"; return; }
  for mode in shim shim:expandable_segments:True; do
    tag=reset_memory-270-$(mode_tag "$mode")
    checked_run "$tag" 180 "$mode" "" "$BIN/reset_memory" 270
    info "$tag: $(grep -oE 'reset_memory: [0-9]+ resets.*' "$LOGS/$tag.log")"
  done
}
