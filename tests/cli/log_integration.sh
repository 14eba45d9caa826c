#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/log_integration.sh: CUDAPOOL_LOG end to end, with the fake driver (tests/fakecuda)
# driven from Python through ctypes: every line parses and carries the documented fields; replay of
# the log reproduces its own summary line exactly; threads, fork, a kill, and bad paths.
set -euo pipefail
lib="$CUDAPOOL_BUILD_DIR/shim/libcudapool.so"
# LD_PRELOAD: the shim, after the sanitizer runtime in a sanitizer build (tests/CMakeLists.txt).
preload="${CUDAPOOL_TEST_PRELOAD:-$lib}"
# With python3 as the host LeakSanitizer is off: Debian's python3 leaks at exit by itself (not the
# shim's leaks; the instrumented fake-driver programs check those).
asan_for() {
  if [ "$1" = python3 ]; then echo "${ASAN_OPTIONS:-}:detect_leaks=0"; else echo "${ASAN_OPTIONS:-}"; fi
}
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
elif mode == "passthrough":
    # Allocation APIs the pool leaves alone: each must reach the driver and be logged.
    class Loc(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]
    class Prop(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("handle_types", ctypes.c_int), ("location", Loc),
                    ("win32", ctypes.c_void_p), ("flags", ctypes.c_ubyte * 8)]
    assert cuda.cuCtxSetCurrent(ctx) == 0
    size = 2 << 20
    prop = Prop(1, 0, Loc(1, 0))  # pinned, on device 0
    handle, va = ctypes.c_uint64(), ctypes.c_uint64()
    assert cuda.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_uint64(0)) == 0
    assert cuda.cuMemAddressReserve(ctypes.byref(va), ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_uint64(0), ctypes.c_uint64(0)) == 0
    assert cuda.cuMemMap(va, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_uint64(0)) == 0
    assert cuda.cuMemUnmap(va, ctypes.c_size_t(size)) == 0
    assert cuda.cuMemRelease(handle) == 0
    assert cuda.cuMemAddressFree(va, ctypes.c_size_t(size)) == 0
    host = ctypes.c_void_p()
    assert cuda.cuMemAllocHost_v2(ctypes.byref(host), ctypes.c_size_t(4096)) == 0
    assert cuda.cuMemFreeHost(host) == 0
    assert cuda.cuMemHostAlloc(ctypes.byref(host), ctypes.c_size_t(8192), ctypes.c_uint(0)) == 0
    assert cuda.cuMemFreeHost(host) == 0
    managed = ctypes.c_uint64()
    assert cuda.cuMemAllocManaged(ctypes.byref(managed), ctypes.c_size_t(4096), ctypes.c_uint(1)) == 0
    ordered = ctypes.c_uint64()
    assert cuda.cuMemAllocFromPoolAsync(ctypes.byref(ordered), ctypes.c_size_t(12288), ctypes.c_void_p(1), ctypes.c_void_p(0)) == 0
    assert cuda.cuMemFreeAsync(ordered, ctypes.c_void_p(0)) == 0
    print("handle", handle.value, "va", va.value)
