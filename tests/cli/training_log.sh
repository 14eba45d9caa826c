#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/training_log.sh: bench/make_training_log, the generator of training-like logs. What it
# writes must be a log the shim could have written (tests/log_check.py: fields, kinds, seq, the
# summary line) that cudapool-replay reproduces statistic by statistic, placing every segment at
# the log's address; 3 events an allocation on two threads, the kept tensors as the summary's
# leaks; `cudapool report` reads it without a problem; the same arguments give the same bytes (a
# file or stdout), another seed other bytes; --events writes whole steps up to at least N events;
# --requests-only writes requests alone (replay reproduces the summary there too); --backtrace N,
# --vary-shapes and --conf (expandable segments) give logs the replay reproduces as well; usage
# errors exit 2, an OUT that cannot be written 1, each with one line naming the problem.
set -euo pipefail
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
gen="$CUDAPOOL_BUILD_DIR/bench/make_training_log"
replay="$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
check() { python3 "$src/tests/log_check.py" --replay "$replay" "$@"; }
hasnt() { if grep -qiF -- "$1" "$2"; then fail "$2: unexpected: $1"; fi; }

# ---- a full log: valid, reproduced by the replay, shaped like the shim's --------------------------
"$gen" --steps 3 "$tmp/full.jsonl" 2>"$tmp/gen.txt" || fail "full: exit $?"
has "full.jsonl: " "$tmp/gen.txt"
has " events, 3 steps (1996 allocations a step), " "$tmp/gen.txt"
check "$tmp/full.jsonl" >"$tmp/check.txt" 2>&1 || fail "full: $(cat "$tmp/check.txt")"
has "replay equal on " "$tmp/check.txt"
"$replay" --json "$tmp/full.jsonl" >"$tmp/replay.json" || fail "full: replay exit $?"
python3 - "$tmp/full.jsonl" "$tmp/replay.json" <<'PY' || fail "full: not shaped like a shim log"
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
replay = json.load(open(sys.argv[2]))
head, summary, events = lines[0], lines[-1], lines[1:-1]
assert head["schema"] == "cudapool.log/1" and head["devices"][0]["name"] == "NVIDIA H200", head
assert head["options"]["max_split_size_mb"] == "unlimited" and head["conf"] == "", head
n = collections.Counter(e["action"] for e in events)
leaks = summary["leaks"]
# three events an allocation: every one but the kept ones is freed, and at once
assert n["free_requested"] == n["free_completed"] == n["alloc"] - len(leaks), (n, len(leaks))
# 3 steps of 1996, the weights (12 x 28 + 4), Adam's two states of each, cuBLAS's 3 on each thread
weights = 12 * 28 + 4
assert n["alloc"] == 3 * 1996 + 3 * weights + 6, n
assert len(leaks) == 3 * weights + 6, len(leaks)
assert n["segment_alloc"] == summary["devices"]["0"]["stats"]["num_device_alloc"] > 0, n
assert n["stream_created"] == n["stream_first_work"] == 1, n
assert len({e["tid"] for e in events}) == 2, "two threads"
assert all(a["t_ns"] < b["t_ns"] for a, b in zip(events, events[1:])), "time goes on"
allocs = [e for e in events if e["action"] == "alloc"]
assert all(e["latency_ns"] > 0 and "cache_hit" in e and "backtrace" not in e for e in allocs)
assert any(not e["cache_hit"] for e in allocs) and any(e["cache_hit"] for e in allocs)
# every leak is a kept tensor's alloc event (seq, time and thread)
by_seq = {e["seq"]: e for e in allocs}
for leak in leaks:
    e = by_seq[leak["seq"]]
    assert (e["ptr"], e["size"], e["t_ns"], e["tid"]) == (leak["ptr"], leak["size"], leak["t_ns"], leak["tid"]), leak
# the replay put each segment where the log did
c = replay["counts"]
assert c["segments_at_log_address"] == c["segment_alloc_events"] == n["segment_alloc"], c
assert c["unknown_frees"] == 0 and c["malformed_lines"] == 0 and c["failed_allocs"] == 0, c
PY
cudapool report "$tmp/full.jsonl" >"$tmp/report.txt" 2>"$tmp/report.err" || fail "report: exit $?"
has "the process exited normally" "$tmp/report.txt"
hasnt "malformed" "$tmp/report.txt"
hasnt "does not match" "$tmp/report.txt"
[ ! -s "$tmp/report.err" ] || fail "report: said on stderr: $(head -c 300 "$tmp/report.err")"

# ---- the same arguments, the same bytes; stdout too; another seed, other bytes ---------------------
# (the header's argv names OUT: the lines after it are compared)
"$gen" --steps 3 - 2>/dev/null >"$tmp/stdout.jsonl" || fail "stdout: exit $?"
cmp -s <(tail -n +2 "$tmp/full.jsonl") <(tail -n +2 "$tmp/stdout.jsonl") ||
  fail "the same arguments on stdout gave other lines"
