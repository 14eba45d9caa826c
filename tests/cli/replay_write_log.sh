#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/replay_write_log.sh: `cudapool-replay --write-log OUT`: the pool's decisions during a
# replay written as a log. It must be a valid cudapool.log/1 file (tests/log_check.py) whose
# summary line is the replay's own statistics and which replays to them again; one alloc event per
# replayed allocation and one segment_alloc per device allocation; a free held behind a reuse
# fence in the logged run stays fenced (free_requested, later free_completed) in the written log;
# the header carries the source's host, pid and clocks; an inherited descriptor (/dev/fd/N) takes
# the log; and bad output paths fail cleanly.
set -euo pipefail
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
src="$CUDAPOOL_SOURCE_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
log="$src/examples/logs/training-loop.jsonl"

"$bin" --json --write-log "$tmp/pool.jsonl" "$log" >"$tmp/replay.json" || fail "--write-log exited $?"
python3 "$src/tests/log_check.py" --replay "$bin" "$tmp/pool.jsonl" >"$tmp/check.txt" 2>&1 ||
  fail "written log: $(tail -n 5 "$tmp/check.txt")"
python3 - "$tmp/replay.json" "$tmp/pool.jsonl" "$log" <<'PY' || fail "written log does not match the replay"
import collections, json, sys
replay = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
source = [json.loads(l) for l in open(sys.argv[3])]
head, summary, events = lines[0], lines[-1], lines[1:-1]
assert head["executable"] == "cudapool-replay", head["executable"]
assert head["host"] == source[0]["host"] and head["pid"] == source[0]["pid"], head
assert summary["action"] == "summary"
stats = summary["devices"]["0"]["stats"]
assert stats == replay["stats"], [k for k in stats if stats[k] != replay["stats"].get(k)]
n = collections.Counter(e["action"] for e in events)
assert n["alloc"] == replay["counts"]["allocs"] == sum(1 for e in source if e.get("action") == "alloc"), n
assert n["segment_alloc"] == stats["num_device_alloc"] > 0, n
assert n["free_requested"] == n["free_completed"] == n["alloc"], n
assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
# each event has the time of the source event that caused it: times never go backwards here
assert all(a["t_ns"] <= b["t_ns"] for a, b in zip(events, events[1:]))
assert all("block_size" in e and "segment" in e for e in events if e["action"] == "alloc")
PY

# a free the logged run held behind a fence (its free_completed came later) stays fenced
cat >"$tmp/fenced.jsonl" <<'JSONL'
{"schema":"cudapool.log/1","version":"0.1.0","pid":7,"host":"h","executable":"x","argv":[],"start_time":"2026-12-01T00:00:00.000000Z","start_unix_ns":1795996800000000000,"start_t_ns":1000,"conf":"","conf_source":"","options":{"reuse_fence":"auto"},"devices":[{"id":0,"name":"g","total_memory":8589934592}]}
{"seq":1,"t_ns":2000,"tid":5,"dev":0,"action":"alloc","ptr":"0x1000","size":4194304}
{"seq":2,"t_ns":3000,"tid":5,"dev":0,"action":"free_requested","ptr":"0x1000","size":4194304}
{"seq":3,"t_ns":4000,"tid":5,"dev":0,"action":"alloc","ptr":"0x2000","size":4194304}
{"seq":4,"t_ns":5000,"tid":5,"dev":0,"action":"free_completed","ptr":"0x1000","size":4194304}
{"seq":5,"t_ns":6000,"tid":6,"dev":0,"action":"alloc","ptr":"0x3000","size":1000}
JSONL
"$bin" --write-log "$tmp/fenced-pool.jsonl" "$tmp/fenced.jsonl" >/dev/null || fail "fenced: exit $?"
python3 - "$tmp/fenced-pool.jsonl" <<'PY' || fail "fenced free not kept in the written log"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["start_t_ns"] == 1000 and lines[0]["start_unix_ns"] == 1795996800000000000
ev = [(e["action"], e["t_ns"], e["tid"]) for e in lines[1:-1]]
acts = [a for a, _, _ in ev]
i = acts.index("free_requested")
j = acts.index("free_completed")
assert acts[i + 1] != "free_completed" and j > i + 1, acts   # not at once: fenced
assert ev[i][1] == 3000, ev        # the free's own time; the pool takes the block back (and
assert ev[j][1:] == (5000, 5), ev  # says free_completed) at the source's free_completed
assert ev[-1][2] == 6 and ev[-1][0] == "alloc", ev             # the next request: its thread
PY

# an inherited descriptor (/dev/fd/N: how tests/oracle/replayed.py hands the replay a file without a
# name): the same log as a named file, the command line in the header aside
"$bin" --write-log /dev/fd/3 "$log" >/dev/null 3>"$tmp/fd.jsonl" || fail "--write-log /dev/fd/3: exit $?"
cmp -s <(tail -n +2 "$tmp/fd.jsonl") <(tail -n +2 "$tmp/pool.jsonl") ||
  fail "--write-log /dev/fd/3 wrote another log"

# bad output paths: a clear message, nothing left behind
set +e
"$bin" --write-log "$tmp/no/such/dir/x.jsonl" "$log" >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ $rc -eq 1 ] || fail "unwritable directory: exit $rc, not 1"
grep -q "cannot create $tmp/no/such/dir/x.jsonl" "$tmp/err" || fail "no message: $(cat "$tmp/err")"
set +e
"$bin" --write-log "$log" "$log" >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ $rc -eq 2 ] || fail "writing over the input: exit $rc, not 2"
[ -s "$log" ] || fail "the input was overwritten"
if [ -w /dev/full ]; then
  set +e
  "$bin" --write-log /dev/full "$log" >/dev/null 2>"$tmp/err"; rc=$?
  set -e
  [ $rc -eq 1 ] || fail "/dev/full: exit $rc, not 1"
  grep -q "cannot write /dev/full" "$tmp/err" || fail "/dev/full: no message: $(cat "$tmp/err")"
  [ -c /dev/full ] || fail "/dev/full was removed"
fi
echo "replay_write_log: ok"
