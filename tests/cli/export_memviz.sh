#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/export_memviz.sh: `cudapool export --memory-viz` (docs/exports.md). Each fixture's
# snapshot, as a pickle and as JSON, checked by check_viewers.py against what pytorch.org/memory_viz
# and torch/cuda/_memory_viz.py need and against `cudapool report --json` of the same log; then the
# mapping itself on tests/cli/fixtures/viewers.jsonl (two devices, a dropped context, expandable
# segments, blocks still fenced at the end, an oom, backtraces, the wall clock from start_t_ns);
# frames named library + offset from the summary's modules, the leaks' symbols preferred
# (viewers-rank1.jsonl); --max-entries; and what is not a readable log or a usable command line
# (a clear message, exit 1 or 2, and no OUT or OUT.tmp left behind, an existing OUT untouched).
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
check() { python3 "$src/tests/cli/check_viewers.py" "$@"; }

# ---- every fixture: pickle and JSON, against the viewer's rules and the report ------------------
for name in normal killed expandable malformed viewers viewers-rank1; do
  cudapool report --json "$fx/$name.jsonl" >"$tmp/$name.report.json"
  extra=()
  [ "$name" = viewers ] && extra=(--pending 2)
  [ "$name" = normal ] && extra=(--symbolized)
  for out in "$tmp/$name.pickle" "$tmp/$name.json"; do
    cudapool export --memory-viz "$out" "$fx/$name.jsonl" 2>"$tmp/err" ||
      fail "$name: export exit $?: $(cat "$tmp/err")"
    [ ! -e "$out.tmp" ] || fail "$name: $out.tmp left behind"
    check memviz "$out" "$tmp/$name.report.json" "${extra[@]}" || fail "$name: $out breaks a rule"
  done
done
# the same run twice: the same bytes; through scripts/cudapool too
"$src/scripts/cudapool" export --memory-viz "$tmp/again.pickle" "$fx/normal.jsonl" 2>/dev/null
cmp -s "$tmp/normal.pickle" "$tmp/again.pickle" || fail "two exports of normal.jsonl differ"
cudapool export --memory-viz "$tmp/n.pickle" "$fx/normal.jsonl" 2>"$tmp/err"
has "note: left out (no memory_viz counterpart): alloc_async x1, empty_cache x1, free_async x1" "$tmp/err"
has "wrote $tmp/n.pickle (a memory_viz snapshot: 3 segments, 106 trace entries" "$tmp/err"

# ---- the mapping, on viewers.jsonl ---------------------------------------------------------------
python3 - "$tmp/viewers.pickle" "$tmp/normal.pickle" <<'PY' || fail "viewers.jsonl: the snapshot's content"
import collections, pickle, sys
v = pickle.load(open(sys.argv[1], "rb"))
n = pickle.load(open(sys.argv[2], "rb"))
MiB = 1 << 20
segs = [(s["device"], s["address"], s["total_size"], s["segment_type"], s["is_expandable"])
        for s in v["segments"]]
assert segs == [(0, 0x10000000, 20 * MiB, "large", False), (0, 0x20000000, 2 * MiB, "small", False),
                (0, 0x40400000, 2 * MiB, "small", False),   # context 1's new pool; the dropped one is gone
                (1, 0x7f4000000000, 20 * MiB, "large", True),      # expandable: each mapped run
                (1, 0x7f4002800000, 20 * MiB, "large", True)], segs
states = [(s["device"], b["address"], b["size"], b["state"]) for s in v["segments"] for b in s["blocks"]]
assert (0, 0x10000000 + 3000320, 1024, "active_pending_free") in states, states
assert (1, 0x7f4002800000, 2 * MiB, "active_pending_free") in states, states
assert (0, 0x20000000, 1024, "inactive") in states, states          # the freed block's gap
assert len(v["device_traces"]) == 2
t0, t1 = v["device_traces"]
acts = collections.Counter(e["action"] for e in t1)
assert acts == {"segment_map": 3, "alloc": 4, "free_requested": 3, "free_completed": 2,
                "segment_unmap": 1}, acts
dropped = [e for e in t0 if e["user_metadata"].startswith("context_dropped")]
assert [(e["action"], e["addr"], e["time_us"] % 10000) for e in dropped] == [
    ("free_requested", 0x40000000, 1170), ("free_completed", 0x40000000, 1170),
    ("free_completed", 0x40001000, 1170), ("segment_free", 0x40000000, 1170)], dropped
