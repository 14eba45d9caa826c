#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/log_hostile.sh: the log and the summary under a hostile program or destination (issue 26
# items 3, 4, 5, 7, 15), with the fake driver (tests/fakecuda) driven from Python through ctypes: a
# file size limit (ulimit -f) never kills the program; a FIFO whose reader stopped reading costs
# the log (one warning), never a hang; a program that closes all its descriptors keeps its whole
# log and never gets a log line in a file of its own; a rank or a name that would climb out of the
# log's folder or name a folder is refused; a summary with more blocks alive than it lists counts
# the rest. Each program prints "done" last: its own buffered stdout must survive. Not here: the
# launcher's pre-check (run_checks.sh), the unit tests of the same rules (tests/unit/test_log_*).
set -euo pipefail
lib="$CUDAPOOL_BUILD_DIR/shim/libcudapool.so"
# LD_PRELOAD: the shim, after the sanitizer runtime in a sanitizer build (tests/CMakeLists.txt).
preload="${CUDAPOOL_TEST_PRELOAD:-$lib}"
fake="$CUDAPOOL_BUILD_DIR/tests/fakecuda"
src="$CUDAPOOL_SOURCE_DIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$lib" ] && [ -f "$fake/libcuda.so.1" ] || { echo "log_hostile: shim or fake not built: skipped"; exit 0; }
unset CUDAPOOL_CONF PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF CUDAPOOL_LOG CUDAPOOL_SUMMARY \
  CUDAPOOL_DISABLE CUDAPOOL_LOG_LEVEL CUDAPOOL_LOG_BUFFER CUDAPOOL_BACKTRACE RANK \
  OMPI_COMM_WORLD_RANK SLURM_PROCID
tmp=$(mktemp -d)
readers=()
cleanup() {
  local pid
  for pid in "${readers[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/drive.py" <<'PY'
import ctypes, os, resource, signal, sys
mode, pairs, leaks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print("started")                      # buffered (stdout is a file): lost if the process is killed
if mode == "fsize":                   # a file size limit, as `ulimit -f` sets it
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)   # Python ignores it; a C program does not
    limit = int(sys.argv[4])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
ctx = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
def run_pairs(n):
    p = ctypes.c_uint64()
    for _ in range(n):
        assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(4096)) == 0
        assert cuda.cuMemFree_v2(p) == 0
run_pairs(pairs)
if mode == "daemon":
    # A daemon closes every descriptor but 0-2 (close_range(2) in os.closerange), then opens files
    # of its own: one of them takes the number the log had.
    log = os.path.realpath(os.environ["CUDAPOOL_LOG"])
    log_fd = [int(fd) for fd in os.listdir("/proc/self/fd")
              if os.path.realpath("/proc/self/fd/" + fd) == log]
    assert len(log_fd) == 1, log_fd
    os.closerange(3, 1 << 20)
    mine = os.open(sys.argv[4], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(mine, log_fd[0])
    others = [os.open(sys.argv[4], os.O_WRONLY | os.O_APPEND) for _ in range(8)]
    run_pairs(pairs)
    for fd in [mine, log_fd[0]] + others:
        os.write(fd, b"program data\n")
kept = []
for _ in range(leaks):
    p = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1000)) == 0
    kept.append(p.value)
print("done")
PY
# run ENV... -- ARGS: the driver under the shim, stdout to $tmp/out, stderr to $tmp/err; sets rc.
# A hang guard of its own: a program hung by the shim ends as a failure, not a stuck suite.
run() {
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  rc=0
  env LD_LIBRARY_PATH="$fake" LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    "${env[@]}" timeout -k 5 240 python3 "$tmp/drive.py" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
warnings() { grep '^cudapool: ' "$tmp/err" || true; }
# reader FIFO: a process that opens FIFO for reading and never reads.
stalled_reader() {
  mkfifo "$1"
  python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
open(sys.argv[1] + ".open", "w").close()
time.sleep(3600)' "$1" &
  readers+=($!)
  local i
  for i in $(seq 600); do [ -e "$1.open" ] && return; sleep 0.1; done
  fail "the reader of $1 did not open it"
}
summary_of() { tail -n 1 "$1" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["log_errors"]))'; }

