#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_devices.sh: a log that names thousands of devices gives bounded output (issue
# 26, item 13), by the replay's rule (tools/replay/replayer_pools.cpp, tests/oracle/devices.py):
# the events of a device the header does not list are skipped, and of the others the first 256
# devices are kept; each skip is said once, in the replay's words. Checked on the text and JSON
# report, the header's device list, the exports, and against cudapool-replay's own counts.
# devices.jsonl: 20000 devices, one alloc each (before: 42 MB of text, an 8 MB page); listed.jsonl:
# the header lists all 20000; unlisted.jsonl: events of devices the header does not list;
# segmented.jsonl: 300 devices with segments (the memory_viz export). Made by
# tests/cli/fixtures/hostile_logs.py. The page in Chromium: report_html.sh.
set -euo pipefail
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
python3 "$fx/hostile_logs.py" "$tmp" devices listed unlisted segmented
over="an event of a device beyond the first 256 devices (the replay keeps at most 256 pools, as the shim does), first at line 258: skipped, as are all such events: 19744 events of 19744 devices"

# ---- 20000 devices: 256 reported, the rest said ---------------------------------------------
cudapool report "$tmp/devices.jsonl" >"$tmp/devices.txt" || fail "devices: exit $?"
[ "$(grep -c '^Statistics of device' "$tmp/devices.txt")" -eq 256 ] || fail "devices: not 256 device sections"
[ "$(wc -c <"$tmp/devices.txt")" -lt 1000000 ] || fail "devices: the text report is $(wc -c <"$tmp/devices.txt") bytes"
has "  $over" "$tmp/devices.txt"
has "  log         20001 lines, 20000 events," "$tmp/devices.txt"
if grep -q "seq is not consecutive" "$tmp/devices.txt"; then fail "devices: skipped events taken for a seq gap"; fi
cudapool report --json "$tmp/devices.jsonl" >"$tmp/devices.json" || fail "devices --json: exit $?"
python3 - "$tmp/devices.json" "$over" <<'PY' || fail "devices: JSON report wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d["devices"]) == [str(i) for i in range(256)], len(d["devices"])
assert d["actions"] == {"alloc": 256} and sys.argv[2] in d["notes"], d["notes"]
PY

# ---- a header listing 20000 devices: the first 256 kept, every one admits its events ------------
cudapool report "$tmp/listed.jsonl" >"$tmp/listed.txt" || fail "listed: exit $?"
[ "$(grep -c '^  device [0-9]' "$tmp/listed.txt")" -eq 256 ] || fail "listed: not 256 header devices shown"
has "  line 1: header devices: 20000 entries; the first 256 are kept (the replay's limit), the others only admit their devices' events" "$tmp/listed.txt"
has "  $over" "$tmp/listed.txt"
[ "$(wc -c <"$tmp/listed.txt")" -lt 1000000 ] || fail "listed: the text report is too long"

# ---- devices the header does not list: skipped, as the replay skips them ----------------------
cudapool report --json "$tmp/unlisted.jsonl" >"$tmp/unlisted.json" || fail "unlisted: exit $?"
"$CUDAPOOL_BUILD_DIR/tools/cudapool-replay" --json "$tmp/unlisted.jsonl" >"$tmp/replay.json" 2>/dev/null \
  || fail "unlisted: the replay failed"
python3 - "$tmp/unlisted.json" "$tmp/replay.json" <<'PY' || fail "unlisted: not as the replay"
import json, sys
d, r = (json.load(open(p)) for p in sys.argv[1:])
assert list(d["devices"]) == ["0"] and d["devices"]["0"]["events"] == 2, d["devices"]
assert r["counts"]["events_of_unlisted_devices"] == 3 and list(r["devices"]) == ["0"], r["counts"]
want = ("an event of a device the header does not list (its devices: 0, 1), first at line 3: "
        "skipped, as are all such events: 3 events of 2 devices")
assert d["notes"] == [want], d["notes"]
replay = [p["what"] for p in r["problems"]]
assert replay == ["an event of a device the header does not list (its devices: 0, 1): skipped, "
                  "as are all such events: 3 events of 2 devices"], replay
PY

# ---- the exports ------------------------------------------------------------------------------
cudapool export --perfetto "$tmp/devices.trace.json" "$tmp/devices.jsonl" 2>"$tmp/perfetto.err" \
  || fail "perfetto: exit $?: $(cat "$tmp/perfetto.err")"
has "devices.jsonl: $over" "$tmp/perfetto.err"
[ "$(wc -l <"$tmp/perfetto.err")" -lt 10 ] || fail "perfetto: $(wc -l <"$tmp/perfetto.err") lines of notes"
python3 - "$tmp/devices.trace.json" <<'PY' || fail "perfetto: not bounded"
import json, sys
t = json.load(open(sys.argv[1]))
devices = {e["name"].split()[1] for e in t["traceEvents"] if e["ph"] == "C"}  # "device N ..."
assert len(devices) == 256, len(devices)
PY
cudapool export --memory-viz "$tmp/seg.json" "$tmp/segmented.jsonl" 2>"$tmp/memviz.err" \
  || fail "memory_viz: exit $?: $(cat "$tmp/memviz.err")"
has "skipped, as are all such events: 88 events of 44 devices" "$tmp/memviz.err"
python3 - "$tmp/seg.json" <<'PY' || fail "memory_viz: not bounded"
import json, sys
s = json.load(open(sys.argv[1]))
assert len(s["segments"]) == 256 and len(s["device_traces"]) == 256, (len(s["segments"]), len(s["device_traces"]))
PY
echo "report_devices: ok"