elif mode == "reset":
    work(5, 400)              # leaves blocks allocated when the context goes
    assert cuda.cuDevicePrimaryCtxReset_v2(0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    work(6, 400)
elif mode == "hidden_reset":
    work(5, 400)
    assert cuda.fakecuda_reset_primary_unseen(0) == 0   # as cudaDeviceReset: no hook sees it
    work(6, 400)
elif mode == "two_contexts":
    # Two contexts of their own on device 0, a 1 MiB block in each, kept to the end.
    for _ in range(2):
        c = ctypes.c_void_p()
        assert cuda.cuCtxCreate_v2(ctypes.byref(c), 0, 0) == 0
        assert cuda.cuCtxSetCurrent(c) == 0
        p = ctypes.c_uint64()
        assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0
elif mode == "tight":
    # 64 MiB taken outside the pool (stream-ordered, passed through): the device runs out before
    # the pool's own reserved bytes reach its size, as a real device with other users does.
    assert cuda.cuCtxSetCurrent(ctx) == 0
    outside = ctypes.c_uint64()
    assert cuda.cuMemAllocAsync(ctypes.byref(outside), ctypes.c_size_t(64 << 20), ctypes.c_void_p(0)) == 0
    work(0, 6000)
elif mode == "loop":
    while True:
        work(3, 1000)
else:
    work(0, 6000)
PY
run() {
  LD_LIBRARY_PATH="$fake" LD_PRELOAD="$preload" ASAN_OPTIONS="$(asan_for "$1")" \
    FAKECUDA_DEVICE_MEMORY=4G "$@"
}

# check_log FILE [expect_summary]: tests/log_check.py (every line, field and type); prints its
# count line.
check_log() {
  local -a opt=()
  [ "${2:-1}" = 1 ] || opt=(--no-summary)
  python3 "$src/tests/log_check.py" "${opt[@]}" "$1"
}

# 1. One thread: fields, replay reproduces the summary line exactly, report runs.
CUDAPOOL_LOG="$tmp/one-%p.jsonl" run python3 "$tmp/drive.py" one || fail "logged run failed"
f=$(ls "$tmp"/one-*.jsonl)
[ "$(stat -c %a "$f")" = 600 ] || fail "log mode $(stat -c %a "$f")"
n=$(check_log "$f") || fail "log check failed"
python3 "$src/tests/log_check.py" --replay "$replay" --min-allocs 1000 "$f" >/dev/null ||
  fail "replay does not reproduce the summary line"
# The checker itself catches a wrong statistic, a broken line and a gap in seq.
python3 - "$f" "$tmp" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
s = json.loads(lines[-1]); s["devices"]["0"]["stats"]["allocated_bytes.all.peak"] += 512
open(sys.argv[2] + "/wrong-stat.jsonl", "w").write("\n".join(lines[:-1] + [json.dumps(s)]) + "\n")
open(sys.argv[2] + "/cut.jsonl", "w").write("\n".join(lines[:5] + [lines[5][:40]] + lines[6:]) + "\n")
open(sys.argv[2] + "/gap.jsonl", "w").write("\n".join(lines[:5] + lines[6:]) + "\n")
PY
for bad in wrong-stat cut gap; do
  if python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/$bad.jsonl" >/dev/null 2>&1; then
    fail "log_check.py accepted $bad.jsonl"
  fi
done
# It reads the log compressed as the shim writes it (gzip, zstd), and a cut compressed one fails.
gzip -c "$f" >"$tmp/one.jsonl.gz"
n_gz=$(python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/one.jsonl.gz") ||
  fail "log_check.py on the gzip copy"
[ "$n_gz" = "$(python3 "$src/tests/log_check.py" --replay "$replay" "$f")" ] || fail "gzip copy: $n_gz"
if command -v zstd >/dev/null; then
  zstd -qc "$f" >"$tmp/one.jsonl.zst"
  python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/one.jsonl.zst" >/dev/null ||
    fail "log_check.py on the zstd copy"
  head -c 3000 "$f" | zstd -qc >"$tmp/cut.jsonl.zst"
  out=$(python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/cut.jsonl.zst" 2>&1) &&
    fail "log_check.py accepted a cut zstd log"
  case "$out" in *"a line was cut"*) ;; *) fail "cut zstd log: $out" ;; esac
fi
"$replay" --json "$f" >"$tmp/replay.json" || fail "replay failed"
python3 - "$tmp/replay.json" <<'PY' || fail "replay did not place segments at the log's addresses"
import json, sys
counts = json.load(open(sys.argv[1]))["counts"]
assert counts["segments_at_log_address"] == counts["segment_alloc_events"] > 0, counts
PY
"$src/scripts/cudapool" report "$f" >"$tmp/report.txt" || fail "report failed"
grep -q "the process exited normally" "$tmp/report.txt" || fail "report: no normal exit"

# 1b. cudapool tune reads a log the shim wrote: the own setting's row is what the replay says.
"$CUDAPOOL_BUILD_DIR/tools/cudapool-tune" --json "$f" >"$tmp/tune.json" || fail "tune of a shim log failed"
python3 - "$tmp/tune.json" "$tmp/replay.json" "$replay" "$f" <<'PY' || fail "tune's own row disagrees with the replay"
import json, subprocess, sys
t = json.load(open(sys.argv[1]))
own = [r for r in t["logs"][0]["results"] if r["setting"] == "own"][0]
rep = json.loads(subprocess.run([sys.argv[3], "--json", sys.argv[4]], capture_output=True, text=True, check=True).stdout)
assert own["peak_reserved"] == rep["stats"]["reserved_bytes.all.peak"], (own, rep["stats"]["reserved_bytes.all.peak"])
assert own["device_allocs"] == rep["stats"]["num_device_alloc"]
PY

# 1c. A device that runs out: every segment the device refused is logged (segment_refused) and the
# replay refuses it at the same point, so the summary is reproduced exactly; a replay that models
# the device by its size alone does not reproduce it (64 MiB of it were taken outside the pool).
LD_LIBRARY_PATH="$fake" LD_PRELOAD="$preload" ASAN_OPTIONS="$(asan_for python3)" \
  FAKECUDA_DEVICE_MEMORY=256M CUDAPOOL_LOG="$tmp/tight.jsonl" python3 "$tmp/drive.py" tight \
  2>"$tmp/tight.err" || fail "tight run failed: $(tail -n 3 "$tmp/tight.err")"
grep -q '"action":"segment_refused"' "$tmp/tight.jsonl" || fail "no refused segment logged"
grep -q 'cudapool: out of memory on device 0' "$tmp/tight.err" || fail "no OOM explanation on stderr"
python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/tight.jsonl" >/dev/null ||
  fail "the replay of a run whose device ran out does not reproduce its summary"
"$replay" --no-log-addresses --json "$tmp/tight.jsonl" >"$tmp/tight-size-only.json"
python3 - "$tmp/tight.jsonl" "$tmp/tight-size-only.json" <<'PY' || fail "the refusals made no difference (the check above proves nothing)"
import json, sys
summary = [json.loads(l) for l in open(sys.argv[1])][-1]["devices"]["0"]["stats"]
replayed = json.load(open(sys.argv[2]))["stats"]
assert any(summary[k] != replayed.get(k) for k in summary)
PY

# 2. Four threads at once: one ordered log, still reproduced exactly by replay.
CUDAPOOL_LOG="$tmp/threads.jsonl" run python3 "$tmp/drive.py" threads || fail "threaded run failed"
python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/threads.jsonl" >/dev/null ||
  fail "threaded log check or replay failed"
python3 - "$tmp/threads.jsonl" <<'PY' || fail "the threaded log does not show 4 threads"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
tids = {json.loads(l).get("tid") for l in lines[1:-1]}
assert len(tids) >= 4, tids
PY

# 2a. Under other pool settings the replay still reproduces the summary (the header carries the
# settings): expandable segments (the log has segment_map, no segment_alloc), the same with pages
# in handles of 3 given back by idle release, and splitting, rounding, garbage collection and a
# memory fraction.
for conf in expandable_segments:True \
  expandable_segments:True,expandable_handle_mb:60,idle_release_ms:5 \
  max_split_size_mb:20,roundup_power2_divisions:4,garbage_collection_threshold:0.5,per_process_memory_fraction:0.25; do
  rm -f "$tmp/conf.jsonl"
  CUDAPOOL_CONF="$conf" CUDAPOOL_LOG="$tmp/conf.jsonl" run python3 "$tmp/drive.py" threads ||
    fail "run under $conf failed"
  python3 "$src/tests/log_check.py" --replay "$replay" --min-allocs 1000 "$tmp/conf.jsonl" >/dev/null ||
    fail "under $conf: log check or replay failed"
  if [ "$conf" = expandable_segments:True ]; then
    grep -q '"action":"segment_map"' "$tmp/conf.jsonl" && ! grep -q '"action":"segment_alloc"' "$tmp/conf.jsonl" ||
      fail "expandable segments asked for, but the log has no segment_map or has segment_alloc"
  fi
done

# 2b. The allocation APIs the pool passes through are logged, with the driver's answers.
out=$(CUDAPOOL_LOG="$tmp/pass.jsonl" run python3 "$tmp/drive.py" passthrough) || fail "pass-through run failed"
check_log "$tmp/pass.jsonl" >/dev/null || fail "pass-through log check failed"
python3 - "$tmp/pass.jsonl" "$out" <<'PY' || fail "pass-through events missing or wrong"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[1:-1]]
_, handle, _, va = sys.argv[2].split()
by = {}
for e in events:
    by.setdefault(e["action"], []).append(e)
