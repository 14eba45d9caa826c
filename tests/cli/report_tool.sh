#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_tool.sh: `python3 -m cudapool_analysis report` and `scripts/cudapool report` as a
# user runs them, on the synthetic logs in tests/cli/fixtures/ (made by make_logs.py). The expected
# numbers were worked out by hand from the scenarios in make_logs.py (comments there give each
# event's seq). Several logs and bad input: report_many.sh.
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
report() { PYTHONPATH="$src/scripts" python3 -m cudapool_analysis report "$@"; }
fx="$src/tests/cli/fixtures"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# has TEXT FILE / hasnt TEXT FILE: a fixed string is (is not) in FILE.
has() { grep -qF -- "$1" "$2" || fail "$2: missing: $1"; }
hasnt() { if grep -qF -- "$1" "$2"; then fail "$2: unexpected: $1"; fi; }

# ---- normal.jsonl: a normal exit, summary line with per-pool statistics and four leaks ---------
report "$fx/normal.jsonl" >"$tmp/normal.txt" || fail "normal.jsonl: exit $?"
o="$tmp/normal.txt"
has "cudapool report: $fx/normal.jsonl" "$o"
has "  executable  /usr/bin/python3  (argv: python3 train.py --steps 10)" "$o"
has "  pid         4242 on host node1" "$o"
has "  started     2026-11-29T10:00:00.000000Z" "$o"
has '  conf        "max_split_size_mb:128,garbage_collection_threshold:0.8" from PYTORCH_CUDA_ALLOC_CONF' "$o"
has "  device 0    NVIDIA H200, 140.40 GiB (150754820096 bytes)" "$o"
has "  log         111 lines, 109 events, summary line at line 111: the process exited normally" "$o"
has "Statistics of device 0 (the summary line at exit):" "$o"
# The summary's statistics in memory_summary()'s layout: 13632000 B current = 13312 KiB (13312.5
# truncated), peak 24118784 = 23553 KiB, 34634752 allocated = 33823 KiB, 21002752 freed = 20510 KiB.
has "|            OOMs: 1            |       device alloc retries: 0             |" "$o"
has "| Allocated memory      |  13312 KiB |  23553 KiB |  33823 KiB |  20510 KiB |" "$o"
has "|       from large pool |  13312 KiB |  23552 KiB |  33792 KiB |  20480 KiB |" "$o"
has "|       from small pool |      0 KiB |      4 KiB |     31 KiB |     30 KiB |" "$o"
has "| GPU reserved memory   |  32768 KiB |  32768 KiB |  43008 KiB |  10240 KiB |" "$o"
has "| GPU reserved segments |       3    |       3    |       4    |       1    |" "$o"
has "| Allocations           |       4    |       6    |      36    |      32    |" "$o"
has "| Oversize GPU segments |       0    |       0    |       0    |       0    |" "$o"
has "| device allocs: 4   device frees: 1" "$o"
hasnt "Non-releasable" "$o"   # not in this summary's statistics: the row is left out
# Peaks: allocated 4+3+6+10 MiB + 1024 + 512 at seq 15 (31 ms after the first event); reserved
# 20+2+10 MiB at seq 14 (and again at seq 109: the first time counts).
has "  peak allocated  23.00 MiB (24118784 bytes) at 0.031000 s (seq 15)" "$o"
has "  peak reserved   32.00 MiB (33554432 bytes) at 0.030000 s (seq 14)" "$o"
# At seq 14: allocated 4+3+6 MiB + 1024 + 512 = 13633024; free 33554432 - 13633024 = 19921408;
# gaps: 7 MiB in S1, 2 MiB - 1536 in S2, all 10 MiB of S3; 1 - 10485760/19921408 = 0.4736.
has "Fragmentation at the reserved peak, device 0 (0.030000 s, seq 14):" "$o"
has "  reserved            32.00 MiB (33554432 bytes)" "$o"
has "  allocated           13.00 MiB (13633024 bytes)" "$o"
has "  fenced              0 B  (waiting for work on another stream: not free)" "$o"
has "  free cached         19.00 MiB (19921408 bytes)  (reserved - allocated - fenced)" "$o"
has "  largest free block  10.00 MiB (10485760 bytes)  at 0x30000000 in segment 0x30000000" "$o"
has "  fragmentation       0.4736  (1 - largest free block / free)" "$o"
has "  regions             3  (segments and runs of mapped pages)" "$o"
# Request sizes: counts first, then the larger size; 3145728 (count 1, the 11th) is cut.
sed -n '/^Most frequent request sizes/,/^$/p' "$o" >"$tmp/top.txt"
cat >"$tmp/top.expected" <<'EOF'
Most frequent request sizes (36 allocs, 15 distinct sizes):
       count  size
           8  512 B
           6  256 B
           5  1000 B
           3  4.00 KiB (4096 bytes)
           3  128 B
           2  2.00 KiB (2048 bytes)
           1  10.00 MiB (10485760 bytes)
           1  8.00 MiB (8388608 bytes)
           1  6.00 MiB (6291456 bytes)
           1  4.00 MiB (4194204 bytes)

