#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_html_engine.sh: `report --html` draws the page from one run of the analysis
# engine (cudapool-analyze; htmlreport.py, issue 27) and from nothing else: an engine whose document
# is doctored shows in the page, and no replay runs for a log of requests only; the page's data is,
# to the byte (key order included), what the Python passes gave before (the test oracles
# tests/oracle/pagedata.py's log_data + timeaxis.one_clock, the bytes held over time from the
# oracle's report: held.page_held) on logs of every kind: requests only (the replay's maps), several
# ranks, ranks on one clock, a long log downsampled with marks, two devices held over time. --tune
# runs beside the engine; stdin, a FIFO and a zstd stdin are read once and handed to both
# (fanout.py): both name the log as given; a tune that fails without reading its input still leaves
# the page; a corrupt stdin is refused in the engine's words (exit 1, no page, no tune left
# running); an engine that is killed is said in one line. Every command runs under a hang guard of
# 300 s.
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
engine="$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze"
[ -x "$engine" ] || fail "no $engine (build it)"
guard() { timeout 300 python3 -m cudapool_analysis "$@"; }
ex="$src/examples/logs/training-loop.jsonl"
# data PAGE: the page's data (JSON, as written) on stdout
data() {
  python3 -c '
import re, sys
print(re.search(r"id=\"cudapool-data\">(.*?)</script>", open(sys.argv[1]).read(), re.S).group(1))
' "$1"
}

# ---- the page is the engine's: a doctored document shows; no replay, no Python pass ----------
cat >"$tmp/doctored" <<EOF
#!/usr/bin/env bash
echo "\$*" >>"$tmp/engine.args"
"$engine" "\$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
d["logs"][0]["page"]["run"]["events"] = 4242
d["logs"][0]["page"]["devices"]["0"]["peak_allocated"]["bytes"] = 4243
json.dump(d, sys.stdout)'
EOF
printf '#!/bin/sh\necho ran >>"%s/replay.ran"\nexit 3\n' "$tmp" >"$tmp/no-replay"
chmod +x "$tmp/doctored" "$tmp/no-replay"
CUDAPOOL_ANALYZE="$tmp/doctored" CUDAPOOL_REPLAY="$tmp/no-replay" \
  guard report --html "$tmp/doctored.html" "$ex" 2>"$tmp/err" || fail "doctored: exit $?: $(cat "$tmp/err")"
data "$tmp/doctored.html" | python3 -c '
import json, sys
d = json.load(sys.stdin)["logs"][0]
assert d["run"]["events"] == 4242 and d["devices"]["0"]["peak_allocated"]["bytes"] == 4243, d["run"]
assert d["layout_source"] == "replay" and d["replay"]["devices"]["0"]["maps"]["peak"], "no replay maps"
' || fail "the page is not the engine's document"
[ ! -e "$tmp/replay.ran" ] || fail "cudapool-replay ran: the page replayed the log in Python's way"
[ "$(wc -l <"$tmp/engine.args")" -eq 1 ] || fail "the engine ran $(wc -l <"$tmp/engine.args") times"
if grep -q -- --no-page "$tmp/engine.args"; then fail "the engine ran with --no-page"; fi

# ---- the same data as the Python passes gave, byte for byte -----------------------------------
python3 "$fx/random_logs.py" "$tmp" long 80000
oracle() {      # oracle OUT LOG...: the page data's logs, clock, ranks as the Python passes make them
  local out=$1
  shift
  PYTHONPATH="$src/scripts:$src/tests" python3 - "$@" >"$out" <<'PY'
import json, sys
from cudapool_analysis.held import page_held
from cudapool_analysis.timeaxis import one_clock
from cudapool_analysis.verdict import verdict
from oracle import pagedata, report
logs, reps, rows = [], [], []
for i, path in enumerate(sys.argv[1:]):
    d, rep, row = pagedata.log_data(path, i)
    d["verdict"] = verdict(rep, d, None, i)   # the page's (--no-tune) from the oracle's figures
    d["held"] = page_held(rep)                # and its bytes held over time
    logs.append(d); reps.append(rep); rows.append(row)
clock = one_clock(logs)
multi = report.several(reps, rows) if len(logs) > 1 else None
print(json.dumps([logs, clock, multi["ranks"] if multi else None,
                  multi["notes"] if multi else []], separators=(",", ":")))
PY
}
n=0
for set in "$ex" "$fx/normal.jsonl $fx/killed.jsonl" "$fx/viewers.jsonl $fx/viewers-rank1.jsonl" \
    "$tmp/long.jsonl" "$fx/expandable.jsonl" "$fx/held.jsonl"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  guard report --html "$tmp/same$n.html" --no-tune $set 2>"$tmp/err" || fail "$set: exit $?: $(cat "$tmp/err")"
  # shellcheck disable=SC2086
  oracle "$tmp/oracle$n.json" $set
  data "$tmp/same$n.html" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
for log in d["logs"]:       # the text of pool/oom.cpp, which the oracle does not copy
    for o in log["ooms"]:
        if o["figures"] is not None:
            del o["explanation"]
got = json.dumps([d["logs"], d["clock"], d["ranks"], d["rank_notes"]], separators=(",", ":"))
want = open(sys.argv[1]).read().strip()
if got != want:
    i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    sys.exit("differs at %d: page %s | python %s" % (i, got[i - 80:i + 80], want[i - 80:i + 80]))
