#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/predict_vs_real.sh: what cudapool tune predicts a setting would reserve, against a real run
# of that setting, for real PyTorch models (issue 15). For each workload: one logged run under the
# default settings (cache off under the shim), `cudapool-tune --json` of its log with the settings
# to check as --try, then one real (logged) run per setting. Prints one markdown table: setting,
# predicted peak reserved, real peak reserved, the difference; and the replay of each real run's
# own log against its summary (must be equal). A benchmark for a GPU machine, never a test.
#
#   OUT=/some/dir bench/predict_vs_real.sh
#
# Environment: WORKLOADS (default "gpt2var:train:30 fasterrcnn:infer:30"), SETTINGS (default
# "max_split_size_mb:128;expandable_segments:True;roundup_power2_divisions:4", ';'-separated),
# CUDAPOOL_LIB, CUDAPOOL_TUNE (default $REPO/build/tools/cudapool-tune), CUDAPOOL_REPLAY, PYTHON.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
TUNE="${CUDAPOOL_TUNE:-$REPO/build/tools/cudapool-tune}"
REPLAY="${CUDAPOOL_REPLAY:-$REPO/build/tools/cudapool-replay}"
PY="${PYTHON:-python3}"
WORKLOADS="${WORKLOADS:-gpt2var:train:30 fasterrcnn:infer:30}"
SETTINGS="${SETTINGS:-max_split_size_mb:128;expandable_segments:True;roundup_power2_divisions:4}"
WORK="$(mktemp -d /tmp/cudapool-predict.XXXXXX)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8

run_logged() {  # model task steps conf log
  env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_CONF="$4" CUDAPOOL_LOG="$5" LD_PRELOAD="$SHIM" \
    "$PY" "$REPO/bench/torch_models.py" --model "$1" --task "$2" --steps "$3" >/dev/null 2>"$WORK/err.txt" ||
    echo "FAILED $1 $2 '$4': $(tail -n 3 "$WORK/err.txt" | tr '\n' ' ')"
}
peak_of() { "$PY" -c 'import json,sys
s=[json.loads(l) for l in open(sys.argv[1])][-1]
print(sum(d["stats"]["reserved_bytes.all.peak"] for d in s["devices"].values()))' "$1"; }

echo "| workload | setting | predicted peak reserved | real peak reserved | prediction error | real run's replay equals its summary |"
echo "| --- | --- | --- | --- | --- | --- |"
for w in $WORKLOADS; do
  IFS=: read -r model task steps <<<"$w"
  base="$WORK/$model-$task-default.jsonl"
  run_logged "$model" "$task" "$steps" "" "$base"
  tries=()
  IFS=';' read -r -a settings <<<"$SETTINGS"
  for s in "${settings[@]}"; do tries+=(--try "$s"); done
  "$TUNE" --json "${tries[@]}" "$base" >"$WORK/tune.json" || { echo "FAILED tune of $base"; continue; }
  for s in "" "${settings[@]}"; do
    log="$WORK/$model-$task-$(echo "${s:-default}" | tr -c 'A-Za-z0-9_.-' '_').jsonl"
    [ -n "$s" ] && run_logged "$model" "$task" "$steps" "$s" "$log"
    [ -f "$log" ] || log=$base
    real=$(peak_of "$log")
    pred=$("$PY" -c 'import json,sys
t=json.load(open(sys.argv[1])); want=sys.argv[2]
r=[x for x in t["logs"][0]["results"] if (x["changes"]==want) or (not want and x["setting"]=="own")]
print(r[0]["peak_reserved"] if r else -1)' "$WORK/tune.json" "$s")
    same=$("$PY" "$REPO/tests/log_check.py" --replay "$REPLAY" "$log" >/dev/null 2>&1 && echo yes || echo NO)
    "$PY" -c 'import sys
p,r=int(sys.argv[3]),int(sys.argv[4])
print("| %s | %s | %.2f GiB | %.2f GiB | %+.2f%% | %s |" % (sys.argv[1], sys.argv[2] or "default (the log'"'"'s own)", p/2**30, r/2**30, 100.0*(p-r)/r if r else 0, sys.argv[5]))' \
      "$model:$task" "$s" "$pred" "$real" "$same"
  done
done | tee "$WORK/table.md"
[ -n "${OUT:-}" ] && cp "$WORK/table.md" "$OUT/predict-vs-real.md"
rm -rf "$WORK"
