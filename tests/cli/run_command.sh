#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/run_command.sh: `scripts/cudapool run` as a user runs it, and the shim in CPU-only
# processes (no CUDA anywhere: it must stay silent and change nothing).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
lib="$CUDAPOOL_BUILD_DIR/shim/libcudapool.so"
# LD_PRELOAD: the shim, after the sanitizer runtime in a sanitizer build (tests/CMakeLists.txt),
# which is also what `cudapool run` puts first.
preload="${CUDAPOOL_TEST_PRELOAD:-$lib}"
# With python3 as the host LeakSanitizer is off: Debian's python3 leaks at exit by itself (not the
# shim's leaks; the instrumented fake-driver programs check those).
asan_for() {
  if [ "$1" = python3 ]; then echo "${ASAN_OPTIONS:-}:detect_leaks=0"; else echo "${ASAN_OPTIONS:-}"; fi
}
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$lib" ] || { echo "run_command: libcudapool.so not built (no cuda.h): skipped"; exit 0; }
export CUDAPOOL_BUILD_DIR

# LD_PRELOAD gets the shim first (after a sanitizer build's runtime), keeps what was there; the
# exit status comes back.
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 "$src/scripts/cudapool" run --conf 'max_split_size_mb:64' \
  --log '/tmp/x-%p.jsonl' -- sh -c 'echo "$LD_PRELOAD|$CUDAPOOL_CONF|$CUDAPOOL_LOG"')
[ "$out" = "$preload:/lib/x86_64-linux-gnu/libm.so.6|max_split_size_mb:64|/tmp/x-%p.jsonl" ] ||
  fail "environment not set as expected: $out"
set +e
"$src/scripts/cudapool" run -- sh -c 'exit 7'
[ $? -eq 7 ] || fail "exit status not returned"
"$src/scripts/cudapool" run >/dev/null 2>&1
[ $? -eq 2 ] || fail "run without a command should exit 2"
set -e
out=$("$src/scripts/cudapool" run --disable -- sh -c 'echo $CUDAPOOL_DISABLE')
[ "$out" = 1 ] || fail "--disable not set"
out=$("$src/scripts/cudapool" run --summary stderr -- sh -c 'echo $CUDAPOOL_SUMMARY')
[ "$out" = stderr ] || fail "--summary not set: $out"
set +e
"$src/scripts/cudapool" run --summary >/dev/null 2>&1
[ $? -eq 2 ] || fail "--summary without a value should exit 2"
set -e

# CPU-only processes under the shim: clean exit, nothing on stderr.
err=$(LD_PRELOAD="$preload" /bin/true 2>&1) || fail "/bin/true failed under the shim"
[ -z "$err" ] || fail "/bin/true printed: $err"
err=$(LD_PRELOAD="$preload" ASAN_OPTIONS="$(asan_for python3)" python3 -c 'import ctypes, json, ssl; print("ok")' 2>&1 >/dev/null) ||
  fail "python3 failed under the shim"
[ -z "$err" ] || fail "python3 printed on stderr: $err"
# dlsym(RTLD_NEXT/RTLD_DEFAULT) still answers for the caller.
LD_PRELOAD="$preload" ASAN_OPTIONS="$(asan_for python3)" python3 -c 'import ctypes; ctypes.CDLL(None).printf' || fail "dlsym(RTLD_DEFAULT) broken"

# What the shim exports: its hooks, dlsym, _exit and _Exit, the exec family, nothing else; no
# libcuda/libcudart dependency.
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
for name in $exported; do
  case "$name" in
    dlsym | _exit | _Exit | cu*) ;;
    execve | execv | execvp | execvpe | execl | execle | execlp | fexecve | execveat) ;;
    *) fail "unexpected exported symbol $name" ;;
  esac
done
# ... and each of them: the version script made from driver_functions.def and stream_work_hooks.inc
# names exactly what is exported (a listed hook that no file defines would be missing here).
map="$(dirname "$lib")/exports.map"
if [ -f "$map" ]; then
  listed=$(sed -e 's/[{}]//g' -e 's/global://' -e 's/local: \*;//' "$map" | tr ';' '\n' | tr -d ' ' | grep . | sort)
  [ "$listed" = "$exported" ] || fail "exported symbols differ from $map: $(diff <(echo "$listed") <(echo "$exported") | head -5)"
fi
if readelf -d "$lib" | grep NEEDED | grep -E 'libcuda|libcudart|libstdc\+\+|libgcc_s'; then
  fail "libcudapool.so needs a library it must not"
fi
echo "run_command: ok"
