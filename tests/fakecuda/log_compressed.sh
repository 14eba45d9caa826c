#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/log_compressed.sh: the shim's log written compressed (CUDAPOOL_LOG=NAME.zst or
# NAME.gz, log/compression.h), checked with the zstd and gzip programs. signal_producer (a tight
# allocation loop through the fake driver, counting its pairs in a shared file) under the shim:
# (1) ended by _exit after N pairs: the .zst and .gz logs decode to the same events as a plain log
# of the same run, seq by seq, and are complete streams (the exit closed the frame); (2) SIGTERM at
# its default action, (3) an exec and (4) the program's own handler (a normal exit, with the
# summary line): complete streams with every counted pair; (5) SIGKILL mid-run: the file decodes
# to whole lines, seq 1..N without a gap (the program may say the stream is cut); (6) a file size
# limit: the program's own status, one warning, whole lines; (7) the library missing: a plain log
# under the name less the extension, with one warning.
# Usage: log_compressed.sh <signal_producer> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"
command -v zstd >/dev/null && command -v gzip >/dev/null ||
  { echo "FAIL: the zstd or gzip program is missing (scripts/cudapool setup installs them)"; exit 1; }

decode() {  # decode FILE: the lines (an error of the program on stderr, its status returned)
  case "$1" in
    *.zst) zstd -qdc "$1" ;;
    *.gz) gzip -dc "$1" ;;
    *) cat "$1" ;;
  esac
}
complete() {  # complete FILE: the stream is whole and valid
  case "$1" in
    *.zst) zstd -qt "$1" 2>/dev/null ;;
    *.gz) gzip -t "$1" 2>/dev/null ;;
  esac
}

# facts: on stdin a log's lines; prints "ALLOCS gapless|gaps summary|no-summary whole|cut", and
# with --events the events without their clock (seq, action, dev, size, block_size, ...; addresses
# as the order in which they first appear).
facts() {
  python3 -c '
import json, sys
text = sys.stdin.read()
whole = text.endswith("\n")
lines = text.split("\n")
if whole: lines.pop()
else: lines.pop()  # a cut line is reported as "cut", not parsed
allocs, seqs, last, events, ids = 0, [], None, [], {}
for line in lines:
    r = json.loads(line)
    last = r
    if r.get("action") == "alloc": allocs += 1
    if "seq" in r and r.get("action") != "summary":
        seqs.append(r["seq"])
        e = {k: v for k, v in r.items() if k not in ("t_ns", "tid", "latency_ns")}
        for k in ("ptr", "segment", "stream"):  # addresses differ from run to run (ASLR)
            if k in e: e[k] = ids.setdefault(e[k], len(ids))
        events.append(e)
if len(sys.argv) > 1:
    for e in events: print(json.dumps(e, sort_keys=True))
else:
    print(allocs, "gapless" if seqs == list(range(1, len(seqs) + 1)) else "gaps",
          "summary" if last and last.get("action") == "summary" else "no-summary",
          "whole" if whole else "cut")
' "$@"
}

run() {  # run NAME LOG [ARGS...]: the producer under the shim; sets rc
  local name=$1 log=$2
  shift 2
  rc=0
  LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$log" CUDAPOOL_LOG_BUFFER=65536 \
    timeout -k 5 120 "$program" "$work/$name.count" "$@" >"$work/$name.out" 2>&1 || rc=$?
}
counted() { od -An -tu8 "$work/$1.count" | tr -d ' '; }

# (1) The same events as a plain log of the same run, and a complete stream after _exit.
run plain "$work/plain.jsonl" --exit-after 20000
[ "$rc" = 7 ] || fail "plain run: exit status $rc"
facts --events <"$work/plain.jsonl" >"$work/plain.events"
[ "$(wc -l <"$work/plain.events")" -ge 60000 ] || fail "plain run: $(wc -l <"$work/plain.events") events"
for ext in zst gz; do
  log="$work/same.jsonl.$ext"
  run "same-$ext" "$log" --exit-after 20000
  [ "$rc" = 7 ] || fail "$ext, _exit(7): exit status $rc: $(head -c 300 "$work/same-$ext.out")"
  [ ! -s "$work/same-$ext.out" ] || fail "$ext: the shim said: $(head -c 300 "$work/same-$ext.out")"
  complete "$log" || fail "$ext, _exit: not a complete stream (the frame was not closed)"
  if decode "$log" | facts --events >"$work/same-$ext.events" &&
    cmp -s "$work/plain.events" "$work/same-$ext.events"; then
    echo "ok: $ext: $(wc -l <"$work/same-$ext.events") events, the plain log's, seq by seq; $(stat -c %s "$log") bytes against $(stat -c %s "$work/plain.jsonl")"
  else
    fail "$ext: the events differ from the plain log's: $(diff "$work/plain.events" "$work/same-$ext.events" | head -5)"
  fi
done

