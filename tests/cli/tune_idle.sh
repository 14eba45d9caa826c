#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/tune_idle.sh: cudapool tune and idle release (issue 31; docs/tune.md, "Held over
# time"), as a user runs it, on a generated log of an inference server (fixtures/server_log.py:
# light requests every 50 ms for 20 s, and every 2.5 s a heavy one that holds 2 GiB for 100 ms).
# The text's "Held over time" section and the recommendation (idle_release_ms in CUDAPOOL_CONF
# only, the memory held over time in why, the cost caveat); --json's held_over_time, its figures
# checked against their own definition and against `cudapool replay --conf` of the chosen setting
# (mean reserved, idle releases); the same output from stdin (the variants replayed in the one
# pass); --no-idle; a log too short for the first delay (the bundled example). Not here: the choice on
# hand-built logs (tests/unit/test_tune_idle.cpp), tune's other output (tune_tool.sh).
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-tune"
replay="$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"

log="$tmp/server.jsonl"
python3 "$fx/server_log.py" "$log"

"$bin" --quiet "$log" >"$tmp/out.txt" || fail "tune exited $?"
grep -q "^Held over time: idle release (cudapool's own keys) added to " "$tmp/out.txt" ||
  fail "no held-over-time section: $(cat "$tmp/out.txt")"
for row in "    none " "  * idle_release_ms:100 " "    idle_release_ms:10000 " \
  "    idle_release_ms:100,idle_release_floor_mb:"; do
  grep -qF -- "$row" "$tmp/out.txt" || fail "no row '$row' in: $(sed -n '/^Held/,/^$/p' "$tmp/out.txt")"
done
grep -q "^  CUDAPOOL_CONF='.*idle_release_ms:100'$" "$tmp/out.txt" || fail "no idle key recommended"
grep "PYTORCH_CUDA_ALLOC_CONF" "$tmp/out.txt" | grep -q idle && fail "an idle key for PyTorch"
why="^  why: .*; held over time (mean reserved over the log's 20 s): .* instead of .* (-[0-9.]*%)"
why+=" with idle_release_ms:100, which maps .* again: about .* s, [0-9.]*% of the log's 20 s\.$"
grep -q "$why" "$tmp/out.txt" || fail "why: $(grep '  why' "$tmp/out.txt")"
grep -q "^  caveat: idle_release_ms is cudapool's own key .*an estimate of mapping memory again, measured on one GPU" \
  "$tmp/out.txt" || fail "no caveat on the cost"

"$bin" --quiet --json "$log" >"$tmp/out.json" || fail "tune --json exited $?"
python3 - "$tmp/out.json" >"$tmp/chosen.txt" <<'PY' || fail "json: held_over_time"
import json, sys
d = json.load(open(sys.argv[1]))
h, rec = d["held_over_time"], d["recommendation"]
assert h["tried"] and h["not_tried"] is None, h
assert h["remap_seconds_per_byte"] == 0.6e-3 / 1e9 and h["cost_budget"] == 0.02, h
assert h["remap_seconds_per_mapping"] == 45e-6 and h["peak_tolerance"] == 0.01, h
rows = h["rows"]
assert rows[0]["idle_release_ms"] == 0 and rows[0]["idle_release_floor_mb"] == 0, rows[0]
assert [r["idle_release_ms"] for r in rows[1:8]] == [100, 200, 500, 1000, 2000, 5000, 10000]
assert all(r["idle_release_ms"] == 100 and r["idle_release_floor_mb"] > 0 for r in rows[8:]), rows
assert len(rows) == 10, len(rows)
without = rows[0]["logs"][0]
for r in rows:
    one = r["logs"][0]
    assert r["mean_reserved"] == one["mean_reserved"] and one["span_ns"] == 20000000000, r
    assert abs(r["vs_without"] - (r["mean_reserved"] / without["mean_reserved"] - 1)) < 1e-9, r
    extra = one["mapped_bytes"] - without["mapped_bytes"]
    assert r["mapped_again"] == max(extra, 0), r
    # whole segments (the log's own setting): a cudaMalloc per segment taken again
    mappings = max(one["device_allocs"] - without["device_allocs"], 0)
    assert r["mappings_again"] == mappings and r["expandable_handle_mb"] == 0, r
    cost = max(extra, 0) * h["remap_seconds_per_byte"] + mappings * h["remap_seconds_per_mapping"]
    assert abs(r["cost_s"] - cost) < 1e-12 and abs(r["cost_share"] - cost / 20) < 1e-12, r
    assert r["affordable"] == (r is not rows[0] and r["cost_share"] <= 0.02 and
                               r["vs_without"] <= -0.05 and
                               r["peak_reserved"] <= 1.01 * rows[0]["peak_reserved"]), r