want = {"vmm_create": 1, "vmm_map": 1, "vmm_unmap": 1, "vmm_release": 1, "alloc_host": 2,
        "free_host": 2, "alloc_managed": 1, "alloc_async": 1, "free_async": 1}
got = {a: len(by.get(a, [])) for a in want}
assert got == want, got
assert by["vmm_create"][0]["ptr"] == hex(int(handle)) and by["vmm_create"][0]["size"] == 2 << 20
assert by["vmm_release"][0]["ptr"] == hex(int(handle))
assert by["vmm_map"][0]["ptr"] == hex(int(va)) and by["vmm_map"][0]["size"] == 2 << 20
assert [e["size"] for e in by["alloc_host"]] == [4096, 8192]
assert by["alloc_async"][0]["size"] == 12288 and by["free_async"][0]["ptr"] == by["alloc_async"][0]["ptr"]
assert all("error" not in e for e in events), [e for e in events if "error" in e]
PY

# 2b'. A context reset drops the pool: one context_dropped event for its device, and the replay
# (which starts that device afresh there) still reproduces the summary of the new pool.
CUDAPOOL_LOG="$tmp/reset.jsonl" run python3 "$tmp/drive.py" reset || fail "reset run failed"
python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/reset.jsonl" >/dev/null ||
  fail "reset log: check or replay failed: $(python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/reset.jsonl" 2>&1 | cut -c1-300)"
