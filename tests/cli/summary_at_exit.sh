#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/summary_at_exit.sh: CUDAPOOL_SUMMARY at exit, with the fake driver (tests/fakecuda)
# driven from Python through ctypes (dlopen + dlsym, the way many programs reach libcuda): the
# table, the leak report, a file target created 0600 and never overwritten.
set -euo pipefail
lib="$CUDAPOOL_BUILD_DIR/shim/libcudapool.so"
# LD_PRELOAD: the shim, after the sanitizer runtime in a sanitizer build (tests/CMakeLists.txt).
preload="${CUDAPOOL_TEST_PRELOAD:-$lib}"
# With python3 as the host LeakSanitizer is off: Debian's python3 leaks at exit by itself (not the
# shim's leaks; the instrumented fake-driver programs check those).
asan_for() {
  if [ "$1" = python3 ]; then echo "${ASAN_OPTIONS:-}:detect_leaks=0"; else echo "${ASAN_OPTIONS:-}"; fi
}
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
run() { LD_LIBRARY_PATH="$fake" LD_PRELOAD="$preload" ASAN_OPTIONS="$(asan_for "$1")" "$@"; }

out=$(CUDAPOOL_SUMMARY=stderr run python3 "$tmp/leak.py" 2>&1) || fail "program failed: $out"
grep -q "cudapool memory summary, device ID 0" <<<"$out" || fail "no summary table: $out"
grep -q "Leak report, device 0: 2 blocks still allocated at exit" <<<"$out" || fail "no leak report: $out"
grep -q "requested 1000 B  block 1024 B" <<<"$out" || fail "1000-byte leak not listed: $out"
grep -q "requested 3145728 B  block 3145728 B" <<<"$out" || fail "3 MiB leak not listed: $out"

# A file target: created 0600; an existing file is kept and NAME.1 is written instead.
CUDAPOOL_SUMMARY="$tmp/summary.txt" run python3 "$tmp/leak.py" >/dev/null 2>"$tmp/err" || fail "file run failed"
[ -s "$tmp/summary.txt" ] || fail "summary file not written"
[ "$(stat -c %a "$tmp/summary.txt")" = 600 ] || fail "summary file mode $(stat -c %a "$tmp/summary.txt")"
CUDAPOOL_SUMMARY="$tmp/summary.txt" run python3 "$tmp/leak.py" >/dev/null 2>"$tmp/err"
[ -s "$tmp/summary.txt.1" ] || fail "existing summary file: no .1 written"
grep -q "Leak report" "$tmp/summary.txt.1" || fail "summary.txt.1 has no report"
[ "$(cat "$tmp/err")" = \
  "cudapool: summary $tmp/summary.txt exists: writing to $tmp/summary.txt.1 instead" ] ||
  fail "existing summary file: not the log's note: $(cat "$tmp/err")"
# A symlink at the path is not followed: NAME.1, with the note.
echo keep >"$tmp/target"; ln -s "$tmp/target" "$tmp/link"
CUDAPOOL_SUMMARY="$tmp/link" run python3 "$tmp/leak.py" >/dev/null 2>"$tmp/err"
[ "$(cat "$tmp/target")" = keep ] || fail "summary written through a symlink"
grep -q "Leak report" "$tmp/link.1" || fail "symlink: no NAME.1 written"
grep -qxF "cudapool: summary $tmp/link exists: writing to $tmp/link.1 instead" "$tmp/err" ||
  fail "symlink: no note: $(cat "$tmp/err")"

# A character device or a FIFO is written as it is; nothing is ever created in /dev. A /dev/X.1
# that exists from before is named and left alone; one this test made is removed and fails it.
watched=()
for f in /dev/null.1 /dev/full.1; do
  if [ -e "$f" ] || [ -L "$f" ]; then echo "summary_at_exit: note: $f exists from before: not checked"
  else watched+=("$f"); fi
done
check_dev() {
  local f
  for f in "${watched[@]}"; do
    if [ -e "$f" ] || [ -L "$f" ]; then
      [ -f "$f" ] && [ ! -L "$f" ] && rm -f "$f"
      fail "$1 created $f"
    fi
  done
}
err=$(CUDAPOOL_SUMMARY=/dev/null run python3 "$tmp/leak.py" 2>&1 >/dev/null) || fail "/dev/null run failed"
check_dev "CUDAPOOL_SUMMARY=/dev/null"
[ -z "$err" ] || fail "CUDAPOOL_SUMMARY=/dev/null printed: $err"
err=$(CUDAPOOL_LOG=/dev/null run python3 "$tmp/leak.py" 2>&1 >/dev/null) || fail "log /dev/null run failed"
check_dev "CUDAPOOL_LOG=/dev/null"
[ -z "$err" ] || fail "CUDAPOOL_LOG=/dev/null printed: $err"
err=$(CUDAPOOL_SUMMARY=/dev/full run python3 "$tmp/leak.py" 2>&1 >/dev/null) || fail "/dev/full run failed"
check_dev "CUDAPOOL_SUMMARY=/dev/full"
grep -qxF "cudapool: CUDAPOOL_SUMMARY: summary /dev/full: cannot write the summary (No space left on device); the summary goes to stderr" <<<"$err" ||
  fail "CUDAPOOL_SUMMARY=/dev/full: no warning: $err"
grep -q "Leak report" <<<"$err" || fail "CUDAPOOL_SUMMARY=/dev/full: not on stderr instead: $err"
[ -c /dev/null ] && [ -c /dev/full ] || fail "/dev/null or /dev/full is no longer a device"
# A FIFO: the reader gets the whole summary; no FIFO.1. (fd 3 holds the FIFO open for reading.)
mkfifo "$tmp/fifo"
exec 3<>"$tmp/fifo"
err=$(CUDAPOOL_SUMMARY="$tmp/fifo" run python3 "$tmp/leak.py" 2>&1 >/dev/null) || fail "FIFO run failed"
[ -z "$err" ] || fail "CUDAPOOL_SUMMARY=FIFO printed: $err"
dd iflag=nonblock bs=1M count=1 <&3 >"$tmp/from-fifo" 2>/dev/null || true
exec 3<&-
grep -q "Leak report, device 0: 2 blocks" "$tmp/from-fifo" || fail "FIFO: no summary read: $(head -c 300 "$tmp/from-fifo")"
[ ! -e "$tmp/fifo.1" ] || fail "FIFO: NAME.1 created"

# No summary without the variable, and none in a process that never used CUDA.
out=$(run python3 "$tmp/leak.py" 2>&1)
grep -q "memory summary" <<<"$out" && fail "summary printed without CUDAPOOL_SUMMARY"
out=$(CUDAPOOL_SUMMARY=stderr LD_PRELOAD="$preload" ASAN_OPTIONS="$(asan_for python3)" python3 -c 'print(1)' 2>&1)
[ "$out" = 1 ] || fail "a CPU-only process printed: $out"
echo "summary_at_exit: ok"
