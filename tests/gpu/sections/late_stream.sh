# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/late_stream.sh: the GPU suite's section late_stream: a freed block handed out
# again to a stream made after the free (or to the per-thread stream), two sizes, four modes.
# Sourced by tests/gpu/run.sh (which sets the variables and runs test_late_stream when
# GPU_TESTS_ONLY names late_stream, or by default); not a script to run alone, and not where shared
# helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# A block freed while a legacy-stream kernel still reads it, handed out again and written on a
# stream made after the free (non-blocking), or on the per-thread default stream (control).
test_late_stream() {
  have late_stream || { fail late_stream "not built"; return; }
  local size mode kind tag rc log
  for size in 4096 67108864; do
    for kind in nonblocking per-thread; do
      for mode in shim shim:thread_cache:always shim:reuse_fence:none raw; do
        tag="late_stream-$size-$kind-$(mode_tag "$mode")"
        local -a args=(--size "$size")
        [ "$kind" = per-thread ] && args+=(--per-thread)
        # The pool must hand X out again for the case to mean anything. Not with thread caches:
        # the new non-blocking stream ends their keeping, and X goes back to the pool fenced.
        [ "$mode" = shim ] || [ "$mode" = shim:reuse_fence:none ] && args+=(--expect-reuse)
        run "$tag" 60 "$mode" "$BIN/late_stream" "${args[@]}"
        rc=$?
        log="$LOGS/$tag.log"
        [ "$mode" = raw ] || preload_check "$tag" $rc "$log"
        if [ $rc = 3 ] && [ "$mode" = shim:reuse_fence:none ]; then
          N_UNSAFE=$((N_UNSAFE + 1))
          echo "EXPECTED-UNSAFE $tag: $(grep -o 'late_stream: size.*' "$log" | head -n 1)"
        else
          verdict "$tag" $rc "$log" "$(grep -o 'late_stream: size.*' "$log" | head -n 1)"
        fi
      done
    done
  done
}