EOF
diff "$tmp/top.expected" "$tmp/top.txt" >&2 || fail "normal.jsonl: most frequent request sizes"
has "  10.00 MiB (10485760 bytes)       dev 0   seq 15         at 0.031000 s" "$o"
has "  4.00 KiB (4096 bytes)            dev 0   seq 75         at 0.087000 s" "$o"
has "  2.00 KiB (2048 bytes)            dev 0   seq 39         at 0.075000 s" "$o"
has "  40.00 MiB (41943040 bytes)       dev 0   seq 21         at 0.060000 s" "$o"   # the oom
has "Blocks alive at exit (listed by the summary line, counted from the events): 4 blocks still allocated at exit, 13.00 MiB (13632000 bytes) in blocks" "$o"
has "  dev 0  ptr 0x10400000  size 3145728 B  block 3145728 B  seq 7  at 0.005000 s  thread 102" "$o"
sed -n '/ptr 0x10400000/,+2p' "$o" >"$tmp/frames.txt"
printf '%s\n' "  dev 0  ptr 0x10400000  size 3145728 B  block 3145728 B  seq 7  at 0.005000 s  thread 102" \
  "      0x7f33aa0101c0 /usr/lib/libtorch_cuda.so(forward+0x1c)" "      0x55d0c0009abc" >"$tmp/frames.expected"
diff "$tmp/frames.expected" "$tmp/frames.txt" >&2 || fail "normal.jsonl: backtrace not one frame per line"
hasnt "Notes:" "$o"      # summary and events agree: nothing to say
hasnt "Problems:" "$o"

report --json "$fx/normal.jsonl" >"$tmp/normal.json" || fail "normal.jsonl --json: exit $?"
python3 - "$tmp/normal.json" <<'PY' || fail "normal.jsonl: JSON report wrong"
import json, sys
d = json.load(open(sys.argv[1]))
for key in ("schema", "log", "header", "exited_normally", "lines", "events", "actions",
            "malformed_lines", "problems", "summary", "devices", "top_request_sizes",
            "largest_requests", "ooms", "leaks", "notes"):
    assert key in d, key
assert d["schema"] == "cudapool.report/1"
assert d["exited_normally"] is True and d["events"] == 109 and d["malformed_lines"] == 0
assert d["header"]["pid"] == 4242
dev = d["devices"]["0"]
assert dev["stats_source"] == "summary"
assert dev["stats"]["allocated_bytes.all.peak"] == 24118784
assert dev["peak_allocated"] == {"bytes": 24118784, "seq": 15, "t_ns": 5031000000, "time_s": 0.031}, dev["peak_allocated"]
assert dev["peak_reserved"] == {"bytes": 33554432, "seq": 14, "t_ns": 5030000000, "time_s": 0.03}, dev["peak_reserved"]
f = dev["fragmentation"]
assert (f["reserved"], f["allocated"], f["free_cached"], f["largest_free_block"]) == \
    (33554432, 13633024, 19921408, 10485760), f
assert f["largest_free_block_ptr"] == "0x30000000" and f["regions"] == 3, f
assert abs(f["fragmentation"] - (1 - 10485760 / 19921408)) < 1e-6, f
assert [(e["size"], e["count"]) for e in d["top_request_sizes"]] == [
    (512, 8), (256, 6), (1000, 5), (4096, 3), (128, 3), (2048, 2),
    (10485760, 1), (8388608, 1), (6291456, 1), (4194204, 1)], d["top_request_sizes"]
