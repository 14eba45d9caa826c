#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/symbolized_frames.sh: native frames named at report time from the libraries' own files
# (tools/analyze/symbolizer.h, docs/report.md "Naming native frames"). A program built with -g
# (tests/fakecuda/programs/symbolized_alloc.cpp) allocates under the shim with CUDAPOOL_BACKTRACE
# from symtest::allocate_here; the HTML page (`report --html`) and the memory_viz export name that
# frame by its demangled function (as `nm -C` has it), the return address's offset from the
# function's start (from `nm`'s address and the log's bias) and its source line (the line marked in
# the source). --no-symbols names it program+offset, as does a log whose build id is not the
# file's, or that has none. Hostile module paths (a FIFO, /dev/zero, /proc/self/mem, /proc/kcore, a
# directory, a 64 GiB sparse file, another ELF file) with the program's build id are named as
# before, promptly. Needs the shim and the fake driver (skipped without them) and an engine built
# with libdw (tests/oracle/symbols.py says; without it: that nothing is symbolized).
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
engine="$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze"
[ -x "$engine" ] || fail "no $engine (build it)"
export CUDAPOOL_ANALYZE="$engine"
program="$CUDAPOOL_BUILD_DIR/tests/fakecuda/symbolized_alloc"
if [ -z "${CUDAPOOL_TEST_PRELOAD:-}" ] || [ ! -x "$program" ]; then
  echo "symbolized_frames: skipped (no shim or no fake driver in this build)"
  exit 0
fi
guard() { timeout 120 python3 -m cudapool_analysis "$@"; }
LD_PRELOAD="$CUDAPOOL_TEST_PRELOAD" CUDAPOOL_LOG="$tmp/run.jsonl" CUDAPOOL_BACKTRACE=8 \
  LD_LIBRARY_PATH="$CUDAPOOL_BUILD_DIR/tests/fakecuda" "$program" >"$tmp/out" 2>"$tmp/err" ||
  fail "symbolized_alloc under the shim: exit $?: $(tail -n 5 "$tmp/err")"
symbolizes=$(PYTHONPATH="$src/tests:$PYTHONPATH" python3 -c \
  'from oracle.symbols import engine_symbolizes; print(int(engine_symbolizes()))')

# check LOG WANT [ARGS...]: the page and the export of LOG (ARGS: options of both) name the
# program's allocating frame as WANT says: "symbols" (function, offset, line), "offset"
# (program+offset), with no frame of any kind naming symtest.
check() {
  local log=$1 want=$2
  shift 2
  # --force: each check writes the same two files again
  guard report --html "$tmp/page.html" --force "$@" "$log" 2>"$tmp/err" ||
    fail "$want: report --html: exit $?: $(cat "$tmp/err")"
  guard export --memory-viz "$tmp/viz.json" --force "$@" "$log" 2>"$tmp/err" ||
    fail "$want: export: exit $?: $(cat "$tmp/err")"
  python3 - "$want" "$log" "$tmp/page.html" "$tmp/viz.json" "$program" \
    "$src/tests/fakecuda/programs/symbolized_alloc.cpp" <<'PY' || fail "$want: $log: frames wrong"
import json, os, re, subprocess, sys
want, log, page, viz, program, source = sys.argv[1:]
lines = [json.loads(l) for l in open(log)]
summary = lines[-1]
mods = {os.path.realpath(m["path"]): m for m in summary.get("modules") or []
        if os.path.exists(m["path"])}
mod = mods[os.path.realpath(program)]
base, bias = int(mod["base"], 16), int(mod.get("bias", "0x0"), 16)
# The function, its address and size as nm has them; the line marked in the source.
nm = subprocess.run(["nm", "-C", "-S", program], capture_output=True, text=True).stdout
start, size, function = next((int(a, 16), int(s, 16), n) for a, s, _, n in
                             (l.split(None, 3) for l in nm.splitlines() if len(l.split()) >= 4)
                             if n.startswith("symtest::allocate_here("))
line = next(i for i, t in enumerate(open(source), 1) if "// ALLOCATING LINE" in t)
frames = {f for e in lines if e.get("action") == "alloc" for f in e.get("backtrace", [])}
mine = [int(f, 16) for f in frames if start <= int(f, 16) - bias < start + size]
assert len(mine) == 1, ("the allocating frame", sorted(frames), hex(start), hex(bias))
addr = mine[0]
offset = addr - bias - start
name = os.path.basename(program)
texts = []
def strings(x):
    if isinstance(x, str):
        texts.append(x)
    elif isinstance(x, dict):
        for y in x.values():
            strings(y)
    elif isinstance(x, list):
        for y in x:
            strings(y)
strings(json.loads(re.search(r'id="cudapool-data">(.*?)</script>', open(page).read(),
                             re.S).group(1)))
snap = json.load(open(viz))
vframes = [f for s in snap["segments"] for b in s["blocks"] for f in b.get("frames", [])]
vframes += [f for t in snap["device_traces"] for e in t for f in e.get("frames", [])]
if want == "symbols":
    text = "0x%x %s(%s+0x%x) at symbolized_alloc.cpp:%d" % (addr, name, function, offset, line)
    assert text in texts, (text, [t for t in texts if "0x%x" % addr in t])
    frame = {"name": function, "filename": os.path.realpath(source), "line": line}
    got = [f for f in vframes if f.get("name") == function]
    assert got and all(dict(f, filename=os.path.realpath(f["filename"])) == frame for f in got), \
        (frame, got[:2])
else:
    text = "0x%x %s+0x%x" % (addr, name, addr - base)
    assert text in texts, (text, [t for t in texts if "0x%x" % addr in t])
    frame = {"name": "%s+0x%x" % (name, addr - base), "filename": mod["path"], "line": 0}
    assert frame in vframes, (frame, vframes[:4])
    assert not any("symtest" in t for t in texts), "symbolized in the page"
    assert not any("symtest" in f.get("name", "") for f in vframes), "symbolized in the export"
PY
}

