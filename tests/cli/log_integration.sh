#!/usr/bin/env bash
# tests/cli/log_integration.sh: CUDAPOOL_LOG end to end, with the fake driver (tests/fakecuda)
# driven from Python through ctypes: every line parses and carries the documented fields; replay of
# the log reproduces its own summary line exactly; threads, fork, a kill, and bad paths.
set -euo pipefail
lib="$CUDAPOOL_BUILD_DIR/shim/libcudapool.so"
fake="$CUDAPOOL_BUILD_DIR/tests/fakecuda"
replay="$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
src="$CUDAPOOL_SOURCE_DIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$lib" ] && [ -f "$fake/libcuda.so.1" ] || { echo "log_integration: shim or fake not built: skipped"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/drive.py" <<'PY'
import ctypes, os, random, sys, threading, time
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
ctx = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
def work(seed, n):
    assert cuda.cuCtxSetCurrent(ctx) == 0
    rng = random.Random(seed); live = []
    for _ in range(n):
        if live and rng.random() < 0.5:
            p = live.pop(rng.randrange(len(live)))
            assert cuda.cuMemFree_v2(ctypes.c_uint64(p)) == 0
        else:
            p = ctypes.c_uint64()
            size = rng.choice([rng.randint(1, 1 << 20), rng.randint(1 << 20, 24 << 20)])
            if cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)) == 0:
                live.append(p.value)
    return live
