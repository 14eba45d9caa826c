#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/exit_signal.sh: the allocation log when a signal ends the program
# (shim/support/exit_signals.h). signal_producer allocates and frees in a tight loop, faster than the log's
# writer formats, and counts its pairs in a shared file. (1) SIGTERM at its default action: the
# process still dies by SIGTERM (status 143), and every pair counted before the signal is in the
# log (each line whole JSON, seq 1..N without a gap). (2) A program with its own SIGTERM handler
# keeps it: it returns normally and the log ends with its summary line. (3) _exit, which runs no
# atexit handler (shim/lifecycle/immediate_exit.cpp), called from the loop and from the program's SIGTERM
# handler: the status is the program's, and every counted pair is in the log. (4) An exec
# (shim/lifecycle/exec_hooks.cpp) after the pairs: the status is the new program's, and every
# counted pair is in the log. Through the fake driver.
# Usage: exit_signal.sh <signal_producer> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"

# Lines, alloc events, and whether seq runs 1..lines-1 (header excluded) and the last line is a
# summary. Every line must parse.
log_facts() {
  python3 - "$1" <<'PY'
import json, sys
allocs = 0
seqs = []
last = None
with open(sys.argv[1]) as f:
    for n, line in enumerate(f, 1):
        record = json.loads(line)
        last = record
        if record.get("action") == "alloc":
            allocs += 1
        if "seq" in record and record.get("action") != "summary":
            seqs.append(record["seq"])
gapless = seqs == list(range(1, len(seqs) + 1))
print(allocs, "gapless" if gapless else "gaps", "summary" if last and last.get("action") == "summary" else "no-summary")
PY
}

# start_producer NAME [ARGS...]: becomes the program under the shim, with a log (call it in a
# subshell: `( start_producer ... )`, or `start_producer ... &`, whose $! is then the program).
start_producer() {
  local name=$1
  shift
  LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$work/$name.jsonl" \
    CUDAPOOL_LOG_BUFFER=1048576 exec "$program" "$work/$name.count" "$@" >"$work/$name.out" 2>&1
}

run_producer() {  # run_producer NAME [ARGS...]: starts it, waits for 200000 pairs, sends SIGTERM
  local name=$1
  start_producer "$@" &
  local pid=$! i
  for i in $(seq 1 300); do
    sleep 0.05
    if [ -s "$work/$name.count" ] &&
      [ "$(od -An -tu8 "$work/$name.count" | tr -d ' ')" -ge 200000 ] 2>/dev/null; then
      break
    fi
  done
  kill -TERM "$pid"
  wait "$pid"
  echo $?
}

# check_all_logged NAME RC WANT_RC WHAT: the status, and every counted pair in a gapless log.
check_all_logged() {
  local name=$1 rc=$2 want=$3 what=$4 counted facts allocs gaps summary
  counted=$(od -An -tu8 "$work/$name.count" | tr -d ' ')
  [ "$rc" = "$want" ] || fail "$what: exit status $rc, want $want: $(head -c 300 "$work/$name.out")"
  if ! facts=$(log_facts "$work/$name.jsonl"); then
    fail "the log of the $what run has a broken line"
    return
  fi
  read -r allocs gaps summary <<<"$facts"
  [ "$gaps" = gapless ] || fail "$what: the log's seq has gaps"
  if [ "$allocs" -ge "$counted" ]; then
    echo "ok: $what: status $rc, $counted pairs counted, $allocs alloc events in the log ($summary)"
  else
    fail "$what: $counted pairs done, $allocs alloc events in the log: events were lost"
  fi
}

rc=$(run_producer default)
check_all_logged default "$rc" 143 "SIGTERM at its default action (killed by SIGTERM)"

rc=$(run_producer own --own-handler)
[ "$rc" = 0 ] || fail "a program with its own SIGTERM handler: exit status $rc, want 0: $(cat "$work/own.out")"
grep -q "stopped by its own handler" "$work/own.out" || fail "the program's own handler did not run"
if facts=$(log_facts "$work/own.jsonl"); then
  read -r allocs gaps summary <<<"$facts"
  if [ "$summary" = summary ]; then
    echo "ok: own handler kept: status $rc, $allocs alloc events, then the summary line"
  else
    fail "normal return after the program's own handler: no summary line"
  fi
else
  fail "the log of the own-handler run has a broken line"
fi

(start_producer exit --exit-after 200000)
check_all_logged exit $? 7 "_exit(7) after 200000 pairs"
rc=$(run_producer handler-exit --handler-exits)
check_all_logged handler-exit "$rc" 7 "_exit(7) from the program's SIGTERM handler"
(start_producer exec --exec-after 200000)
check_all_logged exec $? 0 "exec of /bin/true after 200000 pairs"
exit $status
