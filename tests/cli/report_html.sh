#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_html.sh: `cudapool report --html OUT [--tune] LOG...`, opened in Debian's
# headless Chromium: the page of the example log (a log of requests only: its segment maps are the
# replay's) and of two ranks (tests/cli/fixtures/normal.jsonl + killed.jsonl, with --tune). Each
# must be self-contained (no address of another place, no network call: check_report_html.py
# static), run without a console or JS error, draw every chart (canvas pixels), and show the peaks
# of `cudapool report --json` exactly. A screenshot of each is kept: the CI artifact
# $CUDAPOOL_BUILD_DIR/artifacts/report.png (and report-ranks.png). Also: --tune embeds `cudapool
# tune --json` (a failing tune: the page says why it has none); a missing charting library is a
# clear error (exit 1); usage errors (exit 2); the page of a 1-million-event log
# (bench/make_random_log.py) is written in reasonable time, a few MB, downsampled with its peak
# exact; `cmake --install` gives a package that writes the page. And the page of
# tests/cli/fixtures/viewers.jsonl + viewers-rank1.jsonl: the ranks' charts on one time
# axis (since the earliest start, on the wall clock), one log's from its first event; frames named
# library + offset from the summary's modules, each site by its first frame outside the runtime;
# and of tests/cli/fixtures/python_stacks.jsonl: Python sites named by their first user frame, their
# Python stacks shown. Every page's figures held over time (the card "Held over time") equal
# `cudapool report --json`'s; tests/cli/fixtures/held.jsonl's are the figures worked out by hand.
# Fails (does not skip) without Chromium: install the Debian package chromium-headless-shell.
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
build="$CUDAPOOL_BUILD_DIR"
fx="$src/tests/cli/fixtures"
check="$src/tests/cli/check_report_html.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py() { PYTHONPATH="$src/scripts" python3 -m cudapool_analysis "$@"; }

