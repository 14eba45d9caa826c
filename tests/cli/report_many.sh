#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_many.sh: `cudapool report` with several logs (the ranks of one job: a section per
# log and the cross-rank table), and with what is not a readable log (a directory, an empty file, a
# missing file, a file that is not a log: a clear message and exit 1, never a traceback) or has lines
# with out-of-range figures (negative dev, sizes and pointers of 2**64 or more, non-integers: each
# line named, no wrong figure printed). The single-log report itself: report_tool.sh.
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
fx="$src/tests/cli/fixtures"
report() { PYTHONPATH="$src/scripts" python3 -m cudapool_analysis report "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
has() { grep -qF -- "$1" "$2" || fail "$2: missing: $1"; }
hasnt() { if grep -qF -- "$1" "$2"; then fail "$2: unexpected: $1"; fi; }
# fails RC WHAT ARGS...: report ARGS exits RC, prints nothing on stdout and no traceback
fails() {
  local want=$1 what=$2 rc=0
  shift 2
  report "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq "$want" ] || fail "$what: exit $rc, not $want: $(head -c 300 "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$what: something on stdout"
  hasnt "Traceback" "$tmp/err"
}

# ---- two logs: a section each, then the cross-rank table ----------------------------------------
report "$fx/normal.jsonl" "$fx/killed.jsonl" >"$tmp/two.txt" || fail "two logs: exit $?"
o="$tmp/two.txt"
has "cudapool report: $fx/normal.jsonl" "$o"
has "cudapool report: $fx/killed.jsonl" "$o"
[ "$(grep -c '^Statistics of device 0' "$o")" = 2 ] || fail "two logs: not two statistics sections"
has "Ranks: 2 logs (a rank the header does not name: the log's place in the order given, from 0)" "$o"
sed -n '/^Ranks:/,$p' "$o" >"$tmp/ranks.txt"
cat >"$tmp/ranks.expected" <<EOF
Ranks: 2 logs (a rank the header does not name: the log's place in the order given, from 0)
  rank  host             device  peak allocated  peak reserved     OOMs     events  log
     0  node1                 0  23.00 MiB       32.00 MiB            1        109  $fx/normal.jsonl
     1  node2                 0  7.91 MiB        10.00 MiB            0         15  $fx/killed.jsonl  (no summary line)
  largest peak reserved: rank 0, device 0, 32.00 MiB (33554432 bytes)
EOF
diff "$tmp/ranks.expected" "$tmp/ranks.txt" >&2 || fail "two logs: the cross-rank table"
# each section is the single log's report, but for the verdict's held-over-time line: tune's idle
# study of several logs is the job's (the worst log's figures, docs/report.md), so a section may
# carry one its own log alone would not (here: killed.jsonl's, from normal.jsonl's bursts).
held_line() { awk '/^  Memory held over time:/ { skip = 1; next } skip && /^    / { next } { skip = 0; print }'; }
report "$fx/killed.jsonl" | held_line >"$tmp/killed.txt"
sed -n "\\|^cudapool report: $fx/killed.jsonl|,/^Ranks:/p" "$o" | sed '$d' | sed '$d' >"$tmp/section-all.txt"
grep -q "^  Memory held over time: .*" "$tmp/section-all.txt" ||
  fail "two logs: no held-over-time line in the second section (the job's idle study)"
held_line <"$tmp/section-all.txt" >"$tmp/section.txt"
diff "$tmp/killed.txt" "$tmp/section.txt" >&2 || fail "two logs: the second section differs from its own report"

report --json "$fx/normal.jsonl" "$fx/killed.jsonl" >"$tmp/two.json" || fail "two logs --json: exit $?"
report --json "$fx/normal.jsonl" >"$tmp/one.json"
python3 - "$tmp/two.json" "$tmp/one.json" <<'PY' || fail "two logs: JSON report wrong"
import json, sys
d, one = (json.load(open(p)) for p in sys.argv[1:])
assert d["schema"] == "cudapool.report/1" and len(d["logs"]) == 2, list(d)
# The verdict's held over time is tune's study of all the logs given (the job's): apart here.
first = d["logs"][0]
for r in (first, one):
    assert r["verdict"].pop("held_over_time"), "no held_over_time in the verdict"
    r["verdict"]["lines"] = [l for l in r["verdict"]["lines"] if l["what"] != "held_over_time"]
assert first == one, "the first log's report differs from its own"
assert [r["log"].rsplit("/", 1)[1] for r in d["ranks"]] == ["normal.jsonl", "killed.jsonl"]
r0, r1 = d["ranks"]
assert (r0["rank"], r0["rank_from"], r0["host"], r0["pid"], r0["events"], r0["ooms"]) == \
    (0, "order", "node1", 4242, 109, 1), r0
assert r0["devices"] == [{"dev": 0, "peak_allocated": 24118784, "peak_reserved": 33554432,
                          "ooms": 1, "events": 109}], r0
assert (r1["rank"], r1["exited_normally"]) == (1, False), r1
assert r1["devices"][0]["peak_allocated"] == 8291840 and r1["devices"][0]["peak_reserved"] == 10485760, r1
assert d["notes"] == [], d["notes"]
PY

# ---- ranks from the headers: a rank field, or RANK in an environment object ---------------------
python3 - "$fx" "$tmp" <<'PY'
import json, sys
fx, tmp = sys.argv[1:]
for name, extra in (("normal", {"rank": 3}), ("killed", {"environment": {"RANK": "2"}})):
    lines = open("%s/%s.jsonl" % (fx, name), "rb").read().split(b"\n")
    header = json.loads(lines[0]); header.update(extra)
    lines[0] = json.dumps(header).encode()
    open("%s/ranked-%s.jsonl" % (tmp, name), "wb").write(b"\n".join(lines))
PY
report "$tmp/ranked-normal.jsonl" "$tmp/ranked-killed.jsonl" >"$tmp/ranked.txt" || fail "ranked logs: exit $?"
has "Ranks: 2 logs" "$tmp/ranked.txt"
hasnt "the order given" "$tmp/ranked.txt"
grep -A1 '^  rank  host' "$tmp/ranked.txt" | grep -q '^     2  node2 .*ranked-killed.jsonl' ||
  fail "ranked logs: rank 2 (RANK in the header's environment) is not first"
has "  largest peak reserved: rank 3, device 0" "$tmp/ranked.txt"
report "$tmp/ranked-normal.jsonl" "$tmp/ranked-normal.jsonl" >"$tmp/twice.txt"
has "  note: rank 3 is named by 2 logs" "$tmp/twice.txt"

# ---- what cannot be read: a message naming it, exit 1, nothing on stdout ----------------------
fails 1 "a directory" "$tmp"
has "cudapool report: $tmp is a directory, not a log" "$tmp/err"
: >"$tmp/empty.jsonl"
fails 1 "an empty file" "$tmp/empty.jsonl"
has "cudapool report: $tmp/empty.jsonl is empty: not a log" "$tmp/err"
fails 1 "empty stdin" - </dev/null
has "cudapool report: <stdin> is empty" "$tmp/err"
fails 1 "a missing file" "$tmp/missing.jsonl"
has "cudapool report: cannot read $tmp/missing.jsonl: No such file or directory" "$tmp/err"
printf 'hello\nworld\n' >"$tmp/text.txt"
fails 1 "not a log" "$tmp/text.txt"
has "cudapool report: $tmp/text.txt is not a cudapool log: none of its 2 lines is a header, an event or a summary (line 1: malformed: not JSON" "$tmp/err"
# one bad log among good ones: every bad one named, no report at all
fails 1 "a good log and two bad ones" "$fx/normal.jsonl" "$tmp" "$tmp/missing.jsonl"
has "$tmp is a directory" "$tmp/err"
has "cannot read $tmp/missing.jsonl" "$tmp/err"
fails 2 "stdin twice" - -
fails 2 "no LOG"
"$src/scripts/cudapool" report "$fx/normal.jsonl" "$fx/killed.jsonl" >"$tmp/l.txt" ||
  fail "scripts/cudapool report with two logs failed"
cmp -s "$tmp/two.txt" "$tmp/l.txt" || fail "scripts/cudapool report with two logs differs"

# ---- out-of-range figures: the line named, the figure never printed ----------------------------
head -n 2 "$fx/normal.jsonl" >"$tmp/range.jsonl"   # the header, a segment_alloc at seq 1
cat >>"$tmp/range.jsonl" <<'EOF'
{"seq":2,"t_ns":5000010000,"tid":101,"dev":-1,"action":"alloc","ptr":"0x10000000","size":512,"block_size":512,"segment":"0x10000000","cache_hit":true}
{"seq":3,"t_ns":5000020000,"tid":101,"dev":0,"action":"alloc","ptr":"0x10000000","size":18446744073709551616,"block_size":512,"segment":"0x10000000","cache_hit":true}
{"seq":4,"t_ns":5000030000,"tid":101,"dev":0,"action":"alloc","ptr":"0x10000000000000000","size":512,"block_size":512,"segment":"0x10000000","cache_hit":true}
{"seq":5,"t_ns":5000040000,"tid":101,"dev":0,"action":"alloc","ptr":"0x10000000","size":512,"block_size":36893488147419103232,"segment":"0x10000000","cache_hit":true}
{"seq":6,"t_ns":5000050000,"tid":101,"dev":65536,"action":"alloc","ptr":"0x10000000","size":512}
{"seq":7,"t_ns":5000060000,"tid":101,"dev":0,"action":"alloc","ptr":"0x10000000","size":512.5}
{"seq":8,"t_ns":5000070000,"tid":101,"dev":0,"action":"alloc","ptr":"0x10000000","size":1e3}
{"seq":9,"t_ns":5000080000,"tid":101,"dev":0,"action":"alloc","ptr":"0x10000000","size":512,"segment":"0x1ffffffffffffffff"}
{"seq":10,"t_ns":5000090000,"tid":101,"dev":0,"action":"alloc","ptr":"0x10000000","size":1024,"block_size":1024,"segment":"0x10000000","cache_hit":true}
{"schema":"cudapool.log/1","action":"summary","seq":11,"t_ns":5000100000,"events":10,"devices":{"0":{"stats":{"allocated_bytes.all.current":-1.5,"reserved_bytes.all.current":4194304}}},"leaks":[{"dev":0,"ptr":"0x10000000","size":1024,"block_size":18446744073709551616,"seq":10,"t_ns":5000090000,"tid":101}],"log_errors":{"write_failed":false,"records_lost":0}}
EOF
report "$tmp/range.jsonl" >"$tmp/range.txt" || fail "out-of-range lines: exit $?"
o="$tmp/range.txt"
has "  malformed   8 line(s), skipped" "$o"
has "  line 3: malformed: dev is -1, not a device ordinal (0 to 65535)" "$o"
has "  line 4: malformed: size is 18446744073709551616, not below 2**64" "$o"
has "  line 5: malformed: ptr 0x10000000000000000 is not below 2**64" "$o"
has "  line 6: malformed: block_size is 36893488147419103232, not below 2**64" "$o"
has "  line 7: malformed: dev is 65536, not a device ordinal (0 to 65535)" "$o"
has "  line 8: malformed: size is not an integer" "$o"
has "  line 9: malformed: size is not an integer" "$o"
has "  line 10: malformed: segment 0x1ffffffffffffffff is not below 2**64" "$o"
has "  line 12: summary device 0: statistic allocated_bytes.all.current is not a 64-bit integer: ignored" "$o"
has "  line 12: summary leaks[0]: block_size is not an integer from 0 to 2**64-1: left out" "$o"
has "  log         12 lines, 2 events, summary line at line 12: the process exited normally" "$o"
has "  peak allocated  1.00 KiB (1024 bytes) at 0.000090 s (seq 10)" "$o"
# the summary's leak has no valid block_size: the events' block is counted (1024 bytes)
has "Blocks alive at exit (listed by the summary line, counted from the events): 1 block still allocated at exit, 1.00 KiB (1024 bytes) in blocks" "$o"
hasnt "device ID -1" "$o"
hasnt "device ID 65536" "$o"
hasnt "EiB" "$o"
hasnt "18446744073709551616 B" "$o"
report --json "$tmp/range.jsonl" >"$tmp/range.json" || fail "out-of-range lines --json: exit $?"
python3 - "$tmp/range.json" <<'PY' || fail "out-of-range lines: JSON report wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["malformed_lines"] == 8 and d["events"] == 2, (d["malformed_lines"], d["events"])
assert [p["line"] for p in d["problems"]][:8] == [3, 4, 5, 6, 7, 8, 9, 10], d["problems"]
assert list(d["devices"]) == ["0"], list(d["devices"])
assert "allocated_bytes.all.current" not in d["devices"]["0"]["stats"]
assert d["leaks"]["bytes"] == 1024 and d["leaks"]["entries"][0]["block_size"] is None, d["leaks"]
assert d["largest_requests"][0]["size"] == 1024, d["largest_requests"]
PY
echo "report_many: ok"
