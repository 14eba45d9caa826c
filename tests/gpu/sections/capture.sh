# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/capture.sh: the GPU suite's section capture: what the driver answers to
# cuMemAlloc_v2 and cuMemFree_v2 during stream captures (capture_rules.cpp: capture modes,
# interaction modes, threads), without the shim and under it with whole and expandable segments;
# the shim's answers (and the captures' fate) must read the same, RESULT line for RESULT line. Sourced by
# tests/gpu/run.sh (which sets the variables and runs test_capture when GPU_TESTS_ONLY names
# capture, or by default); not a script to run alone, and not where shared helpers live
# (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_capture() {
  have capture_rules || { fail capture_rules "not built"; return; }
  local mode tag rc rc_raw raw="$LOGS/capture_rules-raw.log"
  for mode in raw shim shim:expandable_segments:True shim:thread_cache:always; do
    tag=capture_rules-$(mode_tag "$mode")
    checked_run "$tag" 120 "$mode" "$(grep -c '^RESULT ' "$raw" 2>/dev/null) cases" \
      "$BIN/capture_rules"
    rc=$?
    [ "$mode" = raw ] && rc_raw=$rc
    [ $rc = 125 ] && continue
    [ "$mode" = raw ] || [ "$rc_raw" != 0 ] || same_results "$raw" "$LOGS/$tag.log" "$tag-same"
  done
}