# ---- the browser (chromium, chrome, browse: browser.bash) ---------------------------------------
. "$src/tests/cli/browser.bash"
# shot PAGE PNG: a screenshot of the page's first 1400x2400 pixels
shot() {
  chrome "$1" --screenshot="$2" >/dev/null 2>&1 || fail "$2: the screenshot failed"
  python3 - "$2" <<'PY' || fail "$2: not a screenshot of 1400x2400"
import struct, sys, os
d = open(sys.argv[1], "rb").read(32)
assert d[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", d[16:24]) == (1400, 2400), d
assert os.path.getsize(sys.argv[1]) > 40000, os.path.getsize(sys.argv[1])
PY
}
artifacts="$build/artifacts"
mkdir -p "$artifacts"

# ---- the example log: requests only, the maps from the replay (through the launcher) -----------
ex="$src/examples/logs/training-loop.jsonl"
"$src/scripts/cudapool" report --html "$tmp/example.html" "$ex" 2>"$tmp/example.msg" \
  || fail "example: exit $?: $(cat "$tmp/example.msg")"
grep -q "wrote $tmp/example.html" "$tmp/example.msg" || fail "example: no line saying what was written"
py report --json "$ex" >"$tmp/example.json"
"$build/tools/cudapool-replay" --write-log "$tmp/replayed.jsonl" "$ex" >/dev/null
py report --json "$tmp/replayed.jsonl" >"$tmp/replayed.json"
python3 "$check" static "$tmp/example.html" >/dev/null || fail "example: not self-contained"
browse "$tmp/example.html" example
python3 "$check" dom "$tmp/example.dom" "$tmp/example.err" "$tmp/example.json" \
  log0-dev0-memory,log0-dev0-replay-memory,log0-dev0-replay-unallocated,log0-dev0-map-peak,log0-dev0-map-exit \
  "$tmp/replayed.json" || fail "example: the page in Chromium"
shot "$tmp/example.html" "$artifacts/report.png"
grep -q "cudapool's replay of the log" "$tmp/example.dom" || fail "example: the page does not say the layout is the replay's"
# A log of requests only (issue 28): no "killed, crashed" verdict, the cache hits unknown, the
# peak reserved as replayed: the figure `cudapool demo` prints (report_requests_only.sh).
grep -q 'killed, crashed or the log\|class="pill bad"' "$tmp/example.dom" && fail "example: a kill verdict for a log of requests only"
for text in "not recorded (a log of requests only)" "<dt>cache hits</dt><dd>unknown (the log records no pool decisions); as replayed:" \
            'data-replayed="reserved"'; do
  grep -qF "$text" "$tmp/example.dom" || fail "example: the page lacks: $text"
done

# ---- two ranks, with --tune ---------------------------------------------------------------------
py report --html "$tmp/ranks.html" --tune "$fx/normal.jsonl" "$fx/killed.jsonl" 2>"$tmp/ranks.msg" \
  || fail "ranks: exit $?: $(cat "$tmp/ranks.msg")"
py report --json "$fx/normal.jsonl" "$fx/killed.jsonl" >"$tmp/ranks.json"
python3 "$check" static "$tmp/ranks.html" >"$tmp/ranks.data" || fail "ranks: not self-contained"
charts=""
for l in 0 1; do
  for c in memory unallocated map-peak map-exit; do charts="$charts,log$l-dev0-$c"; done
done
browse "$tmp/ranks.html" ranks
python3 "$check" dom "$tmp/ranks.dom" "$tmp/ranks.err" "$tmp/ranks.json" "$charts" \
  || fail "ranks: the page in Chromium"
shot "$tmp/ranks.html" "$artifacts/report-ranks.png"
for text in "Ranks: 2 logs" "Tuning: what cudapool tune finds" "Out of memory: 1 event" \
            "Blocks alive at exit: 4 blocks still allocated at exit" "By site and size: " "Allocation sites holding the most bytes" \
            "Segment map at the reserved peak" "no summary line"; do
  grep -qF "$text" "$tmp/ranks.dom" || fail "ranks: the page lacks: $text"
done
"$src/scripts/cudapool" tune --json "$fx/normal.jsonl" "$fx/killed.jsonl" >"$tmp/tune.json"
python3 - "$tmp/ranks.html" "$tmp/tune.json" <<'PY' || fail "ranks: the embedded tune table"
import json, re, sys
page = open(sys.argv[1]).read()
data = json.loads(re.search(r'id="cudapool-data">(.*?)</script>', page, re.S).group(1))
tune, want = data["tune"], json.load(open(sys.argv[2]))
assert tune["schema"] == "cudapool.tune/1", tune.get("schema")
results = lambda t: [l["results"] for l in t["logs"]]   # "seconds" differs from run to run
assert results(tune) == results(want) and tune["recommendation"] == want["recommendation"]
assert [l["rank"] for l in data["logs"]] == [0, 1] and len(data["ranks"]) == 2, data["ranks"]
PY

# ---- --tune that fails: the page without its tuning section, the reason in it (issue 26) -------
printf '#!/bin/sh\necho "tune: out of luck" >&2\nexit 3\n' >"$tmp/failing-tune"
chmod +x "$tmp/failing-tune"
CUDAPOOL_TUNE="$tmp/failing-tune" py report --html "$tmp/notune.html" --tune "$fx/normal.jsonl" \
  2>"$tmp/notune.msg" || fail "a failing --tune: exit $?: $(cat "$tmp/notune.msg")"
py report --json "$fx/normal.jsonl" >"$tmp/notune.json"
browse "$tmp/notune.html" notune
python3 "$check" dom "$tmp/notune.dom" "$tmp/notune.err" "$tmp/notune.json" \
  log0-dev0-memory,log0-dev0-unallocated,log0-dev0-map-peak,log0-dev0-map-exit ||
  fail "a failing --tune: the page in Chromium"
grep -qF "No tuning: --tune:" "$tmp/notune.dom" && grep -qF "tune: out of luck" "$tmp/notune.dom" ||
  fail "a failing --tune: the page does not say why it has no tuning"

# ---- two ranks on one clock, frames by library + offset (viewers.jsonl, viewers-rank1.jsonl) ---
py report --html "$tmp/clock.html" "$fx/viewers.jsonl" "$fx/viewers-rank1.jsonl" 2>/dev/null \
  || fail "one clock: exit $?"
py report --json "$fx/viewers.jsonl" "$fx/viewers-rank1.jsonl" >"$tmp/clock.json"
python3 "$check" static "$tmp/clock.html" >/dev/null || fail "one clock: not self-contained"
charts=""
for c in 0-dev0 0-dev1 1-dev0; do
  for k in memory unallocated map-peak map-exit; do charts="$charts,log$c-$k"; done
done
browse "$tmp/clock.html" clock
python3 "$check" dom "$tmp/clock.dom" "$tmp/clock.err" "$tmp/clock.json" "$charts" \
  || fail "one clock: the page in Chromium"
# each rank's first event 1 ms after its start; rank 1 started 0.25 s after rank 0
python3 "$check" clock "$tmp/clock.html" 0.001,0.251 || fail "one clock: the ranks' time axis"
python3 "$check" clock "$tmp/example.html" || fail "one log: not timed from its first event"
python3 "$check" clock "$tmp/ranks.html" || fail "runs an hour apart: not each from its first event"
python3 "$check" viewers "$tmp/clock.html" "$tmp/clock.dom" || fail "one clock: the frames' names"

# ---- Python stacks (CUDAPOOL_BACKTRACE=all: python_stacks.jsonl): Python sites first, each named
# by its first frame of the program's own, its whole Python stack below it ----------------------
py report --html "$tmp/python.html" "$fx/python_stacks.jsonl" 2>/dev/null || fail "python stacks: exit $?"
browse "$tmp/python.html" python
python3 "$check" shows "$tmp/python.dom" "$tmp/python.err" \
  "frame 1: /home/me/train.py:41 Net.forward" \
  "frame 1: .../sources/models/layers.py:7 Block.__call__" \
  "> /home/me/train.py:41 Net.forward" \
  "Python stacks first" || fail "python stacks: the page in Chromium"

# ---- held over time (issue 31): tests/cli/fixtures/held.jsonl, two devices whose means and time
# above the level were worked out by hand (report_held.sh), with --level 0.25: the card "Held over
# time" shows report --json's figures in the browser (check dom: every data-held cell), in words;
# a log of one event: no time span, said so ------------------------------------------------------
py report --html "$tmp/held.html" --level 0.25 "$fx/held.jsonl" 2>/dev/null || fail "held: exit $?"
py report --json --level 0.25 "$fx/held.jsonl" >"$tmp/held.json"
charts=""
for d in 0 1; do
  for c in memory unallocated map-peak; do charts="$charts,log0-dev$d-$c"; done
done
browse "$tmp/held.html" held
python3 "$check" dom "$tmp/held.dom" "$tmp/held.err" "$tmp/held.json" "$charts" \
  || fail "held: the page in Chromium"
python3 - "$tmp/held.dom" <<'PY' || fail "held: the figures of the hand-made log"
import html, json, re, sys
dom = open(sys.argv[1]).read()
check = json.loads(html.unescape(re.search(r'<pre id="cudapool-selfcheck"[^>]*>(.*?)</pre>', dom, re.S).group(1)))
MiB, S = 1 << 20, 10 ** 9
got = {(h["dev"], h["key"]): h["value"] for h in check["held"]}
assert got == {("0", "mean_allocated"): 13841203, ("0", "mean_reserved"): 32 * MiB,
               ("0", "above_ns"): 2 * S, ("1", "mean_allocated"): 3355443,
               ("1", "mean_reserved"): 8 * MiB, ("1", "above_ns"): 2 * S,
               ("all", "mean_allocated"): 17196646, ("all", "mean_reserved"): 40 * MiB,
               ("all", "above_ns"): 3 * S}, got
PY
python3 "$check" shows "$tmp/held.dom" "$tmp/held.err" "Held over time" "20.0 MiB (0.25 of the peak)" \
  "30.0 MiB (0.25 of the peak)" "30.0 %" "from its first event to its last: 10 s" \
  "their reserved bytes added up, which peaked at 120 MiB (2 s)" >/dev/null || fail "held: the card's words"
py report --html "$tmp/held-one.html" "$fx/held-one-event.jsonl" 2>/dev/null || fail "held, one event: exit $?"
browse "$tmp/held-one.html" held-one
python3 "$check" shows "$tmp/held-one.dom" "$tmp/held-one.err" \
  "No time span: the log's first and last events are at the same time" >/dev/null \
  || fail "held, one event: the page in Chromium"

# ---- logs that lie, end early, carry terminal controls (issue 26 items 7, 9, 11): the page says
# what the text report says (tests/cli/report_ending.sh, report_figures.sh) and draws them ------
python3 "$fx/hostile_logs.py" "$tmp" omitted cut made_up huge hostile devices
py report --html "$tmp/hostile.html" "$tmp/omitted.jsonl" "$tmp/cut.jsonl" "$tmp/made_up.jsonl" \
  "$tmp/huge.jsonl" "$tmp/hostile.jsonl" 2>/dev/null || fail "hostile logs: exit $?"
browse "$tmp/hostile.html" hostile
python3 "$check" shows "$tmp/hostile.dom" "$tmp/hostile.err" \
  "and 3 more blocks alive at exit (2.86 MiB requested, 3.00 MiB in blocks) not listed in the summary" \
  "no summary line: the process was killed, crashed or the log was cut short; the last line (line 11) has no newline at its end" \
  "not as the events have it: no block is alive there at the end of the events" \
  "Blocks alive at exit: 2 blocks still allocated at exit (listed by the summary line, counted from the events), 3.00 MiB" \
  "impossible" "impossible (its figures are)" >/dev/null \
  || fail "hostile logs: the page in Chromium"
# huge.jsonl's sums (24 EiB allocated, 20 EiB reserved) are not written as sizes (its single 12 EiB
# blocks are)
if grep -qE "(24|20)\.0 EiB" "$tmp/hostile.dom"; then fail "hostile logs: a sum past 2^64 written as a size"; fi
# ---- 20000 devices (item 13): a page of the first 256, drawn ----------------------------------
py report --html "$tmp/devices.html" "$tmp/devices.jsonl" 2>/dev/null || fail "devices: exit $?"
[ "$(stat -c %s "$tmp/devices.html")" -lt 1000000 ] || fail "devices: a page of $(stat -c %s "$tmp/devices.html") bytes"
browse "$tmp/devices.html" devices
python3 "$check" shows "$tmp/devices.dom" "$tmp/devices.err" "Device 255" \
  "skipped, as are all such events: 19744 events of 19744 devices" >/dev/null \
  || fail "devices: the page in Chromium"
if grep -q '>Device 256<' "$tmp/devices.dom"; then fail "devices: a section of device 256"; fi

# ---- errors: a missing library, usage ---------------------------------------------------------
mkdir "$tmp/empty"
rc=0; CUDAPOOL_UPLOT_DIR="$tmp/empty" py report --html "$tmp/none.html" "$ex" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "no uPlot: exit $rc, not 1"
grep -q "uPlot 1.6.32 is not installed" "$tmp/err" && grep -q "npm ci --prefix" "$tmp/err" \
  || fail "no uPlot: the message does not name the command that installs it: $(cat "$tmp/err")"
[ ! -e "$tmp/none.html" ] && ! grep -q Traceback "$tmp/err" || fail "no uPlot: a page, or a traceback"
for args in "--tune --no-tune $ex" "--html $tmp/x.html --json $ex" "--html $tmp/x.html - -"; do
  rc=0; py report $args >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  [ $rc -eq 2 ] || fail "report $args: exit $rc, not 2"
done
rc=0; py report --html "$tmp/x.html" "$fx/normal.jsonl" "$tmp/missing.jsonl" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] && grep -q "missing.jsonl" "$tmp/err" && [ ! -e "$tmp/x.html" ] || fail "a missing log: exit $rc"