# --- item 3: a file size limit ------------------------------------------------------------------
# The log passes the limit while the program runs: one warning, the program goes on, exit 0, its
# stdout whole; the summary line at exit goes past the limit too (SIGXFSZ killed it: exit 153).
run CUDAPOOL_LOG="$tmp/limited.jsonl" -- fsize 20000 0 100000
[ $rc -eq 0 ] || fail "ulimit -f, log: exit $rc (153: SIGXFSZ): $(warnings)"
[ "$(cat "$tmp/out")" = "started
done" ] || fail "ulimit -f, log: stdout lost: $(cat "$tmp/out")"
[ "$(warnings)" = "cudapool: log $tmp/limited.jsonl: write failed (File too large): logging stopped; the program goes on" ] ||
  fail "ulimit -f, log: warnings: $(warnings)"
# The summary file at exit: not written (too large), said once, then on stderr; exit 0.
run CUDAPOOL_SUMMARY="$tmp/limited-summary.txt" -- fsize 10 300 3000
[ $rc -eq 0 ] || fail "ulimit -f, summary: exit $rc (153: SIGXFSZ): $(warnings)"
[ "$(cat "$tmp/out")" = "started
done" ] || fail "ulimit -f, summary: stdout lost: $(cat "$tmp/out")"
warnings | grep -qF "cudapool: CUDAPOOL_SUMMARY: summary $tmp/limited-summary.txt: cannot write the summary (File too large); the summary goes to stderr" ||
  fail "ulimit -f, summary: warnings: $(warnings)"
# (stderr is a file here, under the same limit: the warning fits, the table does not.)
[ ! -e "$tmp/limited-summary.txt" ] || fail "ulimit -f, summary: a partial file was left"
echo "log_hostile: item 3 ok"

# --- item 4: a reader that stopped reading ------------------------------------------------------
# The log's FIFO: its reader opened it and never reads. Mid-run the pipe and then the ring fill up
# (CUDAPOOL_LOG_BUFFER=256): once the writer has made no progress for the stall limit, one
# warning, logging stops, the program runs on and exits 0 (before: it hung for ever).
stalled_reader "$tmp/log.fifo"
run CUDAPOOL_LOG="$tmp/log.fifo" CUDAPOOL_LOG_BUFFER=256 -- pairs 20000 0
[ $rc -eq 0 ] || fail "stalled log reader: exit $rc (124: hung): $(warnings)"
[ "$(cat "$tmp/out")" = "started
done" ] || fail "stalled log reader: stdout: $(cat "$tmp/out")"
[ "$(warnings)" = "cudapool: log $tmp/log.fifo: reader stalled (nothing written for 10 s): logging stopped; the program goes on" ] ||
  fail "stalled log reader: warnings: $(warnings)"
# The same FIFO again, its pipe still full: the header cannot go in either; no log, no hang.
run CUDAPOOL_LOG="$tmp/log.fifo" -- pairs 10 0
[ $rc -eq 0 ] || fail "full FIFO at the start: exit $rc (124: hung): $(warnings)"
[ "$(warnings)" = "cudapool: log $tmp/log.fifo: cannot write the header (reader stalled: nothing written for 10 s): no log" ] ||
  fail "full FIFO at the start: warnings: $(warnings)"
# Another such reader, and only the summary line at exit is too long for the pipe (3000 leaks):
# finish() does not wait for ever either.
stalled_reader "$tmp/log2.fifo"
run CUDAPOOL_LOG="$tmp/log2.fifo" -- pairs 10 3000
[ $rc -eq 0 ] || fail "stalled log reader at exit: exit $rc (124: hung): $(warnings)"
[ "$(warnings)" = "cudapool: log $tmp/log2.fifo: reader stalled (nothing written for 10 s): logging stopped; the program goes on" ] ||
  fail "stalled log reader at exit: warnings: $(warnings)"
# The summary's FIFO, a summary longer than the pipe holds: bounded the same way, then stderr.
stalled_reader "$tmp/summary.fifo"
run CUDAPOOL_SUMMARY="$tmp/summary.fifo" -- pairs 10 3000
[ $rc -eq 0 ] || fail "stalled summary reader: exit $rc (124: hung): $(warnings)"
warnings | grep -qxF "cudapool: CUDAPOOL_SUMMARY: summary $tmp/summary.fifo: cannot write the summary (reader stalled: nothing written for 10 s); the summary goes to stderr" ||
  fail "stalled summary reader: warnings: $(warnings)"
grep -q "Leak report, device 0: 3000 blocks" "$tmp/err" || fail "stalled summary reader: not on stderr"
echo "log_hostile: item 4 ok"

# --- item 5: a program that closes every descriptor ---------------------------------------------
# 200 pairs before, 200 after the daemon closed its descriptors and took the log's number for a
# file of its own: the log has all 800 events and its summary, the program's file only its lines.
run CUDAPOOL_LOG="$tmp/daemon.jsonl" -- daemon 200 0 "$tmp/daemon-data"
[ $rc -eq 0 ] && [ -z "$(warnings)" ] || fail "daemon: exit $rc: $(warnings)"
[ "$(sort -u "$tmp/daemon-data")" = "program data" ] ||
  fail "daemon: a log line in the program's file: $(grep -v '^program data$' "$tmp/daemon-data" | head -c 300)"
python3 "$src/tests/log_check.py" "$tmp/daemon.jsonl" >/dev/null ||
  fail "daemon: the log does not check"
[ "$(grep -c '"action":"alloc"' "$tmp/daemon.jsonl")" -eq 400 ] ||
  fail "daemon: $(grep -c '"action":"alloc"' "$tmp/daemon.jsonl") alloc events, not 400"
[ "$(summary_of "$tmp/daemon.jsonl")" = '{"write_failed": false, "records_lost": 0}' ] ||
  fail "daemon: summary: $(summary_of "$tmp/daemon.jsonl")"
echo "log_hostile: item 5 ok"

# --- item 15: a rank or a name that climbs out or names a folder --------------------------------
mkdir "$tmp/logs" "$tmp/work"
# Per-rank folders, logs/%r/run.jsonl: RANK=.. wrote $tmp/run.jsonl, outside logs/.
for rank in .. ../escaped; do
  RANK=$rank run CUDAPOOL_LOG="$tmp/logs/%r/run.jsonl" -- pairs 1 0
  [ $rc -eq 0 ] || fail "RANK=$rank: exit $rc"
  [ "$(warnings)" = "cudapool: log path \"$tmp/logs/%r/run.jsonl\": RANK \"$rank\" is not a rank for %r (letters, digits, '_' and '-' only): no log" ] ||
    fail "RANK=$rank: warnings: $(warnings)"
  [ -z "$(ls -A "$tmp/logs")" ] && [ ! -e "$tmp/run.jsonl" ] || fail "RANK=$rank: made a file"
done
for name in . ./ .. "$tmp/work" "$tmp/work/"; do
  (cd "$tmp/work" && run CUDAPOOL_LOG="$name" -- pairs 1 0
   [ $rc -eq 0 ] || fail "CUDAPOOL_LOG=$name: exit $rc"
   [ "$(warnings)" = "cudapool: log $name: a directory, not a file name: no log" ] ||
     fail "CUDAPOOL_LOG=$name: warnings: $(warnings)")
  [ -z "$(ls -A "$tmp/work")" ] && [ ! -e "$tmp/..1" ] || fail "CUDAPOOL_LOG=$name: made a file"
done
echo "log_hostile: item 15 ok"

# --- item 7: more blocks alive at exit than the summary lists ------------------------------------
# 5000 blocks of 1000 bytes: the log's summary line and CUDAPOOL_SUMMARY's leak report list the
# first 4096 and count the other 904 (their bytes: 904000 requested, 904 KiB in blocks).
run CUDAPOOL_LOG="$tmp/many.jsonl" CUDAPOOL_SUMMARY=stderr -- pairs 1 5000
[ $rc -eq 0 ] || fail "5000 leaks: exit $rc: $(warnings)"
[ "$(grep -c '^  ptr 0x' "$tmp/err")" -eq 4096 ] || fail "5000 leaks: $(grep -c '^  ptr 0x' "$tmp/err") listed"
grep -qxF "  ... and 904 more blocks (904.0 KiB)" "$tmp/err" || fail "5000 leaks: no '... and 904 more'"
omitted=$(tail -n 1 "$tmp/many.jsonl" | python3 -c 'import json, sys
s = json.load(sys.stdin); print(len(s["leaks"]), json.dumps(s["leaks_omitted"], sort_keys=True))')
[ "$omitted" = '4096 {"block_size": 925696, "count": 904, "size": 904000}' ] ||
  fail "5000 leaks: the summary line: $omitted"
echo "log_hostile: item 7 ok"

echo "log_hostile: ok"