if [ "$symbolizes" = 1 ]; then
  check "$tmp/run.jsonl" symbols
else
  echo "symbolized_frames: the engine is built without libdw: checking that nothing is symbolized"
  check "$tmp/run.jsonl" offset
fi
check "$tmp/run.jsonl" offset --no-symbols

# edit OUT CODE: the run's log with its summary's modules m changed by the Python CODE (for the
# program's module only, unless CODE says otherwise).
edit() {
  python3 - "$tmp/run.jsonl" "$1" "$program" "$2" <<'PY'
import json, os, sys
log, out, program, code = sys.argv[1:]
lines = [json.loads(l) for l in open(log)]
for m in lines[-1]["modules"]:
    mine = os.path.exists(m["path"]) and os.path.realpath(m["path"]) == os.path.realpath(program)
    exec(code)
with open(out, "w") as f:
    f.writelines(json.dumps(l) + "\n" for l in lines)
PY
}
edit "$tmp/other_build.jsonl" 'if mine: m["build_id"] = "00" * 20'
check "$tmp/other_build.jsonl" offset
edit "$tmp/no_build_id.jsonl" 'if mine: m.pop("build_id")'
check "$tmp/no_build_id.jsonl" offset

# Hostile paths, each with the program's build id: read never, or found to be another build.
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"
truncate -s 64G "$tmp/sparse" 2>/dev/null || truncate -s 1G "$tmp/sparse"
cp /bin/true "$tmp/other_elf"
for path in "$tmp/fifo" /dev/zero /proc/self/mem /proc/kcore "$tmp/dir" "$tmp/sparse" \
    "$tmp/other_elf" "relative/path" ""; do
  edit "$tmp/hostile.jsonl" "if mine: m['path'] = '$path'"
  rc=0
  timeout 60 "$engine" --quiet "$tmp/hostile.jsonl" >"$tmp/doc.json" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] || fail "hostile path '$path': engine exit $rc: $(head -c 300 "$tmp/err")"
  if grep -q "symtest" "$tmp/doc.json"; then fail "hostile path '$path': symbolized"; fi
  guard export --memory-viz "$tmp/viz.json" --force "$tmp/hostile.jsonl" 2>"$tmp/err" ||
    fail "hostile path '$path': export: exit $?: $(cat "$tmp/err")"
  if grep -q "symtest" "$tmp/viz.json"; then fail "hostile path '$path': symbolized export"; fi
  rm -f "$tmp/viz.json"
done
# libdw is loaded when a frame is named, not linked (tools/analyze/libdw_calls.h): the tools start
# on a machine without libdw.so.1.
if readelf -d "$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze" | grep -q 'NEEDED.*libdw'; then
  fail "cudapool-analyze links libdw.so.1: it would not start without it"
fi
echo "symbolized_frames: ok"
