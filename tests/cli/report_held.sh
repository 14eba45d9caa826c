#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_held.sh: memory held over time (issue 31; docs/report.md, "Held over time"):
# `cudapool report` (text and --json) gives each device's, and all devices' together, time-weighted
# mean of allocated and of reserved bytes over the log's span and how long reserved bytes stayed
# above a level (half the peak, or --level), on logs whose figures were worked out by hand:
#
# tests/cli/fixtures/held.jsonl, two devices, seconds from 1 to 11 (a 10 s span), events sharing
# timestamps (two at 1 s, at 2 s, at 3 s; five at 4 s) and one stamped before the one ahead of it
# (8.5 s after 9 s: it counts at 9 s, the clock never runs back):
#   device 0 reserved  20 MiB 1-3 s, 80 MiB 3-5 s, 20 MiB 5-11 s: 320 MiB s, mean 32 MiB; peak 80,
#                      above 40 MiB (half) 2 s = 20%; above 20 MiB (--level 0.25: strictly) 2 s
#            allocated 8 MiB 1-3 s, 68 MiB 3-4 s, 8 MiB 4-9 s, 12 MiB for no time at 9 s, 8 MiB
#                      9-10 s, 0 to 11 s: 132 MiB s, mean 13.2 MiB = 13841203.2 -> 13841203 bytes
#   device 1 reserved  40 MiB 2-4 s: 80 MiB s, mean 8 MiB; above 20 MiB 2 s
#            allocated 16 MiB 2-4 s: 32 MiB s, mean 3.2 MiB -> 3355443 bytes
#   together reserved  20, 60, 120, 80, 20 MiB from 1, 2, 3, 4, 5 s: 400 MiB s, mean 40 MiB; peak 120
#                      MiB at 3 s (seq 5); above 60 MiB (half; 60 MiB at 2-3 s is not above) 2 s
#            allocated 8, 24, 84, 8, 0 MiB from 1, 2, 3, 4, 10 s: 164 MiB s, mean 17196646 bytes
# and --level 20MiB, 0.25, 16M, 1.0 on it; tests/cli/fixtures/held-one-event.jsonl (a single
# event: no time span, said so, no figure divided by zero) and a log of three events at one time.
# The level's forms: what the report takes, the engine takes (and refuses) alike; a bad one is a
# usage error. Not here: the page (report_html.sh), the agreement with the oracle on every log of
# the suite (analyze_agree.sh), the bounded table (tests/unit/test_analyze_held.cpp).
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
engine="$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze"
[ -x "$engine" ] || fail "no $engine (build it)"
export CUDAPOOL_ANALYZE="$engine"
log="$fx/held.jsonl"

# ---- --json: the figures worked out by hand ------------------------------------------------------
cudapool report --json "$log" >"$tmp/half.json" || fail "--json: exit $?"
for level in 20MiB 0.25 16M 1.0; do
  cudapool report --json --level "$level" "$log" >"$tmp/level-$level.json" || fail "--level $level: exit $?"
done
python3 - "$tmp" <<'PY' || fail "--json: the figures held over time"
import json, os, sys
tmp = sys.argv[1]
MiB, S = 1 << 20, 1000000000
def load(name):
    return json.load(open(os.path.join(tmp, name)))
rep = load("half.json")
h, d0, d1 = rep["held"], rep["devices"]["0"]["held"], rep["devices"]["1"]["held"]
assert (h["from_t_ns"], h["to_t_ns"], h["span_s"]) == (1 * S, 11 * S, 10.0), h
assert h["level"] == {"given": "0.5", "of_peak": 0.5, "bytes": None}, h["level"]
assert h["peak_reserved"] == {"bytes": 120 * MiB, "seq": 5, "t_ns": 3 * S, "time_s": 2.0}, h
def reserved(mean, level, above_s):
    return {"mean": mean, "level": level, "above_ns": int(above_s * S), "above_s": above_s,
            "share": round(above_s / 10, 6), "unsure_ns": 0}
assert d0 == {"allocated": {"mean": 13841203}, "reserved": reserved(32 * MiB, 40 * MiB, 2.0)}, d0
assert d1 == {"allocated": {"mean": 3355443}, "reserved": reserved(8 * MiB, 20 * MiB, 2.0)}, d1
assert {k: h[k] for k in ("allocated", "reserved")} == {
    "allocated": {"mean": 17196646}, "reserved": reserved(40 * MiB, 60 * MiB, 2.0)}, h
# the peaks the levels are fractions of are the report's own
assert rep["devices"]["0"]["peak_reserved"]["bytes"] == 80 * MiB
assert rep["devices"]["1"]["peak_reserved"]["bytes"] == 40 * MiB
# the sum of the devices' means is the mean of their sum (one span)
assert d0["reserved"]["mean"] + d1["reserved"]["mean"] == h["reserved"]["mean"]
# --level: a size is the same level for every device; a fraction is of each one's own peak
want = {"20MiB": ((20 * MiB, 2.0), (20 * MiB, 2.0), (20 * MiB, 3.0)),
        "0.25": ((20 * MiB, 2.0), (10 * MiB, 2.0), (30 * MiB, 3.0)),
        "16M": ((16 * MiB, 10.0), (16 * MiB, 2.0), (16 * MiB, 10.0)),
        "1.0": ((80 * MiB, 0.0), (40 * MiB, 0.0), (120 * MiB, 0.0))}
