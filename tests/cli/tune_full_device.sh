#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/tune_full_device.sh: cudapool tune's note on a row whose pool filled the simulated
# device (issue 29). With max_split_size_mb, blocks at or above the limit are never split and
# serve only requests close to their size, so they pile up in the cache until the device is full;
# then each new segment is refused, the pool gives back cached oversize blocks
# (release_available_cached_blocks) and asks again, which PyTorch counts as no retry: peak
# reserved at the device's size with 0 retries and 0 OOMs. The row says so: a note under the
# table and in --json ("oversize_releases", "note"), the count checked against the replay's own
# events (each segment_free after a segment_refused); no note on the rows that did not fill it,
# nor with a device large enough; with a fraction the note names the fraction's share.
# The log: bench/make_training_log --vary-shapes, 6 steps (6.2 GiB at most allocated), on 8 GiB.
set -euo pipefail
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-tune"
replay="$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
gen="$CUDAPOOL_BUILD_DIR/bench/make_training_log"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

log="$tmp/train.jsonl"
"$gen" --vary-shapes --steps 6 "$log" 2>/dev/null
"$bin" --quiet --rows 100 --device-memory 8G "$log" >"$tmp/out.txt" || fail "tune exited $?"
"$bin" --quiet --json --device-memory 8G "$log" >"$tmp/out.json" || fail "tune --json exited $?"
# the replay of one such setting: every segment given back follows a refusal of the device
"$replay" --quiet --conf 'max_split_size_mb:32' --device-memory 8G --write-log "$tmp/w32.jsonl" \
  --json "$log" >"$tmp/replay32.json" || fail "replay exited $?"

python3 - "$tmp/out.txt" "$tmp/out.json" "$tmp/replay32.json" "$tmp/w32.jsonl" <<'PY' ||
import json, sys
text = open(sys.argv[1]).read()
doc, replay = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
rows = {r["setting"]: r for r in doc["logs"][0]["results"]}
full = {s for s, r in rows.items() if r["peak_reserved"] == 8 << 30}
assert {"max_split_size_mb:32", "max_split_size_mb:20"} <= full, sorted(full)
for s, r in rows.items():
    if s in full:
        # the surprise the note explains: the whole device, yet no retry and no OOM
        assert r["retries"] == 0 and r["ooms"] == 0, r
        assert r["oversize_releases"] == r["device_frees"] > 0, r
        n = r["oversize_releases"]
        assert r["note"] == ("reserved filled the simulated device's 8.00 GiB: to make room the "
                             "pool gave back %d cached oversize blocks (max_split_size keeps "
                             "blocks at or above it whole, and they pile up), which PyTorch does "
                             "not count as retries; a real run would fill the GPU" % n), r["note"]
        line = "  note, rank %d (%s): %s.\n" % (r["rank"], s, r["note"])
        assert line in text, line
    else:
        assert r["note"] is None and r["peak_reserved"] < 8 << 30, r
notes = [l for l in text.splitlines() if l.startswith("  note, rank ")]
assert len(notes) == len(full), notes
# the replay: as many refusals as segments given back, each free right after a refusal
stats = replay["stats"]
assert stats["num_alloc_retries"] == 0 and stats["num_ooms"] == 0, stats
assert stats["num_device_free"] == rows["max_split_size_mb:32"]["oversize_releases"]
actions = [json.loads(l).get("action") for l in open(sys.argv[4])]
seq = [a for a in actions if a in ("segment_refused", "segment_free", "segment_alloc")]
frees = [i for i, a in enumerate(seq) if a == "segment_free"]
assert len(frees) == stats["num_device_free"] and all(seq[i - 1] == "segment_refused" or
                                                      seq[i - 1] == "segment_free" for i in frees)
assert seq.count("segment_refused") == len(frees), (seq.count("segment_refused"), len(frees))
PY
  fail "the notes"

# a device with room for it all: no note
"$bin" --quiet --json "$log" >"$tmp/big.json" || fail "tune on the header's device exited $?"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert all(r["note"] is None and r["oversize_releases"] == 0 for r in d["logs"][0]["results"])' \
  "$tmp/big.json" || fail "a note on a device with room"

# the fraction's share filled: named as such; garbage collection rows (segments freed by age,
# not for room) carry none
"$bin" --quiet --json --device-memory 10G --fraction 0.8 "$log" >"$tmp/frac.json" ||
  fail "tune --fraction exited $?"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
rows = {r["setting"]: r for r in d["logs"][0]["results"]}
note = rows["max_split_size_mb:20"]["note"]
assert note.startswith("reserved filled the 8.00 GiB that per_process_memory_fraction allows of "
                       "the simulated device'"'"'s 10.00 GiB: "), note
assert note.endswith("a real run would hold all it is allowed"), note
assert all(r["note"] is None for s, r in rows.items() if "garbage_collection" in s)' \
  "$tmp/frac.json" || fail "the fraction's note"
# the page: report --html --tune on the same log with its header's device made 8 GiB shows each
# note under its tune table (the DOM after the page's scripts ran, in headless Chromium)
src="$CUDAPOOL_SOURCE_DIR"
. "$src/tests/cli/browser.bash"
sed '1s/"total_memory":[0-9]*/"total_memory":8589934592/' "$log" >"$tmp/eight.jsonl"
PYTHONPATH="$src/scripts" CUDAPOOL_BUILD_DIR="$CUDAPOOL_BUILD_DIR" python3 -m cudapool_analysis \
  report --quiet --html "$tmp/page.html" --tune "$tmp/eight.jsonl" 2>"$tmp/page.err" ||
  fail "report --html --tune: $(cat "$tmp/page.err")"
browse "$tmp/page.html" page
python3 - "$tmp/page.dom" <<'PY' || fail "the page's tune notes"
import re, sys
dom = open(sys.argv[1]).read()
notes = re.findall(r'<div class="tune-note"><div class="note ">(rank \d+ \([^)]*\): [^<]*)</div>', dom)
assert any("max_split_size_mb:32" in n and "filled the simulated device" in n for n in notes), notes
print("the page's tune notes: %d, e.g. %s" % (len(notes), notes[0][:120]))
PY
echo "tune_full_device: ok"
