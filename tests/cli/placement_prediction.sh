#!/usr/bin/env bash
# tests/cli/placement_prediction.sh: a replay with simulated device addresses predicts the parity
# cases as PyTorch ran them on an H200 (tests/parity/predict_check.py; peaks, device calls, OOMs,
# retries): 31 of 36 with the driver-like placement of pool/placement.h (24 with the earlier
# increasing fresh addresses). A guard against a change that makes predictions worse.
set -euo pipefail
python3 "$CUDAPOOL_SOURCE_DIR/tests/parity/predict_check.py" --min 31 --verbose \
  "$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
