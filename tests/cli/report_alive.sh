#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_alive.sh: the blocks alive at exit grouped by site and size and told apart
# (issue 28), on tests/cli/fixtures/alive.jsonl: four 8 MiB weights allocated first and never freed
# (long-lived: allocated by the allocated peak), a 1 MiB block kept at every one of ten steps from
# another site (growing: ten blocks allocated across the run, a leak's signature), and one 512 KiB
# block allocated after the peak. `report --json`'s leaks.by_site and the text say so, with the
# rule; the text calls them "blocks alive at exit", not leaks. Not here: the oracle's agreement
# (analyze_agree.sh reads every fixture).
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
log="$fx/alive.jsonl"
cudapool report --json "$log" >"$tmp/report.json"
cudapool report "$log" >"$tmp/report.txt"
python3 - "$tmp/report.json" <<'PY' || fail "--json: the groups"
import json, sys
by = json.load(open(sys.argv[1]))["leaks"]["by_site"]
MiB = 1 << 20
assert by["kinds"] == {"long-lived": {"groups": 1, "blocks": 4, "bytes": 32 * MiB},
                       "growing": {"groups": 1, "blocks": 10, "bytes": 10 * MiB},
                       "after the peak": {"groups": 1, "blocks": 1, "bytes": MiB // 2}}, by["kinds"]
got = [(g["kind"], g["count"], g["block_size"], g["backtrace"][0]) for g in by["groups"]]
assert got == [("long-lived", 4, 8 * MiB, "0x1000"), ("growing", 10, MiB, "0x3000"),
               ("after the peak", 1, MiB // 2, "0x4000")], got
assert "growing: 3 or more blocks" in by["rule"] and by["group_count"] == 3
PY
has "Blocks alive at exit: no summary line was read; 15 blocks still allocated" "$tmp/report.txt"
has "Blocks alive at exit by site and size: long-lived 1 group (4 blocks, 32.00 MiB), growing 1 group (10 blocks, 10.00 MiB), after the peak 1 group (1 block, 512.00 KiB)" "$tmp/report.txt"
has "  (how: grouped by allocation site (backtrace) and block size; growing:" "$tmp/report.txt"
has "  long-lived      4 x 8.00 MiB = 32.00 MiB, dev 0, seq 2..5, site 0x1000" "$tmp/report.txt"
has "  growing         10 x 1.00 MiB = 10.00 MiB, dev 0, seq 7..43, site 0x3000" "$tmp/report.txt"
if grep -q "^Leaks" "$tmp/report.txt"; then fail "the blocks alive at exit are called leaks"; fi
echo "report_alive: ok"
