#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/real_logs.sh: logs of real PyTorch runs under the shim, for the viewers and their tests
# (issue 16): what `cudapool report --html`, `export --memory-viz` and `export --perfetto` are
# checked on besides the synthetic fixtures. For a GPU machine; writes into $OUT (gzipped):
#   gpt2var-train.jsonl.gz  variable-shape GPT-2 training (bench/torch_models.py), cache off under
#                           the shim, CUDAPOOL_BACKTRACE=8 (allocation sites)
#   run-0.jsonl.gz, run-1.jsonl.gz
#                           two processes started together as ranks 0 and 1 of one job (RANK,
#                           WORLD_SIZE; CUDAPOOL_LOG='run-%r.jsonl'), ResNet-50 training and
#                           GPT-2 inference, sharing the one GPU: a multi-rank set on one clock
# Environment: CUDAPOOL_LIB (default build/shim/libcudapool.so), PYTHON, STEPS (8).
. "$(dirname "${BASH_SOURCE[0]}")/torch_job_env.bash"
WORK="$(mktemp -d /tmp/cudapool-real-logs.XXXXXX)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTORCH_NO_CUDA_MEMORY_CACHING=1

shim_run() {  # log model task [env...]
  local log=$1 model=$2 task=$3
  shift 3
  env "$@" CUDAPOOL_LOG="$log" LD_PRELOAD="$SHIM" "$PY" "$REPO/bench/torch_models.py" \
    --model "$model" --task "$task" --steps "$STEPS"
}

shim_run "$WORK/gpt2var-train.jsonl" gpt2var train CUDAPOOL_BACKTRACE=8 || echo "FAILED gpt2var"
(cd "$WORK" && shim_run 'run-%r.jsonl' resnet50 train RANK=0 WORLD_SIZE=2 LOCAL_RANK=0) &
(cd "$WORK" && shim_run 'run-%r.jsonl' gpt2 infer RANK=1 WORLD_SIZE=2 LOCAL_RANK=1) &
wait
for f in "$WORK"/*.jsonl; do
  echo "$(basename "$f"): $(wc -l <"$f") lines"
  gzip -c "$f" >"$OUT/$(basename "$f").gz"
done
rm -rf "$WORK"
