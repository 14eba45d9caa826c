#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/verdict_logs.sh: three real PyTorch jobs under the shim with CUDAPOOL_BACKTRACE, for the
# report's verdict and its screenshots (issue 28), each beside NVML's reading of the device (what
# nvidia-smi shows) and, for the burst, beside PyTorch's own cache in the same call. For a GPU
# machine; writes into $OUT (gzipped logs, and results.txt):
#   burst.jsonl.gz      bench/verdict_burst.py: inference, a burst of long requests, then short
#                       ones (CUDAPOOL_BACKTRACE=python)
#   gpt2var.jsonl.gz    bench/torch_models.py gpt2var train (variable shapes; all:16: native and
#                       Python frames)
#   resnet50.jsonl.gz   bench/torch_models.py resnet50 train (python)
# Environment: CUDAPOOL_LIB (default build/shim/libcudapool.so), PYTHON, STEPS (8).
. "$(dirname "${BASH_SOURCE[0]}")/torch_job_env.bash"
WORK="$(mktemp -d /tmp/cudapool-verdict-logs.XXXXXX)"
export PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8
R="$OUT/results.txt"
shim() { env PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD="$SHIM" "$@"; }
echo "== burst, PyTorch's own cache" | tee -a "$R"
"$PY" "$REPO/bench/verdict_burst.py" 2>&1 | grep RESULT | tee -a "$R"
echo "== burst, the shim (CUDAPOOL_BACKTRACE=python)" | tee -a "$R"
shim CUDAPOOL_LOG="$WORK/burst.jsonl" CUDAPOOL_BACKTRACE=python "$PY" "$REPO/bench/verdict_burst.py" 2>&1 | grep RESULT | tee -a "$R"
echo "== gpt2var train, the shim (CUDAPOOL_BACKTRACE=all:16)" | tee -a "$R"
shim CUDAPOOL_LOG="$WORK/gpt2var.jsonl" CUDAPOOL_BACKTRACE=all:16 "$PY" "$REPO/bench/torch_models.py" \
  --model gpt2var --task train --steps "$STEPS" 2>&1 | grep RESULT | tee -a "$R"
echo "== resnet50 train, the shim (CUDAPOOL_BACKTRACE=python)" | tee -a "$R"
shim CUDAPOOL_LOG="$WORK/resnet50.jsonl" CUDAPOOL_BACKTRACE=python "$PY" "$REPO/bench/torch_models.py" \
  --model resnet50 --task train --steps "$STEPS" 2>&1 | grep RESULT | tee -a "$R"
for f in "$WORK"/*.jsonl; do
  echo "$(basename "$f"): $(wc -l <"$f") lines" | tee -a "$R"
  gzip -c "$f" >"$OUT/$(basename "$f").gz"
done
rm -rf "$WORK"
