#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/figures_agree.sh: one definition of reserved, allocated, fenced, free and fragmentation
# (docs/report.md, "Words and figures"; vocabulary.py FIGURE_WORDS) in every output, on
# tests/cli/fixtures/fenced.jsonl: 8 MiB freed on a stream and still behind its reuse fence at the
# reserved peak (22 MiB reserved, 6 MiB allocated: 8 MiB fenced, 8 MiB free, the largest free block
# 6 MiB, fragmentation 0.25). `report --json`, the text report, the page's data (its peaks and its
# segment map at the peak), the Perfetto export's four counters at the peak, the memory_viz
# export's note and `top`'s figures say the same: fenced is not free. Not here: the page drawn in
# Chromium (report_html.sh).
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
log="$fx/fenced.jsonl"
cudapool report --json "$log" >"$tmp/report.json"
cudapool report "$log" >"$tmp/report.txt"
cudapool report --html "$tmp/page.html" "$log" 2>/dev/null
cudapool export --perfetto "$tmp/trace.json" "$log" 2>/dev/null
cudapool export --memory-viz "$tmp/snap.json" "$log" 2>"$tmp/memviz.err"
python3 - "$tmp" <<'PY' || fail "the outputs do not say the same"
import json, os, re, sys
tmp = sys.argv[1]
MiB = 1 << 20
sys.path.insert(0, os.environ["PYTHONPATH"])
from cudapool_analysis import vocabulary as v
from cudapool_analysis.controlcli import top_figures
rep = json.load(open(os.path.join(tmp, "report.json")))
f = rep["devices"]["0"]["fragmentation"]
want = {"reserved": 22 * MiB, "allocated": 6 * MiB, "fenced": 8 * MiB, "free_cached": 8 * MiB,
        "largest_free_block": 6 * MiB, "fragmentation": 0.25}
assert {k: f[k] for k in want} == want, f
assert f["reserved"] == f["allocated"] + f["fenced"] + f["free_cached"]
# the text
text = open(os.path.join(tmp, "report.txt")).read()
assert re.search(r"fenced +8\.00 MiB .*\(%s: not free\)" % v.FIGURE_WORDS["fenced"], text), text
assert re.search(r"free cached +8\.00 MiB .*\(reserved - allocated - fenced\)", text), text
assert "fragmentation       0.2500" in text, text
# the page's data: the peaks table's figures and the segment map at the peak beside it
page = open(os.path.join(tmp, "page.html")).read()
m = re.search(r'<script type="application/json" id="cudapool-data">(.*?)</script>', page, re.S)
data = json.loads(m.group(1))
assert data["words"] == v.FIGURE_WORDS, data["words"]
d = data["logs"][0]["devices"]["0"]
assert d["fragmentation"] == f, (d["fragmentation"], f)
snap = d["maps"]["peak"]
assert (snap["reserved"], snap["allocated"], snap["fenced"]) == (22 * MiB, 6 * MiB, 8 * MiB), snap
assert snap["reserved"] - snap["allocated"] - snap["fenced"] == f["free_cached"]
# Perfetto: four counters, a track each; at the reserved peak the report's figures
ev = json.load(open(os.path.join(tmp, "trace.json")))["traceEvents"]
series = {}
for e in ev:
    if e["ph"] == "C":
        assert list(e["args"]) == ["bytes"], e
        series.setdefault(e["name"], []).append((e["ts"], e["args"]["bytes"]))
names = ["device 0 allocated", "device 0 fenced (%s)" % v.FIGURE_WORDS["fenced"],
         "device 0 free", "device 0 reserved"]
assert sorted(series) == names, sorted(series)
at = next(ts for ts, b in series["device 0 reserved"] if b == f["reserved"])
value = {n: dict(series[n])[at] for n in names}
assert value == dict(zip(names, (f["allocated"], f["fenced"], f["free_cached"], f["reserved"]))), value
assert "fragmentation" not in json.dumps(ev), "a fragmentation counter in bytes"
# memory_viz: the block fenced at the end, said in the same words
err = open(os.path.join(tmp, "memviz.err")).read()
assert "1 block (2097152 bytes) fenced at the end (%s: not free)" % v.FIGURE_WORDS["fenced"] in err, err
# top: the pool's statistics at that moment give the same figures
stats = {"reserved_bytes.all.current": 22 * MiB, "allocated_bytes.all.current": 6 * MiB,
         "active_bytes.all.current": 14 * MiB}
t = top_figures(stats, 6 * MiB)
assert (t["fenced"], t["free"], t["fragmentation"]) == (8 * MiB, 8 * MiB, 0.25), t
print("ok: report, text, page, Perfetto, memory_viz and top agree")
PY
echo "figures_agree: ok"