mkdir "$tmp/again"
(cd "$tmp/again" && "$gen" --steps 3 full.jsonl 2>/dev/null) || fail "again: exit $?"
(cd "$tmp" && "$gen" --steps 3 full.jsonl 2>/dev/null) || fail "first: exit $?"
cmp -s "$tmp/full.jsonl" "$tmp/again/full.jsonl" || fail "the same arguments gave other bytes"
"$gen" --steps 3 --seed 2 - 2>/dev/null >"$tmp/seed2.jsonl" || fail "seed 2: exit $?"
if cmp -s <(tail -n +2 "$tmp/stdout.jsonl") <(tail -n +2 "$tmp/seed2.jsonl"); then
  fail "another seed gave the same lines"
fi

# ---- --events: whole steps until at least N events --------------------------------------------------
"$gen" --events 20000 "$tmp/events.jsonl" 2>/dev/null || fail "--events: exit $?"
python3 - "$tmp/events.jsonl" <<'PY' || fail "--events 20000: not whole steps up to 20000 events"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
summary = json.loads(lines[-1])
events = len(lines) - 2
assert summary["events"] == events and 20000 <= events < 20000 + 3 * 1996 + 100, events
assert summary["devices"]["0"]["stats"]["allocation.all.current"] == len(summary["leaks"])
PY

# ---- requests only: alloc and free_requested with the request's fields; the replay agrees ----------
"$gen" --steps 2 --requests-only "$tmp/requests.jsonl" 2>/dev/null || fail "requests-only: exit $?"
"$replay" --json "$tmp/requests.jsonl" >"$tmp/requests.json" || fail "requests-only: replay exit $?"
python3 - "$tmp/requests.jsonl" "$tmp/requests.json" <<'PY' || fail "requests-only: wrong log"
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
replay = json.load(open(sys.argv[2]))
summary, events = lines[-1], lines[1:-1]
n = collections.Counter(e["action"] for e in events)
assert set(n) == {"alloc", "free_requested"}, n
assert n["alloc"] == 2 * 1996 + 3 * (12 * 28 + 4) + 6, n
assert all(sorted(e) == sorted(["seq", "t_ns", "tid", "dev", "action", "ptr", "size"]) for e in events)
assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
want = summary["devices"]["0"]["stats"]
diff = {k: (v, replay["stats"].get(k)) for k, v in want.items() if replay["stats"].get(k) != v}
assert not diff, diff
assert replay["counts"]["unknown_frees"] == 0 and replay["counts"]["malformed_lines"] == 0
PY
cudapool report "$tmp/requests.jsonl" >"$tmp/requests.txt" 2>&1 || fail "report of requests: exit $?"
has "the process exited normally" "$tmp/requests.txt"

# ---- backtraces, varying shapes, expandable segments: still what the replay reproduces -------------
"$gen" --steps 2 --backtrace 8 "$tmp/bt.jsonl" 2>/dev/null || fail "--backtrace: exit $?"
check "$tmp/bt.jsonl" >"$tmp/check.txt" 2>&1 || fail "--backtrace 8: $(cat "$tmp/check.txt")"
python3 - "$tmp/bt.jsonl" <<'PY' || fail "--backtrace 8: frames missing"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
allocs = [e for e in lines[1:-1] if e["action"] == "alloc"]
assert all(len(e["backtrace"]) == 8 for e in allocs)
assert 10 < len({tuple(e["backtrace"]) for e in allocs}) < 64, "a few dozen call sites"
summary = lines[-1]
assert summary["modules"] and all(len(l["backtrace"]) == 8 for l in summary["leaks"])
assert all(" /opt/venv/" in f for l in summary["leaks"] for f in l["backtrace"]), "named frames"
PY
cudapool report "$tmp/bt.jsonl" >"$tmp/bt.txt" 2>&1 || fail "report of --backtrace 8: exit $?"
"$gen" --steps 4 --vary-shapes --conf expandable_segments:True "$tmp/es.jsonl" 2>/dev/null ||
  fail "--vary-shapes --conf: exit $?"
check "$tmp/es.jsonl" >"$tmp/check.txt" 2>&1 || fail "--vary-shapes, expandable: $(cat "$tmp/check.txt")"
grep -q '"action":"segment_map"' "$tmp/es.jsonl" || fail "expandable segments: no segment_map event"
grep -q '"conf":"expandable_segments:True"' "$tmp/es.jsonl" || fail "expandable segments: header conf"

# ---- usage errors and unwritable output ---------------------------------------------------------------
gen_fails() {  # RC TEXT ARGS...: exits RC with TEXT on stderr and no traceback or crash
  local want=$1 text=$2 rc=0
  shift 2
  "$gen" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "$*: exit $rc, not $want"
  has "$text" "$tmp/err"
}
gen_fails 2 "no OUT" --steps 1
gen_fails 2 "--backtrace: '17' is not a number from 0 to 16" --backtrace 17 "$tmp/x.jsonl"
gen_fails 2 "--events: 'lots' is not a number" --events lots "$tmp/x.jsonl"
gen_fails 2 "unknown option --bogus" --bogus "$tmp/x.jsonl"
gen_fails 2 "--conf: the settings string has errors" --conf max_split_size_mb:1 "$tmp/x.jsonl"
gen_fails 1 "cannot create $tmp/no/such/dir.jsonl" --steps 1 "$tmp/no/such/dir.jsonl"
gen_fails 1 "ran out of memory" --steps 1 --hidden 65536 "$tmp/x.jsonl"
if [ -w /dev/full ]; then gen_fails 1 "cannot write /dev/full" --steps 1 /dev/full; fi
echo "training_log: all checks passed"
