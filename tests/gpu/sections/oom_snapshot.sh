# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/oom_snapshot.sh: the GPU suite's section oom_snapshot: CUDAPOOL_OOM_SNAPSHOT
# under PyTorch 2.11 (its cache off), the snapshot read back and drawn by torch.cuda._memory_viz
# (tests/gpu/oom_snapshot.py, whose own PASS/FAIL lines show in the log). Sourced by
# tests/gpu/run.sh (which sets the variables and runs test_oom_snapshot when GPU_TESTS_ONLY names
# oom_snapshot, or by default); not a script to run alone, and not where shared helpers live
# (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_oom_snapshot() {
  if ! py_has torch; then
    fail oom_snapshot "$PY cannot import torch"
    return
  fi
  local rc
  # The script runs its PyTorch children under the shim itself (LD_PRELOAD, the variables).
  run oom_snapshot 600 raw "$PY" "$HERE/oom_snapshot.py" --shim "$SHIM" --python "$PY" \
    --keep "$WORK/oom_snapshot"
  rc=$?
  verdict oom_snapshot $rc "$LOGS/oom_snapshot.log" \
    "$(grep -m1 '^oom_snapshot: ' "$LOGS/oom_snapshot.log" | cut -c1-200)"
}
