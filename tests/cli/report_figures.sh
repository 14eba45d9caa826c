#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_figures.sh: the report believes the events over a summary's list of leaks, and
# prints no figure that no device can have (issue 26, item 9). made_up.jsonl: a summary listing a
# 931 GiB block the events never allocated, a block the events freed and one of another size: each
# marked and noted, the totals the events' (2 blocks, 3 MiB). huge.jsonl: sums past 2^64 and below
# 0 (reserved, allocated, the leaks): exact in --json and named impossible in its notes, written
# "impossible" in the text (never "24.00 EiB", "-32.00 EiB"), and named in the Perfetto export's
# notes. The logs: tests/cli/fixtures/hostile_logs.py. The page: report_html.sh.
set -euo pipefail
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
hasnt() { if grep -qF -- "$1" "$2"; then fail "$2: unexpected: $1"; fi; }
python3 "$fx/hostile_logs.py" "$tmp" made_up huge

# ---- a summary whose leaks the events do not bear out ------------------------------------------
cudapool report "$tmp/made_up.jsonl" >"$tmp/made_up.txt" || fail "made_up: exit $?"
o="$tmp/made_up.txt"
has "Blocks alive at exit (listed by the summary line, counted from the events): 2 blocks still allocated at exit, 3.00 MiB (3145728 bytes) in blocks" "$o"
sed -n '/ptr 0x7000000000/,+1p' "$o" >"$tmp/invented.txt"
has "(not as the events have it: no block is alive there at the end of the events (never allocated there, or freed); not counted)" "$tmp/invented.txt"
sed -n '/ptr 0x10100000/,+1p' "$o" >"$tmp/other-size.txt"
has "(not as the events have it: the events have it with 2097152 bytes requested, a block of 2097152; counted as they have it)" "$tmp/other-size.txt"
has "the summary lists 3 leak(s) that the events do not have as listed (dev 0 ptr 0x10100000, 4194304 bytes: the events have it with 2097152 bytes requested, a block of 2097152; dev 0 ptr 0x10300000, 1048576 bytes: no block is alive there" "$o"
hasnt "931.01 GiB" "$o"
cudapool report --json "$tmp/made_up.jsonl" >"$tmp/made_up.json" || fail "made_up --json: exit $?"
python3 - "$tmp/made_up.json" <<'PY' || fail "made_up: JSON report wrong"
import json, sys
lk = json.load(open(sys.argv[1]))["leaks"]
assert (lk["count"], lk["bytes"], lk["requested_bytes"]) == (2, 3 << 20, 3 << 20), lk
assert (lk["listed"], lk["disagreements"]) == (4, 3), lk
by_ptr = {e["ptr"]: e["events"] for e in lk["entries"]}
assert by_ptr["0x10000000"] is None, by_ptr
assert by_ptr["0x10100000"]["counted"] and by_ptr["0x10100000"]["block_size"] == 2 << 20, by_ptr
assert not by_ptr["0x10300000"]["counted"] and not by_ptr["0x7000000000"]["counted"], by_ptr
PY

# ---- sums no device can have -------------------------------------------------------------------
cudapool report "$tmp/huge.jsonl" >"$tmp/huge.txt" || fail "huge: exit $?"
o="$tmp/huge.txt"
hasnt "EiB (2" "$o"; hasnt "EiB (-" "$o"; hasnt "PiB" "$o"; hasnt " -2" "$o"
has "  peak allocated  impossible (27670116110564327424 bytes) at 0.000003 s (seq 4)" "$o"
has "  peak reserved   impossible (23058430092136939520 bytes) at 0.000001 s (seq 2)" "$o"
has "| GPU reserved memory   | impossible | impossible | impossible | impossible |" "$o"
has "  fragmentation       impossible  (its figures are)" "$o"
has "2 blocks still allocated at the last event (seq 9), impossible (27670116110564327424 bytes) in blocks" "$o"
has "  device 0: impossible figures (negative, or 2**64 or more: beyond any 64-bit device; the log is inconsistent): allocated_bytes.all.current = 27670116110564327424" "$o"
has "  leaks: impossible figures (negative, or 2**64 or more: beyond any 64-bit device; the log is inconsistent): bytes in blocks = 27670116110564327424" "$o"
cudapool report --json "$tmp/huge.jsonl" >"$tmp/huge.json" || fail "huge --json: exit $?"
python3 - "$tmp/huge.json" <<'PY' || fail "huge: JSON report wrong"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["devices"]["0"]["stats"]
# exact sums in the JSON, and each named
assert s["reserved_bytes.all.current"] == -(3 * ((1 << 63) - 1)), s["reserved_bytes.all.current"]
assert s["reserved_bytes.all.peak"] == (1 << 63) + (1 << 63) + (1 << 62), s
assert d["leaks"]["bytes"] == 2 * ((1 << 63) + (1 << 62)), d["leaks"]
named = {(x["where"], x["what"]) for x in d["impossible"]}
for want in [("device 0", "reserved_bytes.all.current"), ("device 0", "peak allocated"),
             ("device 0", "segment.all.current"), ("leaks", "bytes in blocks")]:
    assert want in named, (want, sorted(named))
assert d["devices"]["0"]["fragmentation"]["fragmentation"] is None
PY
# ... and a log that is consistent has none
cudapool report --json "$fx/normal.jsonl" | python3 -c 'import json,sys; assert json.load(sys.stdin)["impossible"] == []' \
  || fail "normal.jsonl: impossible figures found"

# ---- the exports -------------------------------------------------------------------------------
cudapool export --perfetto "$tmp/huge.trace.json" "$tmp/huge.jsonl" 2>"$tmp/perfetto.err" \
  || fail "huge: the Perfetto export failed: $(cat "$tmp/perfetto.err")"
has "huge.jsonl: device 0 has counters that take impossible values (negative, or 2**64 bytes or more: the log is inconsistent), drawn as they are" "$tmp/perfetto.err"
python3 - "$tmp/huge.trace.json" <<'PY' || fail "huge: the Perfetto metadata lacks the note"
import json, sys
notes = json.load(open(sys.argv[1]))["metadata"]["cudapool"]["notes"]
assert any("impossible values" in n for n in notes), notes
PY
echo "report_figures: ok"
