# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/torch.sh: the GPU suite's section torch: torch_train.py's 50 losses
# bit-identical with and without the shim (PyTorch's cache off), the shim under PyTorch's own cache,
# and CUDA graph capture (torch_graph.py) with and without PyTorch's cache. Sourced by
# tests/gpu/run.sh (which sets the variables and runs test_torch when GPU_TESTS_ONLY names torch, or
# by default); not a script to run alone, and not where shared helpers live
# (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_torch() {
  if ! py_has torch; then
    fail torch "$PY cannot import torch"
    return
  fi
  local rc a
  export CUBLAS_WORKSPACE_CONFIG=:4096:8
  checked_run torch_train-raw-nocache 180 raw "no shim, PyTorch cache off" \
    env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_train.py"
  checked_run torch_train-shim-nocache 180 shim "shim, PyTorch cache off" \
    env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_train.py"
  a="$LOGS/torch_train-raw-nocache.log"
  same_losses torch_train-bitwise "$a" "$LOGS/torch_train-shim-nocache.log"
  # PyTorch's own cache on top of the shim must work too; the losses are compared for information.
  checked_run torch_train-shim-cache 180 shim "shim under PyTorch's own caching allocator" \
    "$PY" "$HERE/torch_train.py"
  if cmp -s <(grep -E '^(loss|params) ' "$a") <(grep -E '^(loss|params) ' "$LOGS/torch_train-shim-cache.log"); then
    info "torch_train: the run with PyTorch's cache on gives the same bits"
  else
    info "torch_train: the run with PyTorch's cache on gives other bits (not a failure)"
  fi

  checked_run torch_graph-raw-cache 180 raw "plain PyTorch (reference)" "$PY" "$HERE/torch_graph.py"
  checked_run torch_graph-shim-cache 180 shim "PyTorch cache on, shim below: captured, 10 replays correct" \
    "$PY" "$HERE/torch_graph.py"
  local rc_raw
  run torch_graph-raw-nocache 180 raw env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_graph.py"
  rc_raw=$?
  info "torch_graph-raw-nocache: exit $rc_raw ($(grep -m1 -E 'capture refused|torch_graph: (ok|FAILED)' "$LOGS/torch_graph-raw-nocache.log" | cut -c1-200))"
  run torch_graph-shim-nocache 180 shim env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_graph.py"
  rc=$?
  preload_check torch_graph-shim-nocache $rc "$LOGS/torch_graph-shim-nocache.log"
  case $rc in
    0) pass torch_graph-shim-nocache "PyTorch cache off, shim: captured, 10 replays correct (without the shim: exit $rc_raw)" ;;
    3) pass torch_graph-shim-nocache "PyTorch cache off, shim: capture refused with an exception, no crash, CUDA still works (without the shim: exit $rc_raw): $(grep -m1 'capture refused' "$LOGS/torch_graph-shim-nocache.log" | cut -c1-200)" ;;
    2)
      if [ "$rc_raw" = 2 ]; then
        pass torch_graph-shim-nocache "PyTorch cache off, shim: capture refused and CUDA unusable afterwards, as without the shim (no crash)"
      else
        verdict torch_graph-shim-nocache $rc "$LOGS/torch_graph-shim-nocache.log"
      fi
      ;;
    *) verdict torch_graph-shim-nocache $rc "$LOGS/torch_graph-shim-nocache.log" ;;
  esac
}
