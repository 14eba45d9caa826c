#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_text.sh: the lines of `cudapool report` that the analysis engine writes as text
# (issue 27: the package keeps no copy of them): each device's statistics table (pool/summary.h,
# the formatter of the shim's own table) and each oom event's explanation (pool/oom.h, the shim's
# words), to the byte what the Python report printed before (fixtures/text/report_text.expected,
# made by its memory_table and explain_oom): statistics that are partial (rows left out, "-" for a
# missing count, a statistic of the wrong kind ignored), impossible (negative or past 2^64:
# "impossible" in the cells, a pool row taking its own unit, the counts as they are), and the
# fixtures' normal ones; sizes and counts at each unit's switch; every oom cause, a device_free
# unknown, figures near 2^64. The page's explanations are the report's.
set -euo pipefail
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
engine="$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze"
[ -x "$engine" ] || fail "no $engine (build it)"
export CUDAPOOL_ANALYZE="$engine"

# The engine's lines in a text report: the tables with the line above each, the oom section.
parts() {
  awk '/^Statistics of device/ || /^\|/ { print; next }
       /^Out of memory:/ { on = 1; print; next }
       on && /^$/ { on = 0 }
       on { print }'
}
for name in text/partial.jsonl text/impossible.jsonl normal.jsonl viewers.jsonl expandable.jsonl; do
  echo "== $name"
  cudapool report "$fx/$name" >"$tmp/report.txt" || fail "$name: exit $?"
  parts <"$tmp/report.txt"
done >"$tmp/got"
diff "$fx/text/report_text.expected" "$tmp/got" >"$tmp/diff" ||
  fail "the report's table or oom lines differ from the Python report's (< expected, > got):
$(head -n 40 "$tmp/diff")"

# The page's oom entries: the report's explanation for an event with figures, else why none.
"$engine" "$fx/text/partial.jsonl" | python3 -c '
import json, sys
x = json.load(sys.stdin)["logs"][0]
report, page = x["report"]["ooms"], x["page"]["ooms"]
assert len(page) == 9 and len(report) == 9, (len(page), len(report))
for r, p in zip(report, page):
    if "explained" in r:
        assert p["explanation"] == r["explanation"] and len(r["explanation"]) == 4, (r, p)
    else:
        assert "explanation" not in r and p["figures"] is None, (r, p)
assert page[7]["explanation"] == ["the event carries no explanation (not written by the shim)"]
assert page[8]["explanation"][0].startswith("its figures are malformed ("), page[8]
' || fail "the page's oom explanations are not the report's"
echo "ok: the engine's tables and oom lines are the Python report's, byte for byte"