[ "$(grep -c '"action":"context_dropped"' "$tmp/reset.jsonl")" = 1 ] ||
  fail "reset log: want one context_dropped event"
grep '"action":"context_dropped"' "$tmp/reset.jsonl" | grep '"dev":0' >/dev/null ||
  fail "reset log: context_dropped without its device"

# 2b''. Several contexts on one device (tests/gpu/contexts.cpp through the fake, three left alive
# at exit): each context's events carry its number ("ctx"), and the replay, a pool per device and
# number, reproduces the summary that sums the device's pools.
if [ -x "$fake/gpu_contexts" ]; then
  CUDAPOOL_LOG="$tmp/contexts.jsonl" run "$fake/gpu_contexts" 30 10 200 1 >"$tmp/contexts.out" ||
    fail "contexts run failed: $(tail -n 3 "$tmp/contexts.out")"
  python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/contexts.jsonl" >/dev/null ||
    fail "contexts log: check or replay failed: $(python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/contexts.jsonl" 2>&1 | cut -c1-300)"
  grep -q '"ctx":2' "$tmp/contexts.jsonl" || fail "contexts log: no event of a third context (\"ctx\":2)"
  grep -q '"ctx":[0-9]*,"action":"context_dropped"' "$tmp/contexts.jsonl" ||
    fail "contexts log: no context_dropped event names its context"
  # The report drops only the dropped context's blocks: what it computes from the events agrees
  # with the summary (before "ctx", reserved at exit disagreed and 14 frees were of unknown blocks).
  "$src/scripts/cudapool" report --json "$tmp/contexts.jsonl" >"$tmp/contexts-report.json" ||
    fail "report of the contexts log failed"
  python3 - "$tmp/contexts-report.json" <<'PY' || fail "report of the contexts log: $(head -c 600 "$tmp/contexts-report.json")"
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["problem_count"] == 0, rep["problems"]
assert not any("in the summary" in n for n in rep["notes"]), rep["notes"]
assert any("contexts' pools" in n for n in rep["notes"]), rep["notes"]
PY
fi

