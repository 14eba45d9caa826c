#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/verdict_agree.sh: the verdict (scripts/cudapool_analysis/verdict.py, issue 28) says
# the same in the text report, `cudapool report --json` and the page, and the page shows it first.
# Logs: the bundled example (requests only: the verdict is the replay's), a real PyTorch job from
# the H200 under the shim with Python stacks (fixtures/burst-h200.jsonl.gz, bench/verdict_logs.sh:
# a burst of long requests leaves 12 GiB cached), tests/cli/fixtures/fenced.jsonl (bytes waiting
# for another stream) and python_stacks.jsonl. For each: the text report's first lines after its
# title are the verdict's lines; the page, opened in headless Chromium at 1400x900, has no error,
# its verdict tiles carry exactly the figures of `report --json`'s verdict, and the verdict card
# ends within the first screen (900 px); tune ran by default (the setting named, or why not) and
# not with --no-tune. Then the figures themselves on the burst: the peak reserved is the report's
# peak, never_used = peak reserved - peak allocated, empty_cache_returns <= reserved at exit, the
# sites name the job's own Python lines. Fails (does not skip) without Chromium.
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
window=1400,900    # the first screen: the verdict card must end within it
. "$src/tests/cli/browser.bash"
py() { PYTHONPATH="$src/scripts" python3 -m cudapool_analysis "$@"; }
n=0
for log in "$src/examples/logs/training-loop.jsonl" "$fx/burst-h200.jsonl.gz" "$fx/fenced.jsonl" \
           "$fx/python_stacks.jsonl"; do
  n=$((n + 1))
  py report --json "$log" >"$tmp/$n.json" || fail "$log: report --json"
  py report "$log" >"$tmp/$n.txt" || fail "$log: report"
  py report --html "$tmp/$n.html" "$log" 2>/dev/null || fail "$log: report --html"
  browse "$tmp/$n.html" "$n"
  python3 - "$tmp/$n.json" "$tmp/$n.txt" "$tmp/$n.dom" "$log" <<'PY' || fail "$log: the verdict disagrees"
import html, json, re, sys, textwrap
rep, text, dom, log = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), open(sys.argv[3]).read(), sys.argv[4]
vd = rep["verdict"]
# the text report: its title, a blank line, the verdict's lines (wrapped), a blank line
lines = text.split("\n")
body = " ".join(l.strip() for l in lines[2:lines.index("", 2)])
assert body == " ".join(l["text"] for l in vd["lines"]), (body[:300], vd["lines"][:2])
check = json.loads(html.unescape(re.search(r'<pre id="cudapool-selfcheck"[^>]*>(.*?)</pre>', dom, re.S).group(1)))
assert not check["errors"], check["errors"]
shown = {(x["dev"], x["key"]): x["bytes"] for x in check["verdict"] if x["log"] == 0}
want = {}
for dev, d in vd["devices"].items():
    for key in ("peak_reserved", "peak_allocated", "never_used"):
        want[(dev, key)] = d[key]
    if d["exit"]["empty_cache_returns"] is not None:
        want[(dev, "empty_cache_returns")] = d["exit"]["empty_cache_returns"]
if "setting" in vd["setting"]:
    want[("all", "saving")] = vd["setting"]["saving"]
assert shown == want, (shown, want)
assert check["verdict_bottom"] is not None and check["verdict_bottom"] <= check["viewport"][1], \
    ("the verdict does not end within the first screen", check["verdict_bottom"], check["viewport"])
for line in vd["lines"]:     # the sites' line as the table of sites
    assert line["what"] == "sites" or html.escape(line["text"], quote=False) in dom, line
for d in vd["devices"].values():
    for x in d["sites"]:
        assert html.escape(x["where"], quote=False) in dom, x
# peaks as the report has them (the replay's for a log of requests only)
devs = rep["replay"]["devices"] if vd["source"] == "replay" else rep["devices"]
for dev, d in vd["devices"].items():
    assert d["peak_reserved"] == devs[dev]["peak_reserved"]["bytes"]
    assert d["never_used"] == d["peak_reserved"] - d["peak_allocated"]
    e = d["exit"]
    assert e["empty_cache_returns"] is None or e["empty_cache_returns"] <= e["reserved"], e
s = vd["setting"]
assert "setting" in s or s.get("keep_own") or "not_run" in s, s
assert "not_run" not in s, ("tune did not run by default", s)
print("%s: %d figures agree; the verdict ends at %d px" % (log.rsplit("/", 1)[1], len(want), check["verdict_bottom"]))
PY
done
# the burst (a real job): what the verdict says
python3 - "$tmp/2.json" <<'PY' || fail "burst: the verdict's content"
import json, sys
vd = json.load(open(sys.argv[1]))["verdict"]
d = vd["devices"]["0"]
assert d["peak_reserved"] == 13019119616 and d["peak_allocated"] == 9292404736, d
assert d["exit"]["empty_cache_returns"] == 12949913600, d["exit"]
assert vd["setting"]["setting"] == "expandable_segments:True" and vd["setting"]["saving"] > 2 << 30, vd["setting"]
assert d["sites"][0]["where"].endswith("verdict_burst.py:65 main.<locals>.LM.forward") and d["sites"][0]["python"], d["sites"]
words = " ".join(l["text"] for l in vd["lines"])
for w in ("nvidia-smi", "max_memory_allocated", "empty_cache", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"):
    assert w in words, w
PY
# --no-tune: no setting; why said
py report --json --no-tune "$fx/burst-h200.jsonl.gz" | python3 -c '
import json, sys
s = json.load(sys.stdin)["verdict"]["setting"]
assert s == {"not_run": "cudapool tune was not run"}, s' || fail "--no-tune"
py report --tune --no-tune "$fx/normal.jsonl" >/dev/null 2>&1 && fail "--tune with --no-tune accepted"
echo "ok: the verdict agrees in text, --json and the page on $n logs"
