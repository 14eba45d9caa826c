#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/export_perfetto.sh: `cudapool export --perfetto` (docs/exports.md). Each fixture's trace
# and a three-rank set checked by check_viewers.py (valid JSON, one process per log named and
# sorted by rank, counter tracks whose allocated and reserved peaks are `cudapool report --json`'s,
# exactly and at their time, ts never going back); the ranks on one wall clock (start_unix_ns +
# t_ns - start_t_ns); --max-points and --max-instants; a large log (a few hundred thousand events):
# the file stays small and the peaks exact; what is not a readable log or a usable command line
# (exit 1 or 2, a message, no OUT or OUT.tmp left, an existing OUT untouched).
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
check() { python3 "$src/tests/cli/check_viewers.py" "$@"; }

# ---- every fixture, and three ranks at once --------------------------------------------------------
for name in normal killed expandable malformed viewers; do
  cudapool report --json "$fx/$name.jsonl" >"$tmp/$name.report.json"
  cudapool export --perfetto "$tmp/$name.json" "$fx/$name.jsonl" 2>"$tmp/err" ||
    fail "$name: export exit $?: $(cat "$tmp/err")"
  check perfetto "$tmp/$name.json" "$tmp/$name.report.json" --max-points 20000 ||
    fail "$name: the trace breaks a rule"
done
set3=("$fx/viewers-rank1.jsonl" "$fx/viewers.jsonl" "$fx/normal.jsonl")
cudapool report --json "${set3[@]}" >"$tmp/three.report.json"
"$src/scripts/cudapool" export --perfetto "$tmp/three.json" "${set3[@]}" 2>"$tmp/err" ||
  fail "three logs: exit $?: $(cat "$tmp/err")"
