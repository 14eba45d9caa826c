# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/control_cli.sh: the GPU suite's section control_cli: `cudapool stats` and
# `top` as a user types them against a PyTorch process under the shim, the driver's figure beside
# nvidia-smi's (tests/gpu/control_cli.py, whose own PASS/FAIL lines show in the log). Sourced by
# tests/gpu/run.sh; not a script to run alone, and not where shared helpers live
# (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_control_cli() {
  if ! py_has torch; then
    fail control_cli "$PY cannot import torch"
    return
  fi
  local rc
  run control_cli 300 raw "$PY" "$HERE/control_cli.py" --shim "$SHIM" --python "$PY"
  rc=$?
  verdict control_cli $rc "$LOGS/control_cli.log" \
    "$(grep -m1 '^control_cli: ' "$LOGS/control_cli.log" | cut -c1-200)"
}