# The same when the reset reaches the driver through no hook (cudart's cudaDeviceReset): the shim
# finds it by the context's id and logs it all the same.
CUDAPOOL_LOG="$tmp/hidden.jsonl" run python3 "$tmp/drive.py" hidden_reset || fail "hidden reset run failed"
python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/hidden.jsonl" >/dev/null ||
  fail "hidden reset log: check or replay failed: $(python3 "$src/tests/log_check.py" --replay "$replay" "$tmp/hidden.jsonl" 2>&1 | cut -c1-300)"
[ "$(grep -c '"action":"context_dropped"' "$tmp/hidden.jsonl")" = 1 ] ||
  fail "hidden reset log: want one context_dropped event"
# The report: the blocks that went with the context are neither leaks nor still allocated, and
# what it computes from the events agrees with the summary line at exit.
"$src/scripts/cudapool" report --json "$tmp/hidden.jsonl" >"$tmp/hidden-report.json" ||
  fail "report of the hidden reset log failed"
python3 - "$tmp/hidden-report.json" <<'PY' || fail "report of the hidden reset log: wrong notes"
import json, sys
rep = json.load(open(sys.argv[1]))
notes = rep["notes"]
assert any("dropped with its context 1 time(s)" in n for n in notes), notes
assert not any("in the summary" in n for n in notes), notes
PY

# Two contexts on one device: the summary has one entry for the device, their pools summed.
CUDAPOOL_LOG="$tmp/twoctx.jsonl" run python3 "$tmp/drive.py" two_contexts || fail "two-context run failed"
python3 - "$tmp/twoctx.jsonl" <<'PY' || fail "two contexts on one device: the summary is not one summed entry"
import json, sys
last = open(sys.argv[1]).read().splitlines()[-1]
pairs = json.loads(last, object_pairs_hook=lambda kv: kv)  # keeps duplicate keys
devices = dict(pairs)["devices"]
assert [k for k, _ in devices] == ["0"], devices
stats = dict(dict(devices[0][1])["stats"])
assert stats["allocation.all.current"] == 2 and stats["allocated_bytes.all.current"] == 2 << 20, stats
assert len(dict(pairs)["leaks"]) == 2
PY

# 2c. A small ring (CUDAPOOL_LOG_BUFFER) loses nothing: 4 threads keep the hooks waiting for room.
CUDAPOOL_LOG_BUFFER=256 CUDAPOOL_LOG="$tmp/small.jsonl" run python3 "$tmp/drive.py" threads ||
  fail "small-ring run failed"
python3 "$src/tests/log_check.py" --replay "$replay" --min-allocs 5000 "$tmp/small.jsonl" >/dev/null ||
  fail "small-ring log incomplete or not reproduced by replay"
err=$(CUDAPOOL_LOG_BUFFER=12x CUDAPOOL_LOG="$tmp/badbuf.jsonl" run python3 "$tmp/drive.py" one 2>&1 >/dev/null) ||
  fail "a bad CUDAPOOL_LOG_BUFFER stopped the program"
[ "$(echo "$err" | grep -c 'CUDAPOOL_LOG_BUFFER=12x')" = 1 ] || fail "bad CUDAPOOL_LOG_BUFFER: want one warning, got: $err"
check_log "$tmp/badbuf.jsonl" >/dev/null || fail "no log with the default ring after a bad CUDAPOOL_LOG_BUFFER"

# 3. fork: the child writes nothing into the parent's log.
child=$(CUDAPOOL_LOG="$tmp/fork.jsonl" run python3 "$tmp/drive.py" fork | sed -n 's/^child //p')
[ -n "$child" ] || fail "fork run failed"
check_log "$tmp/fork.jsonl" >/dev/null || fail "fork log check failed"
if grep -q "\"tid\":$child," "$tmp/fork.jsonl"; then fail "the child wrote into the parent's log"; fi
[ "$(ls "$tmp"/fork.jsonl* | wc -l)" = 1 ] || fail "the child made a log of its own"

