#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/oom_snapshot.sh: CUDAPOOL_OOM_SNAPSHOT through the fake driver (64 MiB). The
# program (oom_steps) holds 20 MiB, 512 B and 30 MiB, asks for 40 MiB (the first out-of-memory),
# frees the 20 MiB and asks again (a second one). With CUDAPOOL_BACKTRACE=8 and a log: one file,
# named by its %p, mode 0600, no temporary left, that plain pickle loads (protocol 2, the opcodes
# memory_viz reads, no class); its segments' blocks cover them and are the pool's at the first OOM
# (the allocated blocks are the log's allocs not yet freed then; reserved and allocated equal the
# log's first oom event's, not the second's: not rewritten); each allocated block has its frames
# (at most 8) {name, filename, line 0}, some naming the program; the one-entry trace is that oom (size,
# device_free, stream); check_viewers.py's viewer rules hold. Without CUDAPOOL_BACKTRACE: frames
# empty; with it and no log: frames still. A bad path (a missing directory, a directory, /dev, a
# file size limit as a full disk) gives one warning and no file; the program's output and exit
# status are the same in every run as without the variable. CUDAPOOL_BACKTRACE=python from a
# ctypes program, with and without a log: the blocks and the oom entry name the program's line.
# Usage: oom_snapshot.sh <cudart_like> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
steps="a20M a512 a30M a40M f0 a40M"

run() {  # name env... : the program under the shim, its stdout, stderr and status kept
  local name=$1
  shift
  env LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" FAKECUDA_DEVICE_MEMORY=64M OOM_STEPS="$steps" \
    "$@" "$program" oom_steps shim >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}
same_as_plain() {  # name: the program's output and status as without the snapshot
  cmp -s "$work/plain.out" "$work/$1.out" || fail "$1: stdout differs: $(diff "$work/plain.out" "$work/$1.out" | head -5)"
  cmp -s "$work/plain.rc" "$work/$1.rc" || fail "$1: exit status $(cat "$work/$1.rc"), not $(cat "$work/plain.rc")"
}

run plain
[ "$(cat "$work/plain.rc")" = 0 ] || fail "plain run: exit $(cat "$work/plain.rc"): $(tail -n 3 "$work/plain.err")"
[ "$(grep -c CUDA_ERROR_OUT_OF_MEMORY "$work/plain.out")" = 2 ] || fail "want two OOMs: $(cat "$work/plain.out")"

mkdir "$work/snaps"
run bt CUDAPOOL_LOG="$work/log.jsonl" CUDAPOOL_BACKTRACE=8 CUDAPOOL_OOM_SNAPSHOT="$work/snaps/oom-%p.pickle"
same_as_plain bt
n=$(grep -c 'out-of-memory snapshot written to ' "$work/bt.err")
[ "$n" = 1 ] || fail "the written line $n times (want 1): $(cat "$work/bt.err")"
grep -q "python -m torch.cuda._memory_viz trace_plot $work/snaps/oom-[0-9]*.pickle" "$work/bt.err" ||
  fail "the line does not say how to open it: $(cat "$work/bt.err")"
python3 - "$work/log.jsonl" "$work/snaps" "$work/report.json" <<'PY' || fail "the snapshot is not the pool's state at the first OOM"
import collections, io, json, os, pickle, pickletools, stat, sys
log, snaps, report = sys.argv[1:4]
lines = [json.loads(l) for l in open(log)]
pid = lines[0]["pid"]
assert os.listdir(snaps) == ["oom-%d.pickle" % pid], os.listdir(snaps)
path = os.path.join(snaps, "oom-%d.pickle" % pid)
assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, oct(os.stat(path).st_mode)
data = open(path, "rb").read()
assert data[:2] == b"\x80\x02", data[:2]
class Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("a class: %s.%s" % (module, name))
snap = Plain(io.BytesIO(data)).load()
assert sorted(snap) == ["allocator_settings", "device_traces", "external_annotations", "segments"]
# The pool at the first oom, from the log: the blocks allocated and not yet freed.
live, ooms = {}, []
for e in lines:
    a = e.get("action")
    if a == "alloc" and not ooms:
        live[int(e["ptr"], 16)] = (e["block_size"], e["size"])
    elif a == "free_requested" and not ooms:
        live.pop(int(e["ptr"], 16))
    elif a == "oom":
        ooms.append(e)
assert len(ooms) == 2 and ooms[0]["allocated"] != ooms[1]["allocated"], ooms
first = ooms[0]
segs = snap["segments"]
blocks = {}
for s in segs:
    addr = s["address"]
    for b in s["blocks"]:
        assert b["address"] == addr, (s, b)
        assert b["state"] in ("active_allocated", "inactive"), b
        if b["state"] == "active_allocated":
            blocks[addr] = (b["size"], b["requested_size"])
            frames = b["frames"]
            assert 0 < len(frames) <= 8, frames
            assert all(set(f) == {"name", "filename", "line"} and f["line"] == 0 for f in frames), frames
            assert any(f["filename"].endswith("cudart_like") for f in frames), frames
        else:
            assert b["frames"] == [] and b["requested_size"] == 0, b
        addr += b["size"]
    assert addr == s["address"] + s["total_size"], s
    assert s["allocated_size"] == sum(b["size"] for b in s["blocks"] if b["state"] != "inactive"), s
assert blocks == live, (blocks, live)
assert sum(s["total_size"] for s in segs) == first["reserved"], (segs, first)
assert sum(s["allocated_size"] for s in segs) == first["allocated"], first
assert sorted(s["segment_type"] for s in segs) == ["large", "large", "small"], segs
(oom,), = snap["device_traces"]
assert oom["action"] == "oom" and oom["size"] == 40 << 20 == first["size"], oom
assert oom["device_free"] == first["device_free"] and oom["stream"] == 0 and "addr" not in oom, oom
assert 0 < len(oom["frames"]) <= 8, oom
assert snap["allocator_settings"]["expandable_segments"] is False, snap["allocator_settings"]
# What check_viewers.py compares the snapshot with: the figures of that moment.
json.dump({"devices": {"0": {"stats": {
              "reserved_bytes.all.current": first["reserved"],
              "allocated_bytes.all.current": first["allocated"],
              "active_bytes.all.current": first["allocated"],
              "allocation.all.current": len(live)}}},
           "header": {"devices": [{"id": 0}]}, "actions": {"oom": 1},
           "leaks": {"count": len(live)}}, open(report, "w"))
print("snapshot ok: %d segments, %d blocks allocated" % (len(segs), len(blocks)))
PY
python3 "$root/tests/cli/check_viewers.py" memviz "$work/snaps"/oom-*.pickle "$work/report.json" \
  --symbolized || fail "check_viewers.py: the viewer's rules"

# Without CUDAPOOL_BACKTRACE: no frames. With it and no log: frames (the pool keeps them).
run nobt CUDAPOOL_OOM_SNAPSHOT="$work/nobt.pickle"
same_as_plain nobt
run nolog CUDAPOOL_BACKTRACE=4 CUDAPOOL_OOM_SNAPSHOT="$work/nolog.pickle"
same_as_plain nolog
python3 - "$work/nobt.pickle" "$work/nolog.pickle" <<'PY' || fail "frames without a log"
import pickle, sys
for path, want in zip(sys.argv[1:], (0, 4)):
    snap = pickle.load(open(path, "rb"))
    blocks = [b for s in snap["segments"] for b in s["blocks"] if b["state"] != "inactive"]
    assert len(blocks) == 3 and all(len(b["frames"]) == want for b in blocks), (path, blocks)
    assert len(snap["device_traces"][0][0]["frames"]) == want, snap["device_traces"]
PY

# A bad path: one warning, nothing written, the program as without it.
bad() {  # name expected-words path [env...]
  local name=$1 words=$2 path=$3
  shift 3
  run "$name" CUDAPOOL_OOM_SNAPSHOT="$path" "$@"
  same_as_plain "$name"
  [ "$(grep -c 'CUDAPOOL_OOM_SNAPSHOT' "$work/$name.err")" = 1 ] &&
    grep -q "CUDAPOOL_OOM_SNAPSHOT: .*$words.*no snapshot written" "$work/$name.err" ||
    fail "$name: want one warning with '$words': $(cat "$work/$name.err")"
  ! grep -q 'snapshot written to' "$work/$name.err" || fail "$name: said written"
}
bad missing "cannot create" "$work/no/such/dir/oom.pickle"
mkdir "$work/adir"
bad directory "not a regular file" "$work/adir"
bad dev "nothing is created in /dev" "/dev/cudapool-oom-test.pickle"
[ ! -e /dev/cudapool-oom-test.pickle ] || fail "a file was made in /dev"
bad template "unknown" "$work/oom-%q.pickle"
mkdir "$work/full"
(ulimit -f 1 && bad full "cannot write" "$work/full/oom.pickle" CUDAPOOL_BACKTRACE=8 && exit $status) ||
  status=1
[ -z "$(ls -A "$work/full")" ] || fail "a cut write left $(ls -A "$work/full")"
[ -z "$(ls -A "$work/adir")" ] || fail "the directory got $(ls -A "$work/adir")"

# CUDAPOOL_BACKTRACE=python: a Python program allocating through ctypes until out-of-memory.
cat >"$work/grab.py" <<'PY'
import ctypes
cuda, ctx = ctypes.CDLL("libcuda.so.1"), ctypes.c_void_p()
assert cuda.cuInit(0) == 0 and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0  # the primary context, as cudart makes it current
def grab(size):
    p = ctypes.c_uint64()
    return cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size))
