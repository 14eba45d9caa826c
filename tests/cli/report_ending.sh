#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_ending.sh: what `cudapool report` (text and --json) says about how a log ends
# and about the blocks alive at exit that the summary counts without listing them (issue 26, item
# 7): the summary's leaks_omitted in the counts and in "... and C more blocks alive at exit (S
# requested, B in blocks) not listed in the summary"; a log without a summary line described
# without claiming one cause, with what the log tells (its last line cut, a cut summary line, a
# seq gap); a summary line over the readers' 64 MiB limit named as such, not as a process that
# did not exit normally. The logs: tests/cli/fixtures/hostile_logs.py. The page: report_html.sh.
set -euo pipefail
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
hasnt() { if grep -qF -- "$1" "$2"; then fail "$2: unexpected: $1"; fi; }
python3 "$fx/hostile_logs.py" "$tmp" omitted cut cut_summary gap long_summary
report() { cudapool report "$@"; }

# ---- leaks_omitted: 2 listed, 3 counted only; the events have the same 5 alive ----------------
report "$tmp/omitted.jsonl" >"$tmp/omitted.txt" || fail "omitted: exit $?"
o="$tmp/omitted.txt"
has "Blocks alive at exit (listed by the summary line, counted from the events): 5 blocks still allocated at exit, 5.00 MiB (5242880 bytes) in blocks" "$o"
has "  ... and 3 more blocks alive at exit (2.86 MiB (3000000 bytes) requested, 3.00 MiB (3145728 bytes) in blocks) not listed in the summary" "$o"
hasnt "Notes:" "$o"       # the summary and the events agree
report --json "$tmp/omitted.jsonl" >"$tmp/omitted.json" || fail "omitted --json: exit $?"
python3 - "$tmp/omitted.json" <<'PY' || fail "omitted: JSON report wrong"
import json, sys
lk = json.load(open(sys.argv[1]))["leaks"]
assert (lk["count"], lk["bytes"], lk["requested_bytes"], lk["listed"]) == (5, 5 << 20, 5000000, 2), lk
assert lk["omitted"] == {"count": 3, "size": 3000000, "block_size": 3 << 20}, lk["omitted"]
assert lk["not_listed"] == lk["omitted"] and lk["disagreements"] == 0, lk
PY
# a leaks_omitted that the events do not bear out: noted, the events' figures counted
sed 's/"leaks_omitted":{"count":3,/"leaks_omitted":{"count":30,/' "$tmp/omitted.jsonl" >"$tmp/omitted30.jsonl"
report "$tmp/omitted30.jsonl" >"$tmp/omitted30.txt" || fail "omitted30: exit $?"
has "5 blocks still allocated at exit, 5.00 MiB (5242880 bytes) in blocks" "$tmp/omitted30.txt"
has "the summary counts 30 blocks alive at exit that it does not list (3000000 bytes requested, 3145728 in blocks); the events have 3 such blocks (3000000 bytes requested, 3145728 in blocks): the events' are counted" "$tmp/omitted30.txt"
# a leaks_omitted of the wrong kind: named, left out
sed 's/"leaks_omitted":{"count":3,/"leaks_omitted":{"count":-3,/' "$tmp/omitted.jsonl" >"$tmp/omitted-bad.jsonl"
report "$tmp/omitted-bad.jsonl" >"$tmp/omitted-bad.txt" || fail "omitted-bad: exit $?"
has "summary leaks_omitted: count is not an integer from 0 to 2**64-1: ignored" "$tmp/omitted-bad.txt"
has "the events have 3 block(s) alive at exit (3145728 bytes in blocks) that the summary's leaks do not list: counted" "$tmp/omitted-bad.txt"

# ---- no summary line: one sentence for every cause, and what the log tells ------------------
no_summary="no summary line: the process was killed, crashed or the log was cut short"
for name in cut cut_summary gap long_summary; do
  report "$tmp/$name.jsonl" >"$tmp/$name.txt" || fail "$name: exit $?"
  hasnt "did not exit normally" "$tmp/$name.txt"
done
has "  log         11 lines, 9 events, $no_summary; the last line (line 11) has no newline at its end: it was cut short" "$tmp/cut.txt"
has "  log         11 lines, 9 events, $no_summary; the last line (line 11) has no newline at its end: a summary line cut short" "$tmp/cut_summary.txt"
has "  log         7 lines, 6 events, $no_summary; seq jumps 1 time(s), first at line 6 (seq 9 after 4): events were lost" "$tmp/gap.txt"
has "Statistics of device 0: no summary line was read; these are the statistics its events imply:" "$tmp/gap.txt"
has "Blocks alive at exit: no summary line was read; 5 blocks still allocated at the last event (seq 10), 5.00 KiB (5120 bytes) in blocks" "$tmp/gap.txt"
# the killed process of the fixtures: nothing more to tell
report "$fx/killed.jsonl" >"$tmp/killed.txt" || fail "killed: exit $?"
has "  log         16 lines, 15 events, $no_summary" "$tmp/killed.txt"
hasnt "$no_summary;" "$tmp/killed.txt"

# ---- a summary line over the readers' limit: rejected, and said so ----------------------------
o="$tmp/long_summary.txt"
has "  log         11 lines, 9 events, the summary line (line 11, 68158179 bytes) is longer than the readers' limit of 67108864 bytes (64 MiB) and was skipped: the process exited normally, but the statistics and leaks below are what its events imply" "$o"
has "  line 11: malformed: longer than 64 MiB (67108864 bytes)" "$o"
hasnt "$no_summary" "$o"
report --json "$tmp/long_summary.jsonl" >"$tmp/long.json" || fail "long_summary --json: exit $?"
report --json "$tmp/cut.jsonl" >"$tmp/cut.json" || fail "cut --json: exit $?"
python3 - "$tmp/long.json" "$tmp/cut.json" <<'PY' || fail "the JSON report's ending"
import json, sys
long, cut = (json.load(open(p)) for p in sys.argv[1:])
assert long["exited_normally"] is True and long["summary"] is None, long["ending"]
assert (long["ending"]["summary"], long["ending"]["line"]) == ("too long", 11), long["ending"]
assert long["leaks"]["source"] == "events" and long["leaks"]["count"] == 5, long["leaks"]
assert cut["exited_normally"] is False and cut["ending"]["summary"] == "none", cut["ending"]
assert cut["ending"]["clues"] == ["the last line (line 11) has no newline at its end: it was cut short"]
PY
# stdin: the same ending (the spooled copy is read back)
report - <"$tmp/cut.jsonl" >"$tmp/cut-stdin.txt" || fail "cut from stdin: exit $?"
has "$no_summary; the last line (line 11) has no newline at its end: it was cut short" "$tmp/cut-stdin.txt"
echo "report_ending: ok"