assert [e["seq"] for e in d["largest_requests"]] == [15, 3, 11, 2, 7, 4, 33, 54, 75, 39], d["largest_requests"]
assert [e["size"] for e in d["ooms"]] == [41943040]
lk = d["leaks"]
assert lk["source"] == "summary" and lk["count"] == 4 and lk["bytes"] == 13632000, lk
# the summary lists them by address; the report by seq
assert [e["ptr"] for e in lk["entries"]] == ["0x10000000", "0x10400000", "0x20000400", "0x10e00000"]
assert lk["entries"][0]["backtrace"] == ["0x55d0c0001234", "0x55d0c0005678", "0x7f33aa010000"]
assert d["notes"] == [], d["notes"]
PY

# stdin gives the same report (the second pass reads a spooled copy)
report --json - <"$fx/normal.jsonl" >"$tmp/stdin.json" || fail "stdin: exit $?"
python3 - "$tmp/normal.json" "$tmp/stdin.json" <<'PY' || fail "stdin report differs from the file's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["log"] == "<stdin>"
a.pop("log"), b.pop("log")
# tune runs by default on a file, not on stdin (read once: --tune fans it out); the rest agrees
sa, sb = a["verdict"].pop("setting"), b["verdict"].pop("setting")
assert "setting" in sa or sa.get("keep_own"), sa
assert sb["not_run"].startswith("a log is not a regular file"), sb
assert b["verdict"].pop("held_over_time") is None
a["verdict"].pop("held_over_time")
for x in (a, b):
    x["verdict"]["lines"] = [l for l in x["verdict"]["lines"]
                             if l["what"] not in ("setting", "held_over_time")]
assert a == b
PY

# ---- killed.jsonl: no summary line: the statistics the events imply ----------------------------
report "$fx/killed.jsonl" >"$tmp/killed.txt" || fail "killed.jsonl: exit $?"
o="$tmp/killed.txt"
has "  log         16 lines, 15 events, no summary line: the process was killed, crashed or the log was cut short" "$o"
has "Statistics of device 0: no summary line was read; these are the statistics its events imply:" "$o"
# Blocks: A 1 MiB, B 2 MiB, P 1 MiB, C 2 MiB, Z 2000384 (peak at seq 6: 8291840 = 8097 KiB),
# B, C, P freed (5242880 = 5120 KiB), Q 1024, V 5241856: back at 8291840, which is not a new peak;
# allocated in all 13534720 = 13217 KiB. Requested: Z asked 2000000, Q 700: 8291132 at the end
# (8096 KiB), 8291456 at seq 6 (8097 KiB), 13534012 in all (13216 KiB).
has "| Allocated memory      |   8097 KiB |   8097 KiB |  13217 KiB |   5120 KiB |" "$o"
has "| Active memory         |   8097 KiB |   8097 KiB |  13217 KiB |   5120 KiB |" "$o"
has "| Requested memory      |   8096 KiB |   8097 KiB |  13216 KiB |   5120 KiB |" "$o"
has "| GPU reserved memory   |  10240 KiB |  10240 KiB |  10240 KiB |      0 B   |" "$o"
has "| Allocations           |       4    |       5    |       7    |       3    |" "$o"
has "| GPU reserved segments |       2    |       2    |       2    |       0    |" "$o"
has "|            OOMs: 0            |       device alloc retries: -             |" "$o"
hasnt "from large pool" "$o"
has "  peak allocated  7.91 MiB (8291840 bytes) at 0.000500 s (seq 6)" "$o"
has "  peak reserved   10.00 MiB (10485760 bytes) at 0.000900 s (seq 12)" "$o"
# At seq 12: A and Z allocated (3048960) of 10 MiB. P (1 MiB) was freed at seq 11 but its fence
# passes only at seq 14: fenced, not free (docs/report.md, "Words and figures"): free 10485760 -
# 3048960 - 1048576 = 6388224; P still splits S's free space into [1M, 3M) and [4M, 6M); T is
# 2 MiB too; the first of those wins: 1 - 2097152/6388224 = 0.6717.
has "Fragmentation at the reserved peak, device 0 (0.000900 s, seq 12):" "$o"
has "  allocated           2.91 MiB (3048960 bytes)" "$o"
has "  fenced              1.00 MiB (1048576 bytes)  (waiting for work on another stream: not free)" "$o"
has "  free cached         6.09 MiB (6388224 bytes)  (reserved - allocated - fenced)" "$o"
has "  largest free block  2.00 MiB (2097152 bytes)  at 0x50100000 in segment 0x50000000" "$o"
has "  fragmentation       0.6717  (1 - largest free block / free)" "$o"
has "  regions             2  (segments and runs of mapped pages)" "$o"
has "Blocks alive at exit: no summary line was read; 4 blocks still allocated at the last event (seq 15), 7.91 MiB (8291840 bytes) in blocks" "$o"
has "  dev 0  ptr 0x60000000  size 700 B  block 1024 B  seq 13  at 0.001000 s  thread 103" "$o"
sed -n '/ptr 0x50600000/,+2p' "$o" >"$tmp/frames.txt"
printf '%s\n' "  dev 0  ptr 0x50600000  size 2000000 B  block 2000384 B  seq 6  at 0.000500 s  thread 101" \
  "      0x401000" "      0x402000" >"$tmp/frames.expected"
