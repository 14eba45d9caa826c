# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/fence_shortcuts.sh: the GPU suite's section fence_shortcuts: the programs
# fence_shortcuts and fence_shortcuts_ptds: the shortcuts of reuse_fence:auto (described below),
# under the shim, under none and without the shim. Sourced by tests/gpu/run.sh (which sets the
# variables and runs test_fence_shortcuts when GPU_TESTS_ONLY names fence_shortcuts, or by default);
# not a script to run alone, and not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# The shortcuts of reuse_fence:auto (fence_shortcuts.cu): a block whose last work was joined into
# the legacy stream, or ran on the legacy or a blocking stream while an idle non-blocking stream
# exists, is reused at once and stays safe for new work on any stream; unjoined work is waited
# for. reuse_fence:none shows the cases can fail.
test_fence_shortcuts() {
  local bin rc log
  for bin in fence_shortcuts fence_shortcuts_ptds; do
    have $bin || { fail "$bin" "not built"; continue; }
    run "$bin" 90 shim "$BIN/$bin" --expect-reuse
    rc=$?
    log="$LOGS/$bin.log"
    preload_check "$bin" $rc "$log"
    verdict "$bin" $rc "$log" "$(grep -o 'new==X in [0-9]*' "$log" | head -1) of 32 cases (24 shortcut cases reused X), old data survived in all"
    none_run "$bin-none" 90 32 "the hazards are real" "$BIN/$bin"
    run "$bin-raw" 120 raw "$BIN/$bin"
    rc=$?
    verdict "$bin-raw" $rc "$LOGS/$bin-raw.log" "without the shim"
  done
}
