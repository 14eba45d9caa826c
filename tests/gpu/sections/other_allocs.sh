# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/other_allocs.sh: the GPU suite's section other_allocs: the allocation APIs the
# shim passes through (described below). Sourced by tests/gpu/run.sh (which sets the variables and
# runs test_other_allocs when GPU_TESTS_ONLY names other_allocs, or by default); not a script to run
# alone, and not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# The allocation APIs the shim passes through (managed, pitched, 3D, host, stream-ordered,
# arrays) around live pooled blocks: data checked under the shim and without it; the log must show
# each kind passed through and every cudaFree of a non-pooled pointer forwarded.
test_other_allocs() {
  in_modes other_allocs 120 '[0-9]* rounds of .*' \
    raw shim shim:reuse_fence:sync shim:thread_cache:always || return
  logs_ready other_allocs-log || return
  log_run other_allocs 10 "$BIN/other_allocs" 5
  local f action missing=""
  f=$(largest_log other_allocs)
  [ -n "$f" ] || return
  for action in alloc_managed alloc_pitch alloc_async alloc_host free_host free_unowned; do
    grep -q "\"action\":\"$action\"" "$f" || missing+="$action "
  done
  # 5 rounds: cudaMallocAsync twice and cudaMallocFromPoolAsync once each.
  local async_allocs
  async_allocs=$(grep -c '"action":"alloc_async"' "$f")
  [ "$async_allocs" = 15 ] || missing+="(alloc_async: $async_allocs, want 15) "
  if [ -z "$missing" ]; then
    pass other_allocs-logged "$(action_counts "$f")"
  else
    fail other_allocs-logged "no $missing event in $f"
  fi
}
