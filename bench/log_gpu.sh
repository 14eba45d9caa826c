#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/log_gpu.sh: what the log costs under the shim on the GPU machine, plain and compressed
# (docs/benchmarks.md, "Compressed logs"). A benchmark, never a test. In one call:
#  1. bench/alloc_latency.cu (cudaMalloc+cudaFree pairs, cached) under the shim without a log and
#     with CUDAPOOL_LOG .jsonl, .jsonl.zst and .jsonl.gz (in /dev/shm), ROUNDS interleaved rounds:
#     the extra time per logged event = (logged pair - plain pair) / 3, and what each log holds;
#  2. a real PyTorch model (bench/torch_models.py gpt2 train, cache off) under the shim with
#     CUDAPOOL_BACKTRACE=8: steps/s without a log, with a plain and a zstd log, and the bytes an
#     event each log took;
#  3. build/bench/log_cost (the producer's cost per event, the writer's burst rate) and
#     build/bench/log_compress (bytes an event, the writer's CPU) for plain, .zst and .gz, on the
#     model's plain log of step 2.
# Needs, built beforehand (on the development machine, carried): build/shim/libcudapool.so,
# build/tools/cudapool-cat, build/bench/log_cost, build/bench/log_compress. nvcc builds
# alloc_latency here. Usage: bench/log_gpu.sh [ROUNDS] (default 5). Prints everything on stdout.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CUDAPOOL_BUILD_DIR:-$root/build}"
rounds="${1:-5}"
SHIM="$build/shim/libcudapool.so"
CAT="$build/tools/cudapool-cat"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
PY="${PYTHON:-python3}"
work=$(mktemp -d /dev/shm/cudapool-loggpu.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -n), $(nproc) cores," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
echo "libzstd: $(ls /usr/lib/*/libzstd.so.1.* 2>/dev/null | head -1); zlib: $(ls /usr/lib/*/libz.so.1.* 2>/dev/null | head -1)"

# ---- 1. the pair with and without a log ---------------------------------------------------------
"$NVCC" -O2 -std=c++17 -arch="${CUDA_ARCH:-sm_90}" -Xcompiler -pthread -o "$work/alloc_latency" \
  "$root/bench/alloc_latency.cu" || { echo "nvcc failed"; exit 1; }
sizes=512,1048576,67108864
events() {  # FILE -> lines in the log (decoded)
  "$CAT" --quiet "$1" 2>/dev/null | wc -l
}
echo
echo "## 1. alloc_latency under the shim (median ns per pair), $rounds rounds"
for r in $(seq 1 "$rounds"); do
  for ext in none .jsonl .jsonl.zst .jsonl.gz; do
    rm -f "$work"/lat-*
    if [ "$ext" = none ]; then
      out=$(env LD_PRELOAD="$SHIM" "$work/alloc_latency" --sizes "$sizes" --budget-s 0.5 2>&1)
      extra=""
    else
      out=$(env LD_PRELOAD="$SHIM" CUDAPOOL_LOG="$work/lat-%p$ext" "$work/alloc_latency" \
        --sizes "$sizes" --budget-s 0.5 2>&1)
      f=$(ls "$work"/lat-* 2>/dev/null | head -1)
      extra=" file_bytes=$(stat -c %s "$f" 2>/dev/null) lines=$(events "$f")"
    fi
    echo "round $r $ext:$(echo "$out" | sed -n 's/.*\(size=[0-9]*\).*\(median_ns=[0-9.]*\).*/ \1 \2/p' | tr -d '\n')$extra"
  done
done

# ---- 2. a real model ------------------------------------------------------------------------------
echo
echo "## 2. gpt2 training, cache off, under the shim with CUDAPOOL_BACKTRACE=8"
for ext in none .jsonl .jsonl.zst; do
  rm -f "$work"/model-*
  logenv=()
  [ "$ext" = none ] || logenv=(CUDAPOOL_LOG="$work/model-%p$ext")
  res=$(env PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD="$SHIM" CUDAPOOL_BACKTRACE=8 "${logenv[@]}" \
    "$PY" "$root/bench/torch_models.py" --model gpt2 --task train --steps 30 --warmup 5 2>&1 |
    grep '^RESULT' | sed 's/^RESULT //')
  line="$ext: $(echo "$res" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print("steps_per_s=%.2f" % d["steps_per_s"])' 2>/dev/null)"
  if [ "$ext" != none ]; then
    f=$(ls "$work"/model-* 2>/dev/null | head -1)
    n=$(events "$f")
    b=$(stat -c %s "$f")
    line="$line file_bytes=$b lines=$n bytes_per_line=$("$PY" -c "print('%.1f' % ($b / max($n, 1)))")"
    [ "$ext" = .jsonl ] && cp "$f" "$work/model.jsonl"
    [ "$ext" = .jsonl.zst ] && cp "$f" "$work/model.jsonl.zst"
  fi
  echo "$line"
done
# the tools read the compressed log as the plain one (the two runs are the same workload)
for f in "$work/model.jsonl" "$work/model.jsonl.zst"; do
  [ -s "$f" ] || continue
  echo "report --json $(basename "$f"): $("$root/scripts/cudapool" report --json --quiet "$f" 2>/dev/null |
    "$PY" -c 'import json,sys; d=json.load(sys.stdin)["devices"]["0"]; print("peak_allocated", (d["peak_allocated"] or {}).get("bytes"), "peak_reserved", (d["peak_reserved"] or {}).get("bytes"), "events", d["events"])' 2>&1 | tail -1)"
done

# ---- 3. the writer on the model's log -------------------------------------------------------------
for ext in "" .zst .gz; do
  echo
  echo "## 3. log_cost, the log written as .jsonl$ext:"
  "$build/bench/log_cost" "$work" "$ext"
done
if [ -s "$work/model.jsonl" ]; then
  echo
  echo "## 3. log_compress on the model's log, at its own pace:"
  "$build/bench/log_compress" "$work/model.jsonl" --dir "$work"
  echo
  echo "## 3. log_compress on the model's log x5, at once, levels and sync intervals:"
  "$build/bench/log_compress" "$work/model.jsonl" --rate 0 --repeat 5 --dir "$work" --levels
fi