diff "$tmp/frames.expected" "$tmp/frames.txt" >&2 || fail "killed.jsonl: leak backtrace"
report --json "$fx/killed.jsonl" >"$tmp/killed.json" || fail "killed.jsonl --json: exit $?"
python3 - "$tmp/killed.json" <<'PY' || fail "killed.jsonl: JSON report wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exited_normally"] is False and d["summary"] is None
dev = d["devices"]["0"]
assert dev["stats_source"] == "events"
s = dev["stats"]
assert (s["allocated_bytes.all.current"], s["allocated_bytes.all.peak"]) == (8291840, 8291840), s
assert (s["reserved_bytes.all.current"], s["reserved_bytes.all.peak"]) == (10485760, 10485760), s
assert (s["requested_bytes.all.current"], s["requested_bytes.all.peak"]) == (8291132, 8291456), s
assert (s["active.all.current"], s["allocation.all.peak"], s["segment.all.current"]) == (4, 5, 2), s
assert dev["peak_allocated"]["seq"] == 6 and dev["peak_reserved"]["seq"] == 12
f = dev["fragmentation"]
assert (f["allocated"], f["fenced"], f["free_cached"], f["largest_free_block"]) == \
    (3048960, 1048576, 6388224, 2097152), f
assert abs(f["fragmentation"] - (1 - 2097152 / 6388224)) < 1e-6, f
lk = d["leaks"]
assert lk["source"] == "events" and lk["last_seq"] == 15 and lk["bytes"] == 8291840, lk
assert [e["ptr"] for e in lk["entries"]] == ["0x50000000", "0x50600000", "0x60000000", "0x50100000"], lk
assert lk["entries"][1]["backtrace"] == ["0x401000", "0x402000"]
PY

# ---- malformed.jsonl: bad lines counted with their line numbers and skipped ------------------
report "$fx/malformed.jsonl" >"$tmp/bad.txt" || fail "malformed.jsonl: exit $?"
o="$tmp/bad.txt"
has "  malformed   7 line(s), skipped" "$o"
has "Problems: 7 (all listed)" "$o"
has "  line 3: malformed: not JSON" "$o"
has "  line 5: malformed: not a JSON object" "$o"
has "  line 6: malformed: event without 'ptr'" "$o"
has "  line 7: malformed: ptr is not a hex string" "$o"
has "  line 8: malformed: not valid UTF-8" "$o"
has "  line 10: malformed: size is not an integer" "$o"
has "  line 11: malformed: not JSON" "$o"
hasnt "  line 9:" "$o"    # a blank line is skipped silently
hasnt "  line 12:" "$o"   # an unknown action is counted, not malformed
has "  log         15 lines, 5 events, summary line at line 15: the process exited normally" "$o"
has "Events: alloc 2, free_requested 1, future_action 1, segment_alloc 1" "$o"
has "  actions this report does not know, counted only: future_action" "$o"
has "  seq is not consecutive 1 time(s); first at line 12: seq 8 after 2" "$o"
has "  the summary counts 10 events; the log holds 5 valid event lines" "$o"
hasnt "Active memory" "$o"   # not in this summary's statistics
has "| Allocated memory      |    512 B   |   4608 B   |   4608 B   |   4096 B   |" "$o"
report --json "$fx/malformed.jsonl" >"$tmp/bad.json" || fail "malformed.jsonl --json: exit $?"
python3 - "$tmp/bad.json" <<'PY' || fail "malformed.jsonl: JSON report wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["malformed_lines"] == 7, d["malformed_lines"]
assert [p["line"] for p in d["problems"]] == [3, 5, 6, 7, 8, 10, 11], d["problems"]
assert d["actions"]["future_action"] == 1 and d["events"] == 5
PY

