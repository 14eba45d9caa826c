#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/backtrace_modules.sh: with CUDAPOOL_BACKTRACE, the summary line lists the loaded
# objects (`modules`: base, end, path, bias, build_id), sorted and disjoint, among them the program
# and libcudapool.so with the build ids their files have, and every return address of every alloc event lies in one of them, so a reader
# can name each frame library+offset. Without CUDAPOOL_BACKTRACE: no modules field.
# Usage: backtrace_modules.sh <cudart_like> <libcudapool.so> <directory of the fake libcuda.so.1>
# (<libcudapool.so> may come after a sanitizer runtime, colon-separated, as LD_PRELOAD takes it.)
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"

run() {  # log [env...]
  local log=$1
  shift
  env "$@" LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" FAKECUDA_DEVICE_MEMORY=67108864 \
    CUDAPOOL_LOG="$log" "$program" oom_explained shim >"$work/out" 2>"$work/err" ||
    fail "oom_explained shim: exit $?: $(tail -n 5 "$work/err")"
}
run "$work/bt.jsonl" CUDAPOOL_BACKTRACE=6
run "$work/plain.jsonl"
python3 - "$work/bt.jsonl" "$work/plain.jsonl" "$program" "${shim##*:}" <<'PY' || fail "modules wrong"
import bisect, json, os, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
summary = lines[-1]
assert summary["action"] == "summary", summary
mods = summary["modules"]
ranges = [(int(m["base"], 16), int(m["end"], 16), m["path"]) for m in mods]
assert ranges == sorted(ranges) and all(b < e for b, e, _ in ranges), ranges[:5]
assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), "modules overlap"
paths = [os.path.realpath(p) for _, _, p in ranges if p.startswith("/")]
assert os.path.realpath(sys.argv[3]) in paths, "the program is not listed"
assert os.path.realpath(sys.argv[4]) in paths, "libcudapool.so is not listed"
starts = [b for b, _, _ in ranges]
frames = [int(f, 16) for e in lines[1:-1] if e.get("action") == "alloc" for f in e.get("backtrace", [])]
assert frames, "no backtrace recorded"
def inside(a):
    i = bisect.bisect_right(starts, a) - 1
    return i >= 0 and a < ranges[i][1]
outside = [hex(a) for a in frames if not inside(a)]
assert not outside, "frames outside every module: %s" % outside[:5]
# The build id of each object that has one, as the file says (readelf -n), and the load bias: a
# shared object's lowest loaded address less its bias is its first PT_LOAD's vaddr (0 here).
import subprocess
def file_build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None
by_path = {os.path.realpath(m["path"]): m for m in mods if m["path"].startswith("/")}
for path in (sys.argv[3], sys.argv[4]):
    m = by_path[os.path.realpath(path)]
    want = file_build_id(path)
    assert want and m.get("build_id") == want, (path, m.get("build_id"), want)
shim_module = by_path[os.path.realpath(sys.argv[4])]
assert int(shim_module["base"], 16) - int(shim_module.get("bias", "0x0"), 16) == 0, shim_module
plain = [json.loads(l) for l in open(sys.argv[2])][-1]
assert plain["action"] == "summary" and "modules" not in plain, "modules without backtraces"
PY
exit $status
