#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_requests_only.sh: one story for a log of requests only (issue 28), the bundled
# examples/logs/training-loop.jsonl (allocs and frees, no pool decision, no summary line):
# `cudapool demo`, `cudapool report` (text and --json) and the page's data say the same. The
# reserved bytes and the statistics are the replay's (the demo's table, line for line), said to
# come from a replay under the header's settings; the cache hits are unknown, not 0; the missing
# summary line is no "killed, crashed" verdict. A log with pool decisions and no summary keeps
# it. Not here: the page in Chromium (report_html.sh checks the DOM of the same log).
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
ex="$src/examples/logs/training-loop.jsonl"
export CUDAPOOL_PGO="${CUDAPOOL_PGO:-0}"

"$src/scripts/cudapool" demo >"$tmp/demo.txt" 2>"$tmp/demo.err" || fail "demo: $(cat "$tmp/demo.err")"
cudapool report "$ex" >"$tmp/report.txt"
cudapool report --json "$ex" >"$tmp/report.json"
cudapool report --html "$tmp/page.html" "$ex" 2>/dev/null
python3 - "$tmp/demo.txt" "$tmp/report.txt" "$tmp/report.json" "$tmp/page.html" <<'PY' || fail "demo, report and page disagree"
import json, re, sys
demo, text, js, page = (open(p, encoding="utf-8").read() for p in sys.argv[1:])
rep = json.loads(js)
table = [l for l in demo.splitlines() if l.startswith("|")]
assert table and any("GPU reserved memory" in l and "3372 MiB" in l for l in table), table
# the text: the replay's table, line for line the demo's, said to be as replayed
assert "Statistics of device 0, as replayed:" in text, text[:2000]
assert "\n".join(table) in text, "the demo's table is not the report's"
assert "under the header's settings" in text
assert "killed" not in text and "crashed" not in text, "a kill verdict"
assert "cache hits: unknown (the log records no pool decisions); as replayed: " in text
assert re.search(r"peak reserved\s+3\.29 GiB \(3535798272 bytes\) at .*as replayed", text), text
# --json: the same figures, null where unknown
rp = rep["replay"]
assert rp is not None and rp["settings"] == "" and rp["settings_from"] == "the log's header", rp
d = rp["devices"]["0"]
assert d["stats"]["reserved_bytes.all.current"] == 3372 * 2**20, d["stats"]
assert d["summary_table"] == table, "--json's replay table is not the demo's"
assert d["peak_reserved"]["bytes"] == 3535798272, d["peak_reserved"]
assert rep["cache_hits"] is None and rp["cache_hits"] + 0 >= 0 and rp["allocs"] == rep["allocs"]
assert rep["exited_normally"] is None, rep["exited_normally"]
e = rep["ending"]
assert e["summary"] == "none" and e["requests_only"] is True and "killed" not in e["text"], e
# the page's data: the run as the report has it, the replay's peak and cache hits
m = re.search(r'<script type="application/json" id="cudapool-data">(.*?)</script>', page, re.S)
log = json.loads(m.group(1))["logs"][0]
assert log["run"]["ending"] == e and log["run"]["cache_hits"] is None, log["run"]
assert log["run"]["exited_normally"] is None
assert log["replay"]["cache_hits"] == rp["cache_hits"], log["replay"]
assert log["replay"]["devices"]["0"]["peak_reserved"] == d["peak_reserved"]
print("ok: demo, report, --json and the page's data tell one story")
PY

# A log with pool decisions that ends without a summary line still gets the kill verdict.
cudapool report --json "$fx/killed.jsonl" >"$tmp/killed.json"
python3 - "$tmp/killed.json" <<'PY' || fail "a killed log lost its verdict"
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["exited_normally"] is False and rep["replay"] is None, rep["exited_normally"]
assert rep["ending"]["requests_only"] is False and "killed" in rep["ending"]["text"]
assert isinstance(rep["cache_hits"], int)
PY
echo "report_requests_only: ok"
