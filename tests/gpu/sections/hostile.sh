# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/hostile.sh: the GPU suite's section hostile: issue 26's defects on the real
# driver, with a real PyTorch training loop (torch_train.py, its cache off) as the user's program:
# the log and summary under `ulimit -f` and into a FIFO whose reader stopped reading, the metrics
# file given /dev/null and a user's file, the control socket and metrics file after SIGTERM and
# exec, an out-of-memory that a setting causes, the page size that expandable segments need, and
# the tools on the real log through stdin and with the output name forgotten. In each run the
# program's own answers (losses, parameters) must equal the run without the shim and its exit
# status be its own. Runs last: it gives /dev/null to the shim as root. Sourced by tests/gpu/run.sh
# (GPU_TESTS_ONLY=hostile, or by default); not a script to run alone, and not where shared helpers
# live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# hostile_same NAME LOG: the losses and parameters of LOG equal the raw run's.
hostile_same() {
  if diff <(grep -E '^(loss|params) ' "$LOGS/hostile-raw.log") <(grep -E '^(loss|params) ' "$2") >/dev/null; then
    pass "$1-same" "losses and parameters bit-identical to the run without the shim"
  else
    fail "$1-same" "losses or parameters differ from the run without the shim"
  fi
}

# hostile_said NAME LOG PATTERN WHAT: PASS when LOG has a line matching PATTERN (grep -E).
hostile_said() {
  local line
  line=$(grep -m1 -E "$3" "$2")
  if [ -n "$line" ]; then pass "$1" "$4: $(echo "$line" | cut -c1-200)"; else fail "$1" "$4: no line matches '$3'"; fi
}

test_hostile() {
  py_has torch || { info "hostile: no torch, skipped"; return; }
  local d="$WORK/hostile" rc train="$HERE/torch_train.py"
  rm -rf "$d" && mkdir -p "$d"
  local -a torch_env=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1)
  checked_run hostile-raw 300 raw "torch_train without the shim" "${torch_env[@]}" "$PY" "$train" || return

  # Item 3: a file size limit (ulimit -f) below the log's and the summary's size: no SIGXFSZ. The
  # program alone under the same limit first (it must not need more itself).
  run hostile-ulimit-raw 300 raw bash -c 'ulimit -f 16; exec "$@"' _ "${torch_env[@]}" "$PY" "$train"
  verdict hostile-ulimit-raw $? "$LOGS/hostile-ulimit-raw.log" "exit 0 under ulimit -f 16 without the shim"
  run hostile-ulimit 300 shim bash -c 'ulimit -f 16; exec "$@"' _ "${torch_env[@]}" \
    CUDAPOOL_LOG="$d/ulimit.jsonl" CUDAPOOL_SUMMARY="$d/ulimit-summary.txt" "$PY" "$train"
  verdict hostile-ulimit $? "$LOGS/hostile-ulimit.log" "exit 0 under ulimit -f 16 (16 KiB) with a log and a summary file"
  hostile_same hostile-ulimit "$LOGS/hostile-ulimit.log"
  hostile_said hostile-ulimit-said "$LOGS/hostile-ulimit.log" 'cudapool.*(File too large|logging stopped)' "the write failure said"

  # Item 4: a log FIFO whose reader opened it and never reads.
  mkfifo "$d/stalled.fifo"
  (exec 3<"$d/stalled.fifo"; sleep 200) &
  local reader=$!
  run hostile-fifo 200 shim "${torch_env[@]}" CUDAPOOL_LOG="$d/stalled.fifo" "$PY" "$train"
  verdict hostile-fifo $? "$LOGS/hostile-fifo.log" "the program ends although the log's reader stopped reading"
  hostile_same hostile-fifo "$LOGS/hostile-fifo.log"
  hostile_said hostile-fifo-said "$LOGS/hostile-fifo.log" 'reader stalled' "the stall said"
  kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null

  # Item 1: the metrics file never goes over what it did not make: /dev/null (run as root here)
  # and a user's file.
  printf 'a user file\n' >"$d/victim.prom"
  run hostile-metrics-devnull 300 shim "${torch_env[@]}" CUDAPOOL_METRICS=/dev/null CUDAPOOL_METRICS_INTERVAL=1 "$PY" "$train"
  verdict hostile-metrics-devnull $? "$LOGS/hostile-metrics-devnull.log"
  if [ -c /dev/null ]; then pass hostile-devnull-intact "/dev/null is still a character device"; else fail hostile-devnull-intact "/dev/null: $(stat -c %F /dev/null 2>&1)"; fi
  run hostile-metrics-victim 300 shim "${torch_env[@]}" CUDAPOOL_METRICS="$d/victim.prom" CUDAPOOL_METRICS_INTERVAL=1 "$PY" "$train"
  verdict hostile-metrics-victim $? "$LOGS/hostile-metrics-victim.log"
  if [ "$(cat "$d/victim.prom" 2>&1)" = "a user file" ]; then
    pass hostile-victim-intact "the user's file at CUDAPOOL_METRICS is as it was"
  else
    fail hostile-victim-intact "the user's file changed: $(head -c 100 "$d/victim.prom" 2>&1)"
  fi

  # Item 16: the socket and the metrics file are gone after a SIGTERM the shim handles, and after
  # an exec of the process that made them (the same pid lives on).
  local sockdir="$d/sockets" pid i
  mkdir -m 700 -p "$sockdir"   # the shim wants its socket directory 0700
  "${torch_env[@]}" LD_PRELOAD="$SHIM" CUDAPOOL_CONTROL="$sockdir" CUDAPOOL_METRICS="$d/term.prom" \
    "$PY" -c 'import time, torch