# ---- a long log: a few MB, downsampled, peaks exact (no browser). The time is printed, not
# checked (CI machines vary); bench/ measures it. ---
python3 "$src/bench/make_random_log.py" 1000000 "$tmp/long.jsonl"
start=$(date +%s.%N)
py report --html "$tmp/long.html" "$tmp/long.jsonl" 2>/dev/null || fail "long log: exit $?"
took=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
py report --json "$tmp/long.jsonl" >"$tmp/long.json"
python3 "$check" large "$tmp/long.html" "$tmp/long.json" 8000000 || fail "long log"
echo "the page of 1,000,000 events (and their replay): $took s, $(stat -c %s "$tmp/long.html") bytes"
rm -f "$tmp/long.jsonl"

# ---- an install writes the page from its own files --------------------------------------------
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || fail "cmake --install failed"
(cd "$tmp" && env -u CUDAPOOL_BUILD_DIR PYTHONPATH="$tmp/prefix/share/cudapool" \
   python3 -m cudapool_analysis report --html "$tmp/installed.html" "$ex" "$fx/normal.jsonl" 2>"$tmp/err") \
  || fail "the installed package: $(cat "$tmp/err")"
python3 "$check" static "$tmp/installed.html" >/dev/null || fail "the installed package's page"
echo "ok: report --html"
