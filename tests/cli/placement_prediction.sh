#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/placement_prediction.sh: a replay with simulated device addresses predicts the parity
# cases as PyTorch ran them on an H200 (tests/parity/predict_check.py; peaks, device calls, OOMs,
# retries): 36 of 36 with the chunk model of pool/placement.h, fitted to the driver's segment
# traces (tests/parity/segment-traces/; 31 with the earlier model fitted to the numbers alone, 24
# with increasing fresh addresses). A guard against a change that makes predictions worse.
set -euo pipefail
python3 "$CUDAPOOL_SOURCE_DIR/tests/parity/predict_check.py" --min 36 --verbose \
  "$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