# the heavy requests' 2 GiB go back between them (2.4 s apart) at 100 ms to 1 s; at 2 s just
# before the next one takes them again (mapped again, nothing saved); not at 5 s and 10 s
assert all(r["vs_without"] < -0.3 and r["idle_releases"] >= 7 for r in rows[1:5]), rows
assert rows[5]["idle_releases"] >= 7 and -0.05 < rows[5]["vs_without"] <= 0, rows[5]
assert rows[5]["mapped_again"] > 0 and not rows[5]["affordable"], rows[5]
assert all(r["vs_without"] == 0 and r["idle_releases"] == 0 for r in rows[6:8]), rows
chosen = next(r for r in rows if r["setting"] == h["chosen"])
assert chosen["idle_release_ms"] == 100 and chosen["idle_release_floor_mb"] == 0, chosen
assert min(r["mean_reserved"] for r in rows if r["affordable"]) == chosen["mean_reserved"]
assert rec["idle"] and not rec["keep_own"] and rec["setting"] == h["chosen"], rec
assert rec["cudapool_conf"].endswith("idle_release_ms:100") and "idle" not in rec["pytorch_conf"]
assert rec["mean_reserved"] == chosen["mean_reserved"], rec
assert rec["mean_reserved"] < 0.5 * rec["own_mean_reserved"], rec
own = next(r for r in d["logs"][0]["results"] if r["setting"] == "own")
assert own["mean_reserved"] == rec["own_mean_reserved"] and own["span_ns"] == 20000000000, own
assert own["idle_releases"] == 0 and own["mapped_bytes"] >= own["peak_reserved"], own
print(chosen["conf"], chosen["mean_reserved"], chosen["idle_releases"])
PY
# The replay of the chosen setting agrees: its mean reserved and its idle releases.
read -r conf mean releases <"$tmp/chosen.txt"
"$replay" --quiet --json --conf "$conf" "$log" >"$tmp/replay.json" || fail "replay exited $?"
python3 - "$tmp/replay.json" "$mean" "$releases" <<'PY' || fail "replay --conf $conf disagrees"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["held"]["mean_reserved_bytes"] == float(sys.argv[2]), (d["held"], sys.argv[2])
assert d["counts"]["idle_releases"] == int(sys.argv[3]), (d["counts"], sys.argv[3])
assert d["counts"]["idle_released_bytes"] >= 7 * (2 << 30), d["counts"]
PY

# stdin: the variants of own and of expandable segments in the one pass (floors included: their
# levels come from the first look); the same output.
"$bin" --quiet --json - <"$log" >"$tmp/stdin.json" || fail "stdin exited $?"
python3 - "$tmp/out.json" "$tmp/stdin.json" <<'PY' || fail "stdin: held_over_time"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["held_over_time"] == a["held_over_time"], b["held_over_time"]
assert b["recommendation"] == a["recommendation"], b["recommendation"]
PY
"$bin" --quiet - <"$log" | grep -v " replayed in " >"$tmp/stdin.txt" || fail "stdin text"
grep -v " replayed in " "$tmp/out.txt" | sed "s|^$log:|-:|" | diff - "$tmp/stdin.txt" ||
  fail "stdin: another text than the file's"

# --no-idle: not tried, said so; no idle key.
"$bin" --quiet --json --no-idle "$log" >"$tmp/no.json" || fail "--no-idle exited $?"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
h, rec = d["held_over_time"], d["recommendation"]
assert not h["tried"] and h["not_tried"] == "idle release not tried (--no-idle)" and h["rows"] == []
assert not rec["idle"] and "idle" not in rec["cudapool_conf"], rec
assert "; held over time (mean reserved over the log" in rec["why"], rec["why"]' "$tmp/no.json" ||
  fail "--no-idle"

# --idle-cost: the budget shows in the JSON and the legend; a bad value is a usage error.
"$bin" --quiet --json --idle-cost 6.5 "$log" >"$tmp/cost.json" || fail "--idle-cost exited $?"
python3 -c 'import json, sys
h = json.load(open(sys.argv[1]))["held_over_time"]
assert abs(h["cost_budget"] - 0.065) < 1e-12, h["cost_budget"]' "$tmp/cost.json" ||
  fail "--idle-cost 6.5: cost_budget"
"$bin" --quiet --idle-cost 6.5 "$log" | grep -q "at a cost within 6.5% of the span" ||
  fail "--idle-cost 6.5: the legend"
for bad in 0 -1 101 x ""; do
  set +e
  "$bin" --quiet --idle-cost "$bad" "$log" >/dev/null 2>"$tmp/bad.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "--idle-cost '$bad': exit $rc, not 2"
  grep -q "idle-cost" "$tmp/bad.err" || fail "--idle-cost '$bad': $(cat "$tmp/bad.err")"
done

# A log of 38 ms: too short for the shortest delay.
"$bin" --quiet "$src/examples/logs/training-loop.jsonl" >"$tmp/short.txt" || fail "short exited $?"
short="^Held over time: idle release not tried: the events of the log span 37.9 ms, less than"
short+=" the shortest idle_release_ms tried (100 ms)\.$"
grep -q "$short" "$tmp/short.txt" || fail "short log: $(grep -i held "$tmp/short.txt")"
grep -q "idle_release" <(grep CONF "$tmp/short.txt") && fail "short log: an idle key"
echo "tune_idle: ok"