# ---- expandable.jsonl: mapped and unmapped pages ------------------------------------------
report "$fx/expandable.jsonl" >"$tmp/exp.txt" || fail "expandable.jsonl: exit $?"
o="$tmp/exp.txt"
has "  peak allocated  6.00 MiB (6291456 bytes) at 0.000004 s (seq 5)" "$o"
has "  peak reserved   10.00 MiB (10485760 bytes) at 0.000016 s (seq 17)" "$o"
# At seq 17 segment E is mapped over [0, 2 MiB) (what the unmap at seq 14 left) and [2, 10 MiB):
# one run of pages holding a at [0, 1 MiB); its free range [1, 10 MiB) crosses the boundary of the
# two mappings. Segment F was unmapped at seq 15: no region.
has "  reserved            10.00 MiB (10485760 bytes)" "$o"
has "  allocated           1.00 MiB (1048576 bytes)" "$o"
has "  free cached         9.00 MiB (9437184 bytes)  (reserved - allocated - fenced)" "$o"
has "  largest free block  9.00 MiB (9437184 bytes)  at 0x7f0000100000 in segment 0x7f0000000000" "$o"
has "  fragmentation       0.0000  (1 - largest free block / free)" "$o"
has "  regions             1  (segments and runs of mapped pages)" "$o"
has "| GPU reserved memory   |  10240 KiB |  10240 KiB |  16384 KiB |   6144 KiB |" "$o"
has "Events: alloc 5, empty_cache 1, free_completed 4, free_requested 4, segment_map 4, segment_unmap 2" "$o"
report --json "$fx/expandable.jsonl" >"$tmp/exp.json" || fail "expandable.jsonl --json: exit $?"
python3 - "$tmp/exp.json" <<'PY' || fail "expandable.jsonl: JSON report wrong"
import json, sys
d = json.load(open(sys.argv[1]))
f = d["devices"]["0"]["fragmentation"]
assert (f["seq"], f["largest_free_block"], f["free_cached"], f["regions"]) == (17, 9437184, 9437184, 1), f
assert f["largest_free_block_segment"] == "0x7f0000000000" and f["fragmentation"] == 0.0, f
assert d["leaks"]["count"] == 1 and d["leaks"]["entries"][0]["ptr"] == "0x7f0000000000"
PY

# ---- a log of another writer (no segments, no free_completed): still read, its figures the -----
# replay's where it has none (report_requests_only.sh)
report "$src/examples/logs/training-loop.jsonl" >"$tmp/loop.txt" || fail "training-loop: exit $?"
has "Fragmentation at the reserved peak, device 0, as replayed (" "$tmp/loop.txt"
has "the log has no free_completed events" "$tmp/loop.txt"

# ---- usage errors exit 2, an unreadable log 1 -----------------------------------------------
set +e
report >/dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "no LOG: exit $rc, not 2"
report "$tmp/a" "$tmp/b" >/dev/null 2>&1; rc=$?; [ $rc -eq 1 ] || fail "two missing LOGs: exit $rc, not 1"
report --bogus "$fx/normal.jsonl" >/dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "unknown option: exit $rc, not 2"
report "$tmp/does-not-exist" >/dev/null 2>"$tmp/err.txt"; rc=$?; [ $rc -eq 1 ] || fail "missing file: exit $rc, not 1"
report "$tmp" >/dev/null 2>&1; rc=$?; [ $rc -eq 1 ] || fail "a directory: exit $rc, not 1"
"$src/scripts/cudapool" report >/dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "cudapool report without LOG: exit $rc, not 2"
set -e
has "cannot read $tmp/does-not-exist" "$tmp/err.txt"

# ---- the launcher --------------------------------------------------------------------------
"$src/scripts/cudapool" report "$fx/killed.jsonl" >"$tmp/l.txt" || fail "scripts/cudapool report failed"
diff "$tmp/killed.txt" "$tmp/l.txt" >&2 || fail "scripts/cudapool report differs from the package's"
"$src/scripts/cudapool" report --json "$fx/normal.jsonl" >"$tmp/l.json" || fail "scripts/cudapool report --json failed"
cmp -s "$tmp/normal.json" "$tmp/l.json" || fail "scripts/cudapool report --json differs"
echo "report_tool: ok"