kept = 0
while grab(8 << 20) == 0:
    kept += 1
print("line", grab.__code__.co_firstlineno + 2, "kept", kept)
PY
for mode in log nolog; do
  logvar=()
  [ $mode = log ] && logvar=(CUDAPOOL_LOG="$work/py.jsonl")
  env LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" FAKECUDA_DEVICE_MEMORY=64M \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" CUDAPOOL_BACKTRACE=python "${logvar[@]}" \
    CUDAPOOL_OOM_SNAPSHOT="$work/py-$mode.pickle" timeout 60 python3 "$work/grab.py" \
    >"$work/py.out" 2>"$work/py.err" || { fail "python ($mode): exit $?: $(tail -n 3 "$work/py.err")"; continue; }
  python3 - "$work/py-$mode.pickle" $(cat "$work/py.out") <<'PY' || fail "python ($mode): no frame of the program's line"
import sys
import pickle
snap = pickle.load(open(sys.argv[1], "rb"))
line, kept = int(sys.argv[3]), int(sys.argv[5])
want = {"name": "grab", "line": line}
blocks = [b for s in snap["segments"] for b in s["blocks"] if b["state"] != "inactive"]
assert len(blocks) == kept > 0, (len(blocks), kept)
for frames in [b["frames"] for b in blocks] + [snap["device_traces"][0][0]["frames"]]:
    f = frames[0]
    assert f["filename"].endswith("grab.py") and f["line"] == line and f["name"] == "grab", frames
    assert frames[1]["name"] == "<module>", frames
PY
done
[ $status = 0 ] && echo "oom_snapshot: ok"
exit $status