' "$tmp/oracle$n.json" || fail "$set: the page's data is not the Python passes'"
done
grep -q '"marks":{"oom":\[[^]]*\],"empty_cache"' "$tmp/same2.html" \
  || fail "normal.jsonl's marks are not in the order they come"

# ---- --tune beside the engine: stdin, a FIFO, a zstd stdin, read once -----------------------
"$CUDAPOOL_BUILD_DIR/tools/cudapool-tune" --json "$fx/normal.jsonl" >"$tmp/tune.json"
guard report --html "$tmp/file.html" --tune "$fx/normal.jsonl" 2>"$tmp/err" || fail "file --tune: $(cat "$tmp/err")"
same_as_file() {     # same_as_file PAGE NAME: the file's data, the log called NAME
  data "$1" | python3 -c '
import json, re, sys
def load(text):
    d = json.loads(text)
    d.pop("generated")
    d["tune"].pop("seconds", None)
    for k in ("pools_replayed", "settings_tried"):  # a file is looked at first: fewer
        d["tune"].pop(k, None)
    names = [l.pop("log") for l in d["logs"]] + [l.pop("path") for l in d["tune"]["logs"]]
    for l in d["tune"]["logs"]:
        l.pop("seconds", None)
    return d, names
got, names = load(sys.stdin.read())
want, _ = load(open(sys.argv[1]).read())
assert names == [sys.argv[2]] * 2, names
assert got == want, "not the file'\''s page"
assert "error" not in got["tune"] and got["tune"]["logs"][0]["results"], got["tune"]
' <(data "$tmp/file.html") "$2"
}
guard report --html "$tmp/stdin.html" --tune - <"$fx/normal.jsonl" 2>"$tmp/err" || fail "stdin --tune: $(cat "$tmp/err")"
same_as_file "$tmp/stdin.html" "<stdin>" || fail "stdin --tune"
mkfifo "$tmp/fifo"
cat "$fx/normal.jsonl" >"$tmp/fifo" &
guard report --html "$tmp/fifo.html" --tune "$tmp/fifo" 2>"$tmp/err" || fail "FIFO --tune: $(cat "$tmp/err")"
wait
same_as_file "$tmp/fifo.html" "$tmp/fifo" || fail "FIFO --tune"
zstd -q -c "$fx/normal.jsonl" | guard report --html "$tmp/zst.html" --tune - 2>"$tmp/err" ||
  fail "zstd stdin --tune: $(cat "$tmp/err")"
same_as_file "$tmp/zst.html" "<stdin>" || fail "zstd stdin --tune"

# a tune that ends without reading (1.6 MB on stdin: far more than a pipe holds): the page
# without its tuning, the engine fed to the end
printf '#!/bin/sh\necho "tune: gave up" >&2\nexit 3\n' >"$tmp/quitter"
chmod +x "$tmp/quitter"
CUDAPOOL_TUNE="$tmp/quitter" guard report --html "$tmp/quit.html" --tune - <"$ex" 2>"$tmp/err" ||
  fail "a tune that reads nothing: exit $?: $(cat "$tmp/err")"
has "the page has no tuning section" "$tmp/err"
guard report --html "$tmp/ex.html" "$ex" 2>/dev/null || fail "the example: exit $?"
python3 - <(data "$tmp/quit.html") <(data "$tmp/ex.html") <<'PY' || fail "a tune that reads nothing: not the page"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert "tune: gave up" in a["tune"]["error"], a["tune"]
assert a["logs"][0]["run"] == b["logs"][0]["run"], "the engine did not read it all"
PY

# a corrupt stdin with --tune: the engine's refusal, exit 1, no page, no tune left running
python3 -c 'import sys; sys.stdout.buffer.write(b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 40)' >"$tmp/bad.zst"
printf '#!/bin/sh\necho $$ >"%s/tune.pid"\nexec sleep 600\n' "$tmp" >"$tmp/slow-tune"
chmod +x "$tmp/slow-tune"
rc=0
CUDAPOOL_TUNE="$tmp/slow-tune" guard report --html "$tmp/bad.html" --tune - <"$tmp/bad.zst" \
  2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "corrupt stdin --tune: exit $rc: $(cat "$tmp/err")"
[ -s "$tmp/tune.pid" ] || fail "corrupt stdin --tune: tune did not run beside the engine"
if kill -0 "$(cat "$tmp/tune.pid")" 2>/dev/null; then fail "corrupt stdin --tune: tune left running"; fi
"$engine" --as "cudapool report" --no-page - <"$tmp/bad.zst" >/dev/null 2>"$tmp/want" || true
cmp -s "$tmp/err" "$tmp/want" || fail "corrupt stdin --tune: said $(cat "$tmp/err"), not $(cat "$tmp/want")"
[ ! -e "$tmp/bad.html" ] || fail "corrupt stdin --tune: a page"

# an engine that is killed: one line naming it, exit 1, no page
printf '#!/bin/sh\nkill -9 $$\n' >"$tmp/killed"
chmod +x "$tmp/killed"
rc=0
CUDAPOOL_ANALYZE="$tmp/killed" guard report --html "$tmp/k.html" "$fx/normal.jsonl" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "a killed engine: exit $rc"
has "cudapool report: the analysis engine $tmp/killed was killed by signal 9 without a message; no report" "$tmp/err"
[ ! -e "$tmp/k.html" ] || fail "a killed engine: a page"
echo "report_html_engine: ok"