check perfetto "$tmp/three.json" "$tmp/three.report.json" || fail "three logs: a rule broken"
has "note: $fx/normal.jsonl: the header has no start_t_ns: its first event is put at its start_unix_ns" "$tmp/err"
has "wrote $tmp/three.json (a Perfetto trace of 3 logs" "$tmp/err"
python3 - "$tmp/three.json" <<'PY' || fail "three logs: names, order, metadata"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["displayTimeUnit"] == "ns"
ev = d["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
order = {e["pid"]: e["args"]["sort_index"] for e in ev if e["name"] == "process_sort_index"}
assert names == {1: "rank 1 | node6 | pid 6160 | device 0",
                 2: "rank 0 | node5 | pid 5150 | devices 0,1",      # RANK in its environment
                 3: "rank 2 | node1 | pid 4242 | device 0"}, names  # no rank: its place, 2
assert order == {1: 1, 2: 0, 3: 2}, order
tracks = sorted({(e["pid"], e["name"]) for e in ev if e["ph"] == "C"})
# four counters per device, a track each (chrome://tracing stacks one counter's arguments)
four = lambda dev: ["device %d %s" % (dev, c) for c in
                    ("allocated", "fenced (waiting for work on another stream)", "free",
                     "reserved")]
assert tracks == sorted([(1, n) for n in four(0)] + [(2, n) for n in four(0) + four(1)]
                        + [(3, n) for n in four(0)]), tracks
args = [e["args"] for e in ev if e["ph"] == "C"]
assert all(set(a) == {"bytes"} for a in args)
inst = sorted({(e["pid"], e["name"]) for e in ev if e["ph"] == "i"})
assert (2, "context_dropped") in inst and (2, "oom") in inst and (2, "stream_created") in inst \
    and (2, "segment_map") in inst and (2, "empty_cache") in inst and (3, "oom") in inst, inst
oom = [e for e in ev if e["ph"] == "i" and e["name"] == "oom" and e["pid"] == 2][0]
assert oom["args"]["cause"] == "shortage" and oom["args"]["device_free"] == 140000000000, oom
m = d["metadata"]["cudapool"]
assert m["schema"] == "cudapool.perfetto/1" and [l["clock"] for l in m["logs"]] == \
    ["start_t_ns", "start_t_ns", "first event"], m["logs"]
assert [l["rank_from"] for l in m["logs"]] == ["header", "header", "order"]
PY

# ---- one clock: rank 1 started 0.25 s after rank 0, each first event 1 ms after its start -------
cudapool export --perfetto "$tmp/two.json" "$fx/viewers.jsonl" "$fx/viewers-rank1.jsonl" 2>/dev/null
python3 - "$tmp/two.json" <<'PY' || fail "two ranks: not on one clock"
import json, sys
d = json.load(open(sys.argv[1]))
first = {}
for e in d["traceEvents"]:
    if e["ph"] in ("C", "i"):
        first.setdefault(e["pid"], []).append(e["ts"])
assert min(first[1]) == 1000.0 and min(first[2]) == 251000.0, {k: min(v) for k, v in first.items()}
assert d["metadata"]["cudapool"]["time_zero_unix_ns"] == 1795874400000000000
PY

# ---- --max-points, --max-instants ---------------------------------------------------------------
cudapool export --perfetto "$tmp/few.json" --max-points 10 --max-instants 1 "$fx/normal.jsonl" 2>/dev/null
check perfetto "$tmp/few.json" "$tmp/normal.report.json" --max-points 10 || fail "--max-points 10"
python3 - "$tmp/few.json" <<'PY' || fail "--max-instants 1"
import json, sys
d = json.load(open(sys.argv[1]))
inst = [e["name"] for e in d["traceEvents"] if e["ph"] == "i"]
assert inst.count("segment_alloc") == 1 and inst.count("oom") == 1, inst
left = d["metadata"]["cudapool"]["logs"][0]["instants_left_out"]
assert left == {"0 segment_alloc": 3}, left
PY

# ---- a large log with pool decisions: a bounded file, exact peaks ----------------------------------
python3 - "$tmp/big.jsonl" 250000 <<'PY'
import random, sys
out, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
MiB = 1 << 20
line = ('{"seq":%d,"t_ns":%d,"tid":1,"dev":0,"action":"%s","ptr":"0x%x","size":%d,'
        '"block_size":%d,"segment":"0x%x"}\n')
with open(out, "w") as f:
    f.write('{"schema":"cudapool.log/1","version":"0.1.0","pid":1,"host":"big",'
            '"start_unix_ns":1800000000000000000,"start_t_ns":1000,"conf":"","options":{},'
            '"devices":[{"id":0,"name":"x","total_memory":85899345920}]}\n')
    live, seq, t, nxt = [], 0, 1000, 1 << 32
    while seq < n:      # each block in a segment of its own: segment_alloc, alloc ... free, segment_free
        t += rng.randint(1, 2000)
        if live and (rng.random() < 0.5 or len(live) > 3000):
            ptr, size, bs, ss = live.pop(rng.randrange(len(live)))
            for a in ("free_requested", "free_completed"):
                seq += 1
                f.write(line % (seq, t, a, ptr, size, bs, ptr))
            seq += 1
            f.write(line % (seq, t, "segment_free", ptr, ss, ss, ptr))
        else:
            size = rng.choice([rng.randint(1, MiB), rng.randint(MiB, 64 * MiB)])
            bs = (size + 511) // 512 * 512
            ss = (bs + 2 * MiB - 1) // (2 * MiB) * 2 * MiB
            ptr, nxt = nxt, nxt + ss + 2 * MiB
            f.write(line % (seq + 1, t, "segment_alloc", ptr, ss, ss, ptr))
            f.write(line % (seq + 2, t, "alloc", ptr, size, bs, ptr))
            seq += 2
            live.append((ptr, size, bs, ss))
PY
cudapool report --json "$tmp/big.jsonl" >"$tmp/big.report.json"
cudapool export --perfetto "$tmp/big.json" "$tmp/big.jsonl" 2>"$tmp/err" || fail "big: exit $?"
# 20000 points, each four counter events (a track each) of about 60 bytes, and 2 x 2000 instants:
# a few MB, whatever the log's length
check perfetto "$tmp/big.json" "$tmp/big.report.json" --max-points 20000 --max-bytes 8000000 ||
  fail "big: a rule broken"

# ---- what cannot be exported -------------------------------------------------------------------
fails() { export_fails "$1" "$2" "$tmp/o.json" "${@:3}"; }
printf 'hello\n' >"$tmp/text.jsonl"
fails 1 "a missing second log" --perfetto "$tmp/o.json" "$fx/normal.jsonl" "$tmp/missing.jsonl"
has "cudapool export: cannot read $tmp/missing.jsonl" "$tmp/err"
fails 1 "a second log that is not a log" --perfetto "$tmp/o.json" "$fx/normal.jsonl" "$tmp/text.jsonl"
has "is not a cudapool log" "$tmp/err"
fails 1 "OUT in a missing directory" --perfetto "$tmp/nodir/o.json" "$fx/normal.jsonl"
fails 2 "--max-entries" --perfetto "$tmp/o.json" --max-entries 5 "$fx/normal.jsonl"
fails 2 "--max-points 5" --perfetto "$tmp/o.json" --max-points 5 "$fx/normal.jsonl"
fails 2 "--max-instants -1" --perfetto "$tmp/o.json" --max-instants -1 "$fx/normal.jsonl"
fails 2 "no log" --perfetto "$tmp/o.json"
echo old >"$tmp/keep.json"
rc=0
cudapool export --perfetto "$tmp/keep.json" "$fx/normal.jsonl" "$tmp/text.jsonl" 2>/dev/null || rc=$?
[ $rc -eq 1 ] && [ "$(cat "$tmp/keep.json")" = old ] && [ ! -e "$tmp/keep.json.tmp" ] ||
  fail "a failed export touched the existing OUT"
echo "export_perfetto: ok"