oom = [e for e in t0 if e["action"] == "oom"]
assert len(oom) == 1 and oom[0]["device_free"] == 140000000000 and "addr" not in oom[0], oom
assert oom[0]["size"] == 200 << 30
# wall clock: start_unix_ns + (t_ns - start_t_ns), in microseconds
assert t0[0]["action"] == "segment_alloc" and t0[0]["time_us"] == 1795874400000000 + 1010, t0[0]
st = [e["stream"] for e in t0 if e["action"] == "alloc" and e["addr"] == 0x10000000 + 3000320]
assert st == [0x5555000010, 0x5555000010], st
assert all(e["compile_context"] == "N/A" for e in t0 + t1)
fr = [e["frames"] for e in t0 if e["action"] == "alloc" and e["addr"] == 0x10000000][0]
assert fr == [{"name": "0x7f00aa001000", "filename": "??", "line": 0},
              {"name": "0x7f00aa002000", "filename": "??", "line": 0}], fr
assert v["allocator_settings"] == {"expandable_segments": False, "max_split_size_mb": None}
assert v["external_annotations"] == []
assert all(s["segment_pool_id"] == (0, 0) for s in v["segments"])
# normal.jsonl: the summary's symbolized leak frames name the block's frames; no device_free: 0
d = [b for s in n["segments"] for b in s["blocks"] if b["address"] == 0x10400000][0]
assert d["frames"][0] == {"name": "forward+0x1c", "filename": "/usr/lib/libtorch_cuda.so",
                          "line": 0}, d
oom = [e for e in n["device_traces"][0] if e["action"] == "oom"]
assert oom[0]["device_free"] == 0, oom
PY

# ---- frames named by the summary's modules (library + offset), the leak's symbols preferred -------
python3 - "$tmp/viewers-rank1.pickle" <<'PY' || fail "viewers-rank1.jsonl: the frames' names"
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
allocs = [e["frames"] for e in s["device_traces"][0] if e["action"] == "alloc"]
rt, torch, py = "/opt/cuda/lib64/libcudart.so.13", "/opt/torch/lib/libtorch_cuda.so", "/usr/bin/python3.11"
assert allocs[0] == [{"name": "libcudart.so.13+0x146f3", "filename": rt, "line": 0},
                     {"name": "libtorch_cuda.so+0x2a1c0", "filename": torch, "line": 0},
                     {"name": "python3.11+0x1234", "filename": py, "line": 0}], allocs[0]
assert allocs[1][1] == {"name": "0x7f00e0001000", "filename": "??", "line": 0}, allocs[1]
leak = [{"name": "libcudart.so.13+0x2000", "filename": rt, "line": 0},      # "(?+0x2000)"
        {"name": "empty_cuda+0x30", "filename": torch, "line": 0}]
assert allocs[-1] == leak, allocs[-1]
held = [b["frames"] for g in s["segments"] for b in g["blocks"] if b["state"] == "active_allocated"]
assert held == [leak], held
PY

# ---- --max-entries: the last N entries of each device, still consistent --------------------------
cudapool export --memory-viz "$tmp/last.pickle" --max-entries 10 "$fx/viewers.jsonl" 2>"$tmp/err"
has "the trace keeps at most its last 10 entries (--max-entries)" "$tmp/err"
check memviz "$tmp/last.pickle" "$tmp/viewers.report.json" --truncated || fail "--max-entries 10"
python3 -c "
import pickle, sys
s = pickle.load(open('$tmp/last.pickle', 'rb'))
assert [len(t) for t in s['device_traces']] == [10, 10], [len(t) for t in s['device_traces']]
" || fail "--max-entries 10: not 10 entries per device"

# ---- the default bound: PyTorch's 100,000 entries, said before the work; 0 keeps all -------------
"$CUDAPOOL_BUILD_DIR/bench/make_training_log" --events 170000 --layers 2 "$tmp/long.jsonl"
cudapool export --memory-viz "$tmp/long.pickle" "$tmp/long.jsonl" 2>"$tmp/err"
head -n 1 "$tmp/err" | grep -q "keeping each device's last 100000 trace entries" ||
  fail "the default bound is not said first: $(head -n 1 "$tmp/err")"
has "the trace keeps at most its last 100000 entries" "$tmp/err"
cudapool export --memory-viz "$tmp/all.pickle" --max-entries 0 "$tmp/long.jsonl" 2>"$tmp/err"
has "keeping every trace entry (--max-entries 0)" "$tmp/err"
python3 -c "
import pickle
cut = pickle.load(open('$tmp/long.pickle', 'rb'))['device_traces']
full = pickle.load(open('$tmp/all.pickle', 'rb'))['device_traces']
assert [len(t) for t in cut] == [100000], [len(t) for t in cut]
assert len(full[0]) > 100000 and full[0][-100000:] == cut[0], len(full[0])
" || fail "the default bound: not the last 100000 entries"

