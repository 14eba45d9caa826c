# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/cross_stream.sh: the GPU suite's section cross_stream: the programs
# cross_stream and cross_stream_ptds: blocks freed while a kernel on another stream still uses them,
# under reuse_fence auto (explicit and default; frees must stay fast) and sync, with blocking
# streams only, under none (data loss reported as EXPECTED-UNSAFE) and without the shim. Sourced by
# tests/gpu/run.sh (which sets the variables and runs test_cross_stream when GPU_TESTS_ONLY names
# cross_stream, or by default); not a script to run alone, and not where shared helpers live
# (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_cross_stream() {
  local bin rc log fast
  for bin in cross_stream cross_stream_ptds; do
    have $bin || { fail "$bin" "not built"; continue; }
    # auto (explicit and default) and sync must be safe; auto must also free fast.
    for mode in shim:reuse_fence:auto shim shim:reuse_fence:sync; do
      local tag=${mode#shim}
      tag=${tag#:reuse_fence:}
      [ -z "$tag" ] && tag=default
      local -a args=()
      [ "$tag" = auto ] || [ "$tag" = default ] && args=(--expect-fast-free)
      run "$bin-$tag" 60 "$mode" "$BIN/$bin" "${args[@]}"
      rc=$?
      log="$LOGS/$bin-$tag.log"
      preload_check "$bin-$tag" $rc "$log"
      fast=$(awk '{ for (i = 1; i < NF; i++) if ($i == "free") { v = $(i + 1) + 0; if (v > m) m = v } } END { printf "%.3f", m }' "$log")
      verdict "$bin-$tag" $rc "$log" "$(grep -o 'new==X in [0-9]*' "$log" | head -1) of 12 cases, old data survived in all, slowest cudaFree $fast ms"
    done
    # No non-blocking stream in the process: auto may skip its barrier, and must stay safe.
    run "$bin-blocking-only" 60 shim "$BIN/$bin" --blocking-only --expect-fast-free
    rc=$?
    log="$LOGS/$bin-blocking-only.log"
    preload_check "$bin-blocking-only" $rc "$log"
    verdict "$bin-blocking-only" $rc "$log" "blocking and per-thread streams only: $(grep -o 'new==X in [0-9]*' "$log" | head -1) of 8 cases, old data survived in all"
    # none may be unsafe: data loss is reported, not failed.
    none_run "$bin-none" 60 12 "reuse_fence:none is documented as unsafe" "$BIN/$bin"
    # Without the shim: the real cudaFree waits for the kernel.
    run "$bin-raw" 60 raw "$BIN/$bin"
    rc=$?
    log="$LOGS/$bin-raw.log"
    fast=$(awk '{ for (i = 1; i < NF; i++) if ($i == "free") { v = $(i + 1) + 0; if (m == "" || v < m) m = v } } END { printf "%.1f", m }' "$log")
    verdict "$bin-raw" $rc "$log" "without the shim (fastest cudaFree $fast ms: the driver waits)"
  done
}