# (2)-(4) A handled SIGTERM, an exec, the program's own handler: complete, every pair counted.
run_until() {  # run_until NAME LOG PAIRS [ARGS...]: started, SIGTERM after PAIRS pairs; sets rc
  local name=$1 log=$2 pairs=$3 pid i
  shift 3
  LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$log" CUDAPOOL_LOG_BUFFER=65536 \
    "$program" "$work/$name.count" "$@" >"$work/$name.out" 2>&1 &
  pid=$!
  for i in $(seq 1 600); do
    sleep 0.05
    [ -s "$work/$name.count" ] && [ "$(counted "$name")" -ge "$pairs" ] 2>/dev/null && break
  done
  kill -TERM "$pid"
  rc=0
  wait "$pid" || rc=$?
}
check_ended() {  # check_ended NAME LOG WANT_RC WANT_SUMMARY WHAT
  local name=$1 log=$2 want=$3 summary=$4 what=$5 n allocs gaps last whole
  [ "$rc" = "$want" ] || fail "$what: exit status $rc, want $want: $(head -c 300 "$work/$name.out")"
  complete "$log" || fail "$what: not a complete stream"
  n=$(counted "$name")
  read -r allocs gaps last whole < <(decode "$log" | facts) || { fail "$what: a broken line"; return; }
  [ "$gaps" = gapless ] && [ "$whole" = whole ] && [ "$last" = "$summary" ] ||
    fail "$what: $gaps, $whole, $last"
  if [ "$allocs" -ge "$n" ]; then
    echo "ok: $what: status $rc, $n pairs counted, $allocs alloc events ($last)"
  else
    fail "$what: $n pairs done, $allocs alloc events in the log"
  fi
}
for ext in zst gz; do
  run_until "term-$ext" "$work/term.jsonl.$ext" 30000
  check_ended "term-$ext" "$work/term.jsonl.$ext" 143 no-summary "$ext, SIGTERM at its default action"
  run "exec-$ext" "$work/exec.jsonl.$ext" --exec-after 30000
  check_ended "exec-$ext" "$work/exec.jsonl.$ext" 0 no-summary "$ext, exec of /bin/true"
  run_until "own-$ext" "$work/own.jsonl.$ext" 30000 --own-handler
  check_ended "own-$ext" "$work/own.jsonl.$ext" 0 summary "$ext, the program's own handler"
done

# (5) SIGKILL mid-run: whole lines, no gap.
for ext in zst gz; do
  log="$work/killed.jsonl.$ext"
  LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$log" \
    "$program" "$work/killed.count" >"$work/killed.out" 2>&1 &
  pid=$!
  for i in $(seq 1 600); do
    sleep 0.05
    [ "$(stat -c %s "$log" 2>/dev/null || echo 0)" -gt 300000 ] && break
  done
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  read -r allocs gaps last whole < <(decode "$log" 2>/dev/null | facts) ||
    { fail "$ext, SIGKILL: a broken line"; continue; }
  if [ "$gaps" = gapless ] && [ "$whole" = whole ] && [ "$allocs" -gt 5000 ]; then
    echo "ok: $ext, SIGKILL: $allocs alloc events, whole lines, no gap ($(stat -c %s "$log") bytes)"
  else
    fail "$ext, SIGKILL: $allocs allocs, $gaps, $whole"
  fi
done

# (6) A file size limit (64 KiB): the program's own status (7), one warning, whole lines.
for ext in zst gz; do
  log="$work/limited.jsonl.$ext"
  rc=0
  (ulimit -f 64 && LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$log" \
    exec "$program" "$work/limited.count" --exit-after 200000 >"$work/limited.out" 2>&1) || rc=$?
  [ "$rc" = 7 ] || fail "$ext, ulimit -f: exit status $rc (153: SIGXFSZ)"
  [ "$(cat "$work/limited.out")" = "cudapool: log $log: write failed (File too large): logging stopped; the program goes on" ] ||
    fail "$ext, ulimit -f: said: $(cat "$work/limited.out")"
  read -r allocs gaps last whole < <(decode "$log" 2>/dev/null | facts) ||
    { fail "$ext, ulimit -f: a broken line"; continue; }
  [ "$gaps" = gapless ] && [ "$whole" = whole ] && [ "$allocs" -gt 1000 ] &&
    [ "$(stat -c %s "$log")" -le 65536 ] &&
    echo "ok: $ext, ulimit -f 64: status 7, one warning, $allocs alloc events in whole lines" ||
    fail "$ext, ulimit -f: $allocs allocs, $gaps, $whole, $(stat -c %s "$log") bytes"
done

# (7) No library: plain under the name less the extension, with one warning.
log="$work/nolib.jsonl.zst"
rc=0
CUDAPOOL_TEST_COMPRESSION_LIBRARY=libcudapool-test-no-such-library.so.1 \
  run nolib "$log" --exit-after 1000
[ "$rc" = 7 ] || fail "no library: exit status $rc"
[ "$(cat "$work/nolib.out")" = "cudapool: log $log: zstd needs libzstd.so.1 (libcudapool-test-no-such-library.so.1: cannot open shared object file: No such file or directory): writing $work/nolib.jsonl uncompressed" ] ||
  fail "no library: said: $(cat "$work/nolib.out")"
[ ! -e "$log" ] || fail "no library: $log was made"
read -r allocs gaps last whole < <(facts <"$work/nolib.jsonl") || fail "no library: a broken line"
[ "${allocs:-0}" -ge 1000 ] && echo "ok: no library: $work/nolib.jsonl, plain, $allocs alloc events" ||
  fail "no library: $work/nolib.jsonl: ${allocs:-0} alloc events"
exit $status