# ---- tests/gpu/memviz_compare.py's comparison (its part that needs no GPU and no torch) ------------
compare() { python3 "$src/tests/gpu/memviz_compare.py" --compare "$@"; }
compare "$tmp/viewers.pickle" "$tmp/viewers.pickle" >"$tmp/cmp.md" || fail "compare: a snapshot and itself"
has "| PyTorch's allocated blocks among ours | 3 | 3 | contained | yes |" "$tmp/cmp.md"
has "| trace: alloc | 8 | 8 | same |  |" "$tmp/cmp.md"
if compare "$tmp/normal.pickle" "$tmp/killed.pickle" >"$tmp/cmp.md"; then
  fail "compare: normal and killed agree"
fi
has "missing: " "$tmp/cmp.md"
python3 - "$tmp/normal.pickle" "$tmp" <<'PY'    # the marked part: two snapshots with the marks
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
t = s["device_traces"][0]
mark = lambda size: dict(t[1], size=size)   # noqa: E731
s["device_traces"][0] = t[:1] + [mark(777777)] + t[1:] + [mark(888889)]
pickle.dump(s, open(sys.argv[2] + "/marked.pickle", "wb"), protocol=4)
u = s["device_traces"][0]
i = next(i for i, e in enumerate(u) if e["action"] == "free_requested" and i > 1)
s["device_traces"][0] = u[:i] + u[i + 1:]
pickle.dump(s, open(sys.argv[2] + "/marked-less.pickle", "wb"), protocol=4)
PY
compare "$tmp/marked.pickle" "$tmp/marked.pickle" >"$tmp/cmp.md" || fail "compare: marked"
has "| marked part: free_requested | 32 | 32 | same | yes |" "$tmp/cmp.md"
if compare "$tmp/marked.pickle" "$tmp/marked-less.pickle" >"$tmp/cmp.md"; then
  fail "compare: a free_requested missing in the marked part goes unseen"
fi
has "| marked part: free_requested | 32 | 31 | differs | yes |" "$tmp/cmp.md"

# ---- a log without pool decisions ----------------------------------------------------------------
rc=0
cudapool export --memory-viz "$tmp/t.pickle" "$src/examples/logs/training-loop.jsonl" 2>"$tmp/err" || rc=$?
# replayed by the engine, in process (docs/analysis-format.md, "Logs of requests only")
[ $rc -eq 0 ] || fail "request-only log: exit $rc: $(cat "$tmp/err")"
python3 -c "
import pickle
s = pickle.load(open('$tmp/t.pickle', 'rb'))
assert s['segments'] and s['device_traces'][0], 'empty snapshot'
" || fail "request-only log: the replayed snapshot is empty"

# ---- what cannot be exported: exit 1 or 2, a message, nothing left behind ------------------------
fails() { export_fails "$1" "$2" "$tmp/o.pickle" "${@:3}"; }
mkdir "$tmp/dir"
: >"$tmp/empty.jsonl"
printf 'hello\nworld\n' >"$tmp/text.jsonl"
fails 1 "missing log" --memory-viz "$tmp/o.pickle" "$tmp/missing.jsonl"
has "cudapool export: cannot read $tmp/missing.jsonl" "$tmp/err"
fails 1 "a directory" --memory-viz "$tmp/o.pickle" "$tmp/dir"
has "is a directory" "$tmp/err"
fails 1 "an empty file" --memory-viz "$tmp/o.pickle" "$tmp/empty.jsonl"
fails 1 "not a log" --memory-viz "$tmp/o.pickle" "$tmp/text.jsonl"
has "is not a cudapool log" "$tmp/err"
fails 1 "OUT in a missing directory" --memory-viz "$tmp/nodir/o.pickle" "$fx/normal.jsonl"
has "cannot write $tmp/nodir/o.pickle" "$tmp/err"
fails 2 "two logs" --memory-viz "$tmp/o.pickle" "$fx/normal.jsonl" "$fx/killed.jsonl"
has "--memory-viz takes exactly one LOG" "$tmp/err"
fails 2 "stdin twice" --memory-viz "$tmp/o.pickle" - -
fails 2 "--max-points" --memory-viz "$tmp/o.pickle" --max-points 100 "$fx/normal.jsonl"
fails 2 "--max-entries -1" --memory-viz "$tmp/o.pickle" --max-entries -1 "$fx/normal.jsonl"
fails 2 "both" --memory-viz "$tmp/o.pickle" --perfetto "$tmp/o.json" "$fx/normal.jsonl"
fails 2 "neither" "$fx/normal.jsonl"
fails 2 "OUT is the log" --memory-viz "$tmp/text.jsonl" "$tmp/text.jsonl"
# an existing OUT stays as it was when the export fails
echo old >"$tmp/keep.pickle"
rc=0
cudapool export --memory-viz "$tmp/keep.pickle" "$tmp/text.jsonl" 2>/dev/null || rc=$?
[ $rc -eq 1 ] && [ "$(cat "$tmp/keep.pickle")" = old ] && [ ! -e "$tmp/keep.pickle.tmp" ] ||
  fail "a failed export touched the existing OUT"
echo "export_memviz: ok"