# 4. A kill: every line already written is complete JSON (no summary line). The kill comes once
# the header and an event are in the file, polled with a deadline rather than after a fixed sleep
# (under a sanitizer the program takes over a second to get there).
CUDAPOOL_LOG="$tmp/killed.jsonl" LD_LIBRARY_PATH="$fake" LD_PRELOAD="$preload" \
  ASAN_OPTIONS="$(asan_for python3)" python3 "$tmp/drive.py" loop &
pid=$!
deadline=$((SECONDS + 120))
until [ -f "$tmp/killed.jsonl" ] && { IFS= read -r header && IFS= read -r _; } <"$tmp/killed.jsonl" &&
      [[ $header == *'"schema":"cudapool.log/1"'* ]]; do
  kill -0 "$pid" 2>/dev/null || fail "the looping program ended before its log had a header and an event"
  [ $SECONDS -lt $deadline ] || { kill -9 "$pid"; fail "no header and event in the log after 120 s"; }
  sleep 0.05
done
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
check_log "$tmp/killed.jsonl" 0 >/dev/null || fail "a killed process left a broken line"
grep -q "no summary line: the process was killed, crashed or the log was cut short" \
  <<<"$("$src/scripts/cudapool" report "$tmp/killed.jsonl")" ||
  fail "report of a killed log"

# 5. Bad paths: one warning, the program goes on, nothing overwritten.
err=$(CUDAPOOL_LOG="$tmp/no/such/dir/x.jsonl" run python3 "$tmp/drive.py" one 2>&1 >/dev/null) ||
  fail "an unwritable log path stopped the program"
[ "$(echo "$err" | grep -c cudapool)" = 1 ] || fail "expected one warning, got: $err"
err=$(CUDAPOOL_LOG="$tmp/bad-%q.jsonl" run python3 "$tmp/drive.py" one 2>&1 >/dev/null) ||
  fail "a bad template stopped the program"
grep -q "%q" <<<"$err" || fail "bad template not reported: $err"
echo keep >"$tmp/exists.jsonl"
CUDAPOOL_LOG="$tmp/exists.jsonl" run python3 "$tmp/drive.py" one 2>/dev/null || fail "run failed"
[ "$(cat "$tmp/exists.jsonl")" = keep ] || fail "an existing file was overwritten"
check_log "$tmp/exists.jsonl.1" >/dev/null || fail "no NAME.1 log"

# 6. The ranks of a job (issue 20): the header names each process's rank (RANK, as torchrun sets
# it), so the report orders the logs by rank whatever order they are given in.
RANK=1 CUDAPOOL_LOG="$tmp/job-%r.jsonl" run python3 "$tmp/drive.py" one || fail "rank 1 failed"
RANK=0 CUDAPOOL_LOG="$tmp/job-%r.jsonl" run python3 "$tmp/drive.py" one || fail "rank 0 failed"
check_log "$tmp/job-1.jsonl" >/dev/null || fail "the rank-1 log"
PYTHONPATH="$src/scripts" python3 -m cudapool_analysis report --json "$tmp/job-1.jsonl" \
  "$tmp/job-0.jsonl" >"$tmp/job.json" || fail "report of the two ranks"
python3 - "$tmp/job-1.jsonl" "$tmp/job.json" <<'PY' || fail "the ranks are not the headers'"
import json, sys
head = json.loads(open(sys.argv[1]).readline())
assert head["rank"] == 1 and head["rank_from"] == "RANK", head
ranks = json.load(open(sys.argv[2]))["ranks"]
assert [(r["rank"], r["rank_from"]) for r in ranks] == [(0, "header"), (1, "header")], ranks
assert ranks[0]["log"].endswith("job-0.jsonl"), ranks
PY
echo "log_integration: ok (single-thread log: $n)"