mode = sys.argv[1]
if mode == "threads":
    ts = [threading.Thread(target=work, args=(s, 3000)) for s in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
elif mode == "fork":
    work(1, 500)
    pid = os.fork()
    if pid == 0:
        work(2, 200)          # the child pools nothing and logs nothing
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0, status
    print("child", pid)
elif mode == "loop":
    while True:
        work(3, 1000)
else:
    work(0, 6000)
PY
run() { LD_LIBRARY_PATH="$fake" LD_PRELOAD="$lib" FAKECUDA_DEVICE_MEMORY=4G "$@"; }

check_log() {  # check_log FILE [expect_summary]
  python3 - "$1" "${2:-1}" <<'PY'
import json, sys
path, want_summary = sys.argv[1], sys.argv[2] == "1"
lines = open(path).read().splitlines()
objs = [json.loads(l) for l in lines]          # every line is complete JSON
h = objs[0]
for k, t in [("schema", str), ("version", str), ("pid", int), ("host", str), ("executable", str),
             ("argv", list), ("start_time", str), ("start_unix_ns", int), ("conf", str),
             ("options", dict), ("devices", list)]:
    assert isinstance(h.get(k), t), ("header", k, h.get(k))
assert h["schema"] == "cudapool.log/1"
events = [o for o in objs[1:] if o.get("action") != "summary"]
for e in events:
    for k, t in [("seq", int), ("t_ns", int), ("tid", int), ("dev", int), ("action", str),
                 ("ptr", str), ("size", int)]:
        assert isinstance(e.get(k), t), ("event", k, e)
    assert e["ptr"].startswith("0x")
    if e["action"] == "alloc":
        assert isinstance(e["block_size"], int) and e["segment"].startswith("0x"), e
        assert isinstance(e["cache_hit"], bool), e
seqs = [e["seq"] for e in events]
assert seqs == list(range(1, len(seqs) + 1)), "seq not 1..N in file order"
summ = objs[-1]
if want_summary:
    assert summ.get("action") == "summary" and "0" in summ["devices"], summ.keys()
    assert isinstance(summ["leaks"], list)
    assert summ["log_errors"]["write_failed"] is False
print(len(events))
PY
}

# 1. One thread: fields, replay reproduces the summary line exactly, report runs.
CUDAPOOL_LOG="$tmp/one-%p.jsonl" run python3 "$tmp/drive.py" one || fail "logged run failed"
f=$(ls "$tmp"/one-*.jsonl)
[ "$(stat -c %a "$f")" = 600 ] || fail "log mode $(stat -c %a "$f")"
n=$(check_log "$f") || fail "log check failed"
"$replay" --json "$f" >"$tmp/replay.json" || fail "replay failed"
python3 - "$f" "$tmp/replay.json" <<'PY' || fail "replay does not reproduce the summary line"
import json, sys
summ = json.loads(open(sys.argv[1]).read().splitlines()[-1])
rep = json.load(open(sys.argv[2]))
a, b = summ["devices"]["0"]["stats"], rep["stats"]
diff = {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}
assert not diff, diff
assert rep["unknown_frees"] == 0 and rep["malformed_lines"] == 0
assert rep["counts"]["segments_at_log_address"] == rep["counts"]["segment_alloc_events"] > 0
PY
python3 "$src/scripts/cudapool_report.py" "$f" >"$tmp/report.txt" || fail "report failed"
grep -q "the process exited normally" "$tmp/report.txt" || fail "report: no normal exit"

# 2. Four threads at once: one ordered log, still reproduced exactly by replay.
CUDAPOOL_LOG="$tmp/threads.jsonl" run python3 "$tmp/drive.py" threads || fail "threaded run failed"
check_log "$tmp/threads.jsonl" >/dev/null || fail "threaded log check failed"
"$replay" --json "$tmp/threads.jsonl" >"$tmp/rt.json"
python3 - "$tmp/threads.jsonl" "$tmp/rt.json" <<'PY' || fail "threaded replay differs"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
tids = {json.loads(l).get("tid") for l in lines[1:-1]}
assert len(tids) >= 4, tids
a = json.loads(lines[-1])["devices"]["0"]["stats"]; b = json.load(open(sys.argv[2]))["stats"]
assert all(a[k] == b.get(k) for k in a), [(k, a[k], b.get(k)) for k in a if a[k] != b.get(k)]
PY

# 3. fork: the child writes nothing into the parent's log.
child=$(CUDAPOOL_LOG="$tmp/fork.jsonl" run python3 "$tmp/drive.py" fork | sed -n 's/^child //p')
[ -n "$child" ] || fail "fork run failed"
check_log "$tmp/fork.jsonl" >/dev/null || fail "fork log check failed"
if grep -q "\"tid\":$child," "$tmp/fork.jsonl"; then fail "the child wrote into the parent's log"; fi
[ "$(ls "$tmp"/fork.jsonl* | wc -l)" = 1 ] || fail "the child made a log of its own"

# 4. A kill: every line already written is complete JSON (no summary line).
CUDAPOOL_LOG="$tmp/killed.jsonl" LD_LIBRARY_PATH="$fake" LD_PRELOAD="$lib" python3 "$tmp/drive.py" loop &
pid=$!
sleep 1
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
check_log "$tmp/killed.jsonl" 0 >/dev/null || fail "a killed process left a broken line"
python3 "$src/scripts/cudapool_report.py" "$tmp/killed.jsonl" | grep -q "did not exit normally" ||
  fail "report of a killed log"

# 5. Bad paths: one warning, the program goes on, nothing overwritten.
err=$(CUDAPOOL_LOG="$tmp/no/such/dir/x.jsonl" run python3 "$tmp/drive.py" one 2>&1 >/dev/null) ||
  fail "an unwritable log path stopped the program"
[ "$(echo "$err" | grep -c cudapool)" = 1 ] || fail "expected one warning, got: $err"
err=$(CUDAPOOL_LOG="$tmp/bad-%q.jsonl" run python3 "$tmp/drive.py" one 2>&1 >/dev/null) ||
  fail "a bad template stopped the program"
echo "$err" | grep -q "%q" || fail "bad template not reported: $err"
echo keep >"$tmp/exists.jsonl"
CUDAPOOL_LOG="$tmp/exists.jsonl" run python3 "$tmp/drive.py" one 2>/dev/null || fail "run failed"
[ "$(cat "$tmp/exists.jsonl")" = keep ] || fail "an existing file was overwritten"
check_log "$tmp/exists.jsonl.1" >/dev/null || fail "no NAME.1 log"
echo "log_integration: ok ($n events in the single-thread log)"
