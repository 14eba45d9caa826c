#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/tools_gpu.sh: the offline tools on real logs of the GPU machine, written compressed by the
# shim (issue 27). A check and a measurement, never a CI test. In one call:
#  1. tests/gpu/memviz_compare.py: `cudapool export --memory-viz` (now from the engine) against
#     PyTorch's own snapshot of the same workload;
#  2. a variable-shape GPT-2 training run (bench/torch_models.py gpt2var, STEPS steps, cache off)
#     under the shim with CUDAPOOL_LOG=*.jsonl.zst and CUDAPOOL_BACKTRACE=8: the log's size and
#     events; then each tool on it, timed (wall and CPU, /usr/bin/time): report --json,
#     report --html --tune, export --perfetto, export --memory-viz, cudapool-replay; the page from
#     the compressed log on stdin against the file's (same bytes but the time it was made);
#  3. the engine against the Python passes it replaced, on that log: the report and the page's
#     data (tests/cli/analyze_compare.py), the Perfetto trace (perfetto_compare.py), the
#     memory_viz snapshot (memviz_compare.py), each "0 differences" or the differences.
# Needs, built beforehand (carried): build/shim/libcudapool.so and build/tools/cudapool-{analyze,
# cat,replay,tune}, and the page's charting library (web/node_modules/uplot/dist: carry it).
# Environment: PYTHON, STEPS (40), OUT (where the files go; default a temporary
# folder). Prints everything on stdout; exit status 1 when a check fails.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CUDAPOOL_BUILD_DIR:-$root/build}"
PY="${PYTHON:-python3}"
STEPS="${STEPS:-40}"
out="${OUT:-$(mktemp -d)}/tools-gpu"
mkdir -p "$out"
work=$(mktemp -d /dev/shm/cudapool-toolsgpu.XXXXXX)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$root/scripts" CUDAPOOL_BUILD_DIR="$build" PYTHONUNBUFFERED=1
export CUBLAS_WORKSPACE_CONFIG=:4096:8
status=0
check() {  # NAME RC
  if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1 (exit $2)"; status=1; fi
}
timed() {  # NAME command...: wall, CPU and peak RSS of the command (and its children)
  local name=$1
  shift
  /usr/bin/time -f "$name: %e s wall, %U + %S s CPU, %M KB peak RSS" "$@" >"$work/$name.out" \
    2>"$work/$name.err"
  local rc=$?
  tail -n 1 "$work/$name.err"
  check "$name" "$rc"
  [ "$rc" -eq 0 ] || tail -n 5 "$work/$name.err"
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -n), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

echo "## 1. memory_viz export against PyTorch's snapshot"
"$PY" "$root/tests/gpu/memviz_compare.py" --shim "$build/shim/libcudapool.so" --out "$out/memviz" \
  >"$out/memviz_compare.txt" 2>&1
check memviz_compare $?
tail -n 25 "$out/memviz_compare.txt"

echo "## 2. gpt2var training, $STEPS steps, zstd log with backtraces"
log="$work/gpt2var.jsonl.zst"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_LOG="$log" CUDAPOOL_BACKTRACE=8 \
  LD_PRELOAD="$build/shim/libcudapool.so" "$PY" "$root/bench/torch_models.py" --model gpt2var \
  --task train --steps "$STEPS" >"$work/train.out" 2>&1
check train $?
grep RESULT "$work/train.out"
events=$("$build/tools/cudapool-cat" --quiet "$log" | wc -l)
bytes=$(stat -c %s "$log")
echo "log: $bytes bytes, $events lines, $(awk -v b="$bytes" -v e="$events" 'BEGIN{printf "%.1f", b/e}') bytes a line"
cd "$work" || exit 1
timed report-json "$PY" -m cudapool_analysis report --json "$log"
timed report-html "$PY" -m cudapool_analysis report --html "$out/page.html" --force --tune "$log"
timed perfetto "$PY" -m cudapool_analysis export --perfetto "$out/trace.json" --force "$log"
timed memory-viz "$PY" -m cudapool_analysis export --memory-viz "$out/snapshot.pickle" --force "$log"
timed replay "$build/tools/cudapool-replay" "$log"
"$PY" -m cudapool_analysis report --html "$work/stdin.html" --force - <"$log" 2>"$work/stdin.err"
check page-from-stdin $?
"$PY" -m cudapool_analysis report --html "$work/file.html" --force "$log" 2>>"$work/stdin.err"
if [ -s "$work/stdin.html" ] && [ -s "$work/file.html" ] && cmp -s <(sed 's/"generated":"[^"]*"//; s/"log":"[^"]*"//g; /<title>/d' "$work/stdin.html") \
    <(sed 's/"generated":"[^"]*"//; s/"log":"[^"]*"//g; /<title>/d' "$work/file.html"); then
  echo "PASS the page of stdin is the file's"
else
  echo "FAIL the page of stdin differs from the file's"
  status=1
fi
head -c 1200 "$work/report-json.out" | tr '\n' ' '
echo
echo "## 3. the engine against the Python passes on this log"
"$PY" "$root/tests/cli/analyze_compare.py" "$build/tools/cudapool-analyze" "$log" 2>&1 | tail -n 3
check analyze_compare "${PIPESTATUS[0]}"
"$PY" "$root/tests/cli/perfetto_compare.py" "$log" 2>&1 | tail -n 3
check perfetto_compare "${PIPESTATUS[0]}"
"$PY" "$root/tests/cli/memviz_compare.py" 100000 "$log" 2>&1 | tail -n 3
check memviz_compare_oracle "${PIPESTATUS[0]}"
cp "$log" "$out/" 2>/dev/null
exit "$status"
