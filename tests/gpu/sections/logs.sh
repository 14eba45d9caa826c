# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/logs.sh: the GPU suite's section logs: the allocation log of real programs
# (described below), checked by tests/log_check.py and replayed by cudapool-replay. Sourced by
# tests/gpu/run.sh (which sets the variables and runs test_logs when GPU_TESTS_ONLY names logs, or
# by default); not a script to run alone, and not where shared helpers live
# (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# The allocation log on real programs: each runs under the shim with CUDAPOOL_LOG; every file it
# leaves must pass tests/log_check.py (every line, field and type, the summary line) and replay
# through cudapool-replay to the summary line's statistics exactly. The alloc counts show which
# frameworks' allocations reach the pool (JAX's through XLA's platform allocator included).
test_logs() {
  logs_ready logs || return
  have alloc_basic_static && log_run alloc_basic_static 1000 "$BIN/alloc_basic_static" 500
  have alloc_basic_shared && log_run alloc_basic_shared 1000 "$BIN/alloc_basic_shared" 500
  have driver_api && log_run driver_api 1000 "$BIN/driver_api" 500
  # Several contexts on one device, three left to the exit: the events carry "ctx", the replay
  # runs a pool per context, and the report's values agree with the summary.
  if have contexts; then
    log_run contexts 500 "$BIN/contexts" 10 0 300 1
    local cf out
    cf=$(largest_log contexts)
    if [ -n "$cf" ] && grep -q '"ctx":2' "$cf"; then
      if out=$(PYTHONPATH="$REPO/scripts" "$PY" -m cudapool_analysis report --json "$cf" | "$PY" -c '
import json, sys
rep = json.load(sys.stdin)
bad = [n for n in rep["notes"] if "in the summary" in n]
print("report: %d problems, %d disagreements" % (rep["problem_count"], len(bad)))
sys.exit(1 if rep["problem_count"] or bad else 0)' 2>&1); then
        pass log-contexts-report "$out"
      else
        fail log-contexts-report "$out"
      fi
    elif [ -n "$cf" ]; then
      fail log-contexts-ctx "no event of a third context (\"ctx\":2) in $cf"
    fi
  fi
  have threads && log_run threads 1000 "$BIN/threads" 300
  # Frees behind reuse fences: the replay must hold them as the shim did.
  have cross_stream && log_run cross_stream 10 "$BIN/cross_stream" --expect-fast-free
  if py_has torch; then
    local f rc out
    log_run torch_train 1000 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_BACKTRACE=8 "$PY" "$HERE/torch_train.py"
    f=$(ls "$ALOGS"/torch_train-*.jsonl 2>/dev/null | head -n 1)
    if [ -n "$f" ] && grep -q '"backtrace":\["0x' "$f"; then
      pass log-torch_train-backtraces "alloc events carry return addresses with CUDAPOOL_BACKTRACE=8"
    elif [ -n "$f" ]; then
      fail log-torch_train-backtraces "no backtrace field in $f"
    fi
    # os._exit runs no atexit handler: the shim's _exit must still put every queued event in
    # the file (no summary line, as after a signal).
    rm -f "$ALOGS"/os_exit-*.jsonl
    run log-os_exit 120 shim env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_LOG="$ALOGS/os_exit-%p.jsonl" \
      "$PY" -c 'import os, torch
for i in range(20000): torch.empty(1 << 18, device="cuda").fill_(1.0)
torch.cuda.synchronize(); print("os_exit: 20000 tensors, then os._exit(3)", flush=True); os._exit(3)'
    rc=$?
    f=$(largest_log os_exit)
    if [ $rc != 3 ]; then
      verdict log-os_exit "$([ $rc = 0 ] && echo 1 || echo $rc)" "$LOGS/log-os_exit.log"
    elif [ -z "$f" ]; then
      fail log-os_exit "no log file was written"
    elif out=$("$PY" "$HERE/../log_check.py" --no-summary --min-allocs 20000 "$f" 2>&1); then
      pass log-os_exit "status 3 kept, every queued event in the file: $out"
    else
      fail log-os_exit "$out"
    fi
    run summary-torch_train 180 shim env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_SUMMARY=stderr "$PY" "$HERE/torch_train.py"
    rc=$?
    if [ $rc = 0 ] && grep -q 'allocated_bytes\|Allocated memory' "$LOGS/summary-torch_train.log"; then
      pass summary-torch_train "CUDAPOOL_SUMMARY=stderr printed the table at exit"
    else
      verdict summary-torch_train "$([ $rc = 0 ] && echo 1 || echo $rc)" "$LOGS/summary-torch_train.log"
    fi
  fi
  py_has cupy && log_run cupy 1000 "$PY" "$HERE/cupy_check.py"
  py_has numba && log_run numba 1000 "$PY" "$HERE/numba_check.py"
  if py_has jax; then
    # XLA's platform allocator uses the virtual memory API (cuMemCreate/cuMemMap): its buffers are
    # passed through and logged, not pooled; the pool serves the cudart allocations of its
    # libraries (cuBLAS, cuDNN). Both must be in the log.
    log_run jax 1 env XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" "$HERE/jax_check.py"
    local jf counts
    jf=$(largest_log jax)
    if [ -n "$jf" ]; then
      counts=$(action_counts "$jf")
      if [ "$(grep -c '"action":"vmm_map"' "$jf")" -ge 20 ]; then
        pass log-jax-seen "XLA's buffers seen through the VMM API (passed through, not pooled): $counts"
      else
        fail log-jax-seen "fewer than 20 vmm_map events: JAX's allocations were not seen: $counts"
      fi
    fi
  fi
  if [ -n "${OUT:-}" ]; then
    # A sample for the record: the PyTorch log, compressed.
    f=$(ls "$ALOGS"/torch_train-*.jsonl 2>/dev/null | head -n 1)
    [ -n "$f" ] && gzip -c "$f" >"$OUT/torch_train-log.jsonl.gz"
  fi
}