for level, figures in want.items():
    r = load("level-%s.json" % level)
    got = [(x["reserved"]["level"], x["reserved"]["above_s"])
           for x in (r["devices"]["0"]["held"], r["devices"]["1"]["held"], r["held"])]
    assert got == list(figures), (level, got)
    assert r["held"]["level"]["given"] == level
    # the means do not depend on the level
    assert r["held"]["reserved"]["mean"] == 40 * MiB and r["devices"]["0"]["held"] \
        ["allocated"]["mean"] == 13841203
sized = load("level-20MiB.json")["held"]["level"]
assert sized == {"given": "20MiB", "of_peak": None, "bytes": 20 * MiB}, sized
PY

# ---- the text: next to the peaks, in words -------------------------------------------------------
cudapool report "$log" >"$tmp/half.txt" || fail "text: exit $?"
cudapool report --level 20MiB "$log" >"$tmp/sized.txt" || fail "text --level: exit $?"
span="over the log's span, its first event to its last: 10.000000 s"
has "Held over time, device 0 ($span):" "$tmp/half.txt"
has "  mean allocated  13.20 MiB (13841203 bytes)" "$tmp/half.txt"
has "  mean reserved   32.00 MiB (33554432 bytes)" "$tmp/half.txt"
has "  time above      reserved stayed above 40.00 MiB (half the peak) for 2.000000 s, 20.0% of the time" "$tmp/half.txt"
has "Held over time, device 1 ($span):" "$tmp/half.txt"
has "  mean reserved   8.00 MiB (8388608 bytes)" "$tmp/half.txt"
has "Held over time, all devices together ($span):" "$tmp/half.txt"
has "  peak reserved   120.00 MiB (125829120 bytes) at 2.000000 s (seq 5), the devices' reserved bytes added up" "$tmp/half.txt"
has "  time above      reserved stayed above 60.00 MiB (half the peak) for 2.000000 s, 20.0% of the time" "$tmp/half.txt"
has "  time above      reserved stayed above 20.00 MiB (--level 20MiB) for 3.000000 s, 30.0% of the time" "$tmp/sized.txt"
# each device's section comes after its peaks, before its fragmentation
python3 - "$tmp/half.txt" <<'PY' || fail "text: the sections' order"
import sys
t = open(sys.argv[1]).read()
a, b, c = (t.index(x) for x in ("Peaks, device 0:", "Held over time, device 0",
                                "Fragmentation at the reserved peak, device 0"))
assert a < b < c, (a, b, c)
assert t.index("Held over time, all devices together") > t.index("Held over time, device 1")
PY

# ---- no time span: one event, and three at one time -----------------------------------------------
one="$fx/held-one-event.jsonl"
head -1 "$log" >"$tmp/same-time.jsonl"
printf '%s\n' \
  '{"seq":1,"t_ns":5000,"tid":1,"dev":0,"action":"segment_alloc","ptr":"0x1000","size":4096,"block_size":4096,"segment":"0x1000"}' \
  '{"seq":2,"t_ns":5000,"tid":1,"dev":0,"action":"alloc","ptr":"0x1000","size":512,"block_size":512,"segment":"0x1000"}' \
  '{"seq":3,"t_ns":5000,"tid":1,"dev":0,"action":"free_requested","ptr":"0x1000","size":512,"block_size":512}' \
  >>"$tmp/same-time.jsonl"
for x in "$one" "$tmp/same-time.jsonl"; do
  cudapool report --json "$x" >"$tmp/zero.json" || fail "$x --json: exit $?"
  cudapool report "$x" >"$tmp/zero.txt" || fail "$x: exit $?"
  python3 - "$tmp/zero.json" <<'PY' || fail "$x: no time span: the figures"
import json, sys
rep = json.load(open(sys.argv[1]))
h, d = rep["held"], rep["devices"]["0"]["held"]
assert h["span_s"] == 0.0 and h["from_t_ns"] == h["to_t_ns"], h
for part in (h, d):
    r = part["reserved"]
    assert r["mean"] is None and r["above_ns"] is None and r["above_s"] is None, r
    assert r["share"] is None and r["level"] == rep["devices"]["0"]["peak_reserved"]["bytes"] // 2
    assert part["allocated"] is None or part["allocated"]["mean"] is None, part
PY
  has "Held over time, device 0: no time span (the log's first and last events are at the same time): no mean, no time above a level" "$tmp/zero.txt"
done

# ---- the level's forms: the report and the engine take and refuse the same ---------------------
for level in 0.5 0.25 1.0 0.0 0.000000001 10G 10gib 512MiB 1.5T 1 0 80000000000 2Kb; do
  cudapool report --json --level "$level" "$log" >/dev/null 2>"$tmp/err" || fail "--level $level refused: $(cat "$tmp/err")"
  "$engine" --no-page --level "$level" "$log" >/dev/null 2>&1 || fail "the engine refuses --level $level"
done
for level in 1.5 2.0 half -1 .5 0. 10X 50% 1e9 0.1234567891 "" 99999999999999999999; do
  rc=0
  cudapool report --level "$level" "$log" >/dev/null 2>"$tmp/err" || rc=$?
  [ $rc -eq 2 ] || fail "--level '$level': exit $rc, not 2"
  has "not a level" "$tmp/err"
  grep -q "^usage: cudapool report" "$tmp/err" || fail "--level '$level': no usage line: $(cat "$tmp/err")"
  rc=0
  "$engine" --level "$level" "$log" >/dev/null 2>"$tmp/err" || rc=$?
  [ $rc -eq 2 ] || fail "the engine: --level '$level': exit $rc, not 2"
  has "a level is a fraction of the peak" "$tmp/err"
done
echo "report_held: ok"
