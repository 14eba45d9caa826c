#!/usr/bin/env bash
# tests/cli/summary_at_exit.sh: CUDAPOOL_SUMMARY at exit, with the fake driver (tests/fakecuda)
# driven from Python through ctypes (dlopen + dlsym, the way many programs reach libcuda): the
# table, the leak report, a file target created 0600 and never overwritten.
set -euo pipefail
lib="$CUDAPOOL_BUILD_DIR/shim/libcudapool.so"
fake="$CUDAPOOL_BUILD_DIR/tests/fakecuda"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$lib" ] && [ -f "$fake/libcuda.so.1" ] || { echo "summary_at_exit: shim or fake not built: skipped"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/leak.py" <<'PY'
import ctypes, sys
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
ctx = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
ptrs = []
for size in (1000, 3 << 20, 4096):
    p = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)) == 0
    ptrs.append(p.value)
assert cuda.cuMemFree_v2(ctypes.c_uint64(ptrs[2])) == 0   # two blocks leak: 1000 B and 3 MiB
print("allocated", ["0x%x" % p for p in ptrs[:2]])
PY
run() { LD_LIBRARY_PATH="$fake" LD_PRELOAD="$lib" "$@"; }

out=$(CUDAPOOL_SUMMARY=stderr run python3 "$tmp/leak.py" 2>&1) || fail "program failed: $out"
echo "$out" | grep -q "cudapool memory summary, device ID 0" || fail "no summary table: $out"
echo "$out" | grep -q "Leak report, device 0: 2 blocks still allocated at exit" || fail "no leak report: $out"
echo "$out" | grep -q "requested 1000 B  block 1024 B" || fail "1000-byte leak not listed: $out"
echo "$out" | grep -q "requested 3145728 B  block 3145728 B" || fail "3 MiB leak not listed: $out"

# A file target: created 0600; an existing file is kept and NAME.1 is written instead.
CUDAPOOL_SUMMARY="$tmp/summary.txt" run python3 "$tmp/leak.py" >/dev/null 2>"$tmp/err" || fail "file run failed"
[ -s "$tmp/summary.txt" ] || fail "summary file not written"
[ "$(stat -c %a "$tmp/summary.txt")" = 600 ] || fail "summary file mode $(stat -c %a "$tmp/summary.txt")"
CUDAPOOL_SUMMARY="$tmp/summary.txt" run python3 "$tmp/leak.py" >/dev/null 2>&1
[ -s "$tmp/summary.txt.1" ] || fail "existing summary file: no .1 written"
grep -q "Leak report" "$tmp/summary.txt.1" || fail "summary.txt.1 has no report"
# A symlink at the path is not followed.
echo keep >"$tmp/target"; ln -s "$tmp/target" "$tmp/link"
CUDAPOOL_SUMMARY="$tmp/link" run python3 "$tmp/leak.py" >/dev/null 2>&1
[ "$(cat "$tmp/target")" = keep ] || fail "summary written through a symlink"

# No summary without the variable, and none in a process that never used CUDA.
out=$(run python3 "$tmp/leak.py" 2>&1)
echo "$out" | grep -q "memory summary" && fail "summary printed without CUDAPOOL_SUMMARY"
out=$(CUDAPOOL_SUMMARY=stderr LD_PRELOAD="$lib" python3 -c 'print(1)' 2>&1)
[ "$out" = 1 ] || fail "a CPU-only process printed: $out"
echo "summary_at_exit: ok"