x = torch.empty(1 << 20, device="cuda"); torch.cuda.synchronize(); print("ready", flush=True); time.sleep(120)' \
    >"$LOGS/hostile-term.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 600; i++)); do [ -S "$sockdir/$pid.sock" ] && [ -f "$d/term.prom" ] && break; sleep 0.1; done
  local had="socket $([ -S "$sockdir/$pid.sock" ] && echo made || echo missing), metrics $([ -f "$d/term.prom" ] && echo made || echo missing)"
  kill -TERM "$pid"; wait "$pid"; rc=$?
  if [ $rc = 143 ] && [ ! -e "$sockdir/$pid.sock" ] && [ ! -e "$d/term.prom" ] && [[ $had == "socket made, metrics made" ]]; then
    pass hostile-sigterm-cleanup "$had; after SIGTERM (status 143) both are gone"
  else
    fail hostile-sigterm-cleanup "$had; status $rc; left: $(ls "$sockdir" "$d/term.prom" 2>&1 | tr '\n' ' ')"
  fi
  "${torch_env[@]}" LD_PRELOAD="$SHIM" CUDAPOOL_CONTROL="$sockdir" CUDAPOOL_METRICS="$d/exec.prom" \
    "$PY" -c 'import os, time, torch
x = torch.empty(1 << 20, device="cuda"); torch.cuda.synchronize(); time.sleep(3)
os.execv("/bin/sleep", ["sleep", "6"])' >"$LOGS/hostile-exec.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 600; i++)); do [ -S "$sockdir/$pid.sock" ] && break; sleep 0.1; done
  had="socket $([ -S "$sockdir/$pid.sock" ] && echo made || echo missing)"
  for ((i = 0; i < 100; i++)); do [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && break; sleep 0.1; done
  sleep 0.5
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && [ ! -e "$sockdir/$pid.sock" ] && [ ! -e "$d/exec.prom" ] && [ "$had" = "socket made" ]; then
    pass hostile-exec-cleanup "$had; after exec (pid $pid now runs sleep) the socket and the metrics file are gone"
  else
    fail hostile-exec-cleanup "$had; comm $(cat "/proc/$pid/comm" 2>&1); left: $(ls "$sockdir" "$d/exec.prom" 2>&1 | tr '\n' ' ')"
  fi
  wait "$pid"

  # Item 8: a large_segment_size_mb above the device's memory: the explanation names the setting.
  # (The setting sizes the segment of a request from 1 to 10 MiB: 5 MiB here.)
  run hostile-oom-setting 300 shim:large_segment_size_mb:200000 "${torch_env[@]}" "$PY" -c 'import torch
try:
    torch.empty(5 << 20, dtype=torch.uint8, device="cuda"); print("allocated: no OOM")
except RuntimeError as e:   # with its cache off PyTorch raises AcceleratorError, not OutOfMemoryError
    print("out of memory, as expected: %s" % type(e).__name__)'
  verdict hostile-oom-setting $? "$LOGS/hostile-oom-setting.log"
  hostile_said hostile-oom-setting-named "$LOGS/hostile-oom-setting.log" 'cudapool: .*large_segment_size_mb' "the setting named"
  # Item 8: the driver's page for expandable segments is a multiple of its granularity (2 MiB on
  # this GPU): an odd large_segment_size_mb is refused by the conf parser, and the real driver
  # refuses such a page (CUDA_ERROR_INVALID_VALUE), which is why.
  run hostile-odd-page 300 shim:expandable_segments:True,large_segment_size_mb:21 "${torch_env[@]}" "$PY" "$train"
  verdict hostile-odd-page $? "$LOGS/hostile-odd-page.log" "expandable_segments with large_segment_size_mb:21: the value refused, the program runs"
  hostile_same hostile-odd-page "$LOGS/hostile-odd-page.log"
  hostile_said hostile-odd-page-said "$LOGS/hostile-odd-page.log" 'large_segment_size_mb.*21' "the refusal said"
  run hostile-granularity 120 raw "$PY" "$HERE/vmm_granularity.py"
  verdict hostile-granularity $? "$LOGS/hostile-granularity.log" "$(grep -m1 '^granularity' "$LOGS/hostile-granularity.log")"

  # Items 2 and 6: the tools on a real log: stdin reads as the file; the output name forgotten.
  local log="$d/tools.jsonl" out
  run hostile-tools-log 300 shim "${torch_env[@]}" CUDAPOOL_LOG="$log" "$PY" "$train" >/dev/null
  local -a cp=(env PYTHONPATH="$REPO/scripts" "$PY" -m cudapool_analysis)
  if [ -f "$log" ] && cmp -s <("${cp[@]}" report --json "$log" | grep -v '"log"') <("${cp[@]}" report --json - <"$log" | grep -v '"log"'); then
    pass hostile-report-stdin "report of the real log through stdin equals report of the file"
  else
    fail hostile-report-stdin "report through stdin differs (or no log $log)"
  fi
  cp "$log" "$d/run-0.jsonl" && cp "$log" "$d/run-1.jsonl"
  out=$("${cp[@]}" report --html "$d/run-0.jsonl" "$d/run-1.jsonl" 2>&1); rc=$?
  if [ $rc = 2 ] && cmp -s "$log" "$d/run-0.jsonl"; then
    pass hostile-html-refused "report --html run-*.jsonl: refused (2), the log intact: $(echo "$out" | head -n 1 | cut -c1-160)"
  else
    fail hostile-html-refused "status $rc, log $(cmp -s "$log" "$d/run-0.jsonl" && echo intact || echo CHANGED): $out"
  fi
}
