#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/run_front_door.sh: what `cudapool run` says around COMMAND: a COMMAND that cannot be
# found (exit 127) or run (126), said as a shell says it, before anything starts; with a log asked
# for (--log, CUDAPOOL_LOG), the note at exit when no log came from the run (COMMAND made no CUDA
# call: the shim never started), COMMAND's exit status and stdin kept, TERM passed on; --conf-from
# LOG (cudapool tune's recommendation as CUDAPOOL_CONF, said with why; a LOG that cannot be tuned
# stops run, exit 1). Programs that touch CUDA run against the fake driver (tests/fakecuda). Not
# here: the environment run sets and its other checks (run_command.sh, run_checks.sh).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
build="$CUDAPOOL_BUILD_DIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$build/shim/libcudapool.so" ] || { echo "run_front_door: libcudapool.so not built (no cuda.h): skipped"; exit 0; }
export CUDAPOOL_BUILD_DIR
unset CUDAPOOL_CONF PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF CUDAPOOL_LOG CUDAPOOL_SUMMARY \
  CUDAPOOL_DISABLE CUDAPOOL_LOG_LEVEL
tmp=$(mktemp -d)
io=$(mktemp -d)
trap 'rm -rf "$tmp" "$io"' EXIT
L="$src/scripts/cudapool"

# run ARGS...: `cudapool run ARGS` from $tmp; sets rc, out, err (the lines run and the shim say).
run() {
  rc=0
  (cd "$tmp" && "$L" run "$@") >"$io/out" 2>"$io/err" || rc=$?
  out=$(cat "$io/out")
  err=$(grep -E '^cudapool( run)?: ' "$io/err" || true)
}

# ---- COMMAND not found, not executable -------------------------------------------------------------
run --log 'x-%p.jsonl' -- ./no-such-program
[ $rc -eq 127 ] && [ "$err" = "cudapool run: ./no-such-program: command not found" ] ||
  fail "./no-such-program: exit $rc: $(cat "$io/err")"
run -- no-such-program-anywhere --flag
[ $rc -eq 127 ] && [ "$err" = "cudapool run: no-such-program-anywhere: command not found" ] ||
  fail "a name not on PATH: exit $rc: $(cat "$io/err")"
printf '#!/bin/sh\necho ran\n' >"$tmp/script.sh"
run -- ./script.sh
[ $rc -eq 126 ] && [ "$err" = "cudapool run: ./script.sh: not executable" ] && [ -z "$out" ] ||
  fail "not executable: exit $rc: $(cat "$io/err")"
run -- "$tmp"
[ $rc -eq 126 ] && [ "$err" = "cudapool run: $tmp: is a directory" ] || fail "a directory: exit $rc: $err"
chmod +x "$tmp/script.sh"
run -- ./script.sh
[ $rc -eq 0 ] && [ "$out" = ran ] || fail "an executable script: exit $rc: $(cat "$io/err")"
rm -f "$tmp"/x-*.jsonl

# ---- a log asked for, and none came: said at exit; the status is COMMAND's -----------------------
run --log 'run-%p.jsonl' -- sh -c 'echo no cuda; exit 3'
[ $rc -eq 3 ] && [ "$out" = "no cuda" ] || fail "no CUDA call: exit $rc, out $out"
[ "$err" = "cudapool run: sh made no CUDA call under the shim: nothing was logged (CUDAPOOL_LOG=run-%p.jsonl)" ] ||
  fail "no CUDA call: stderr: $(cat "$io/err")"
[ -z "$(ls -A "$tmp" | grep -v script.sh)" ] || fail "no CUDA call: files: $(ls "$tmp")"
# the same through CUDAPOOL_LOG, and with python3 (README's example; /usr/bin/python3: see below)
CUDAPOOL_LOG="$tmp/env-%p-%r.jsonl.zst" run -- /usr/bin/python3 -c 'print(1)'
[ $rc -eq 0 ] && [ "$out" = 1 ] &&
  [ "$err" = "cudapool run: /usr/bin/python3 made no CUDA call under the shim: nothing was logged (CUDAPOOL_LOG=$tmp/env-%p-%r.jsonl.zst)" ] ||
  fail "CUDAPOOL_LOG, python3: exit $rc: $(cat "$io/err")"
# a name already there (no %p): the shim would write NAME.1; none written: said
: >"$tmp/fixed.jsonl"
run --log fixed.jsonl -- true
[ "$err" = "cudapool run: true made no CUDA call under the shim: nothing was logged (CUDAPOOL_LOG=fixed.jsonl)" ] ||
  fail "an existing name: $(cat "$io/err")"
rm -f "$tmp/fixed.jsonl"
# stdin reaches COMMAND
out=$(cd "$tmp" && printf 'through\n' | "$L" run --log 'in-%p.jsonl' -- cat 2>/dev/null) || true
[ "$out" = through ] || fail "stdin did not reach COMMAND: '$out'"
# not said: a device written as it is; a template the shim refuses (its own warning only);
# CUDAPOOL_LOG_LEVEL=off; --disable
run --log /dev/null -- true
[ $rc -eq 0 ] && [ -z "$err" ] || fail "/dev/null: $err"
run --log 'bad-%x.jsonl' -- true
[ $rc -eq 0 ] && ! grep -q "made no CUDA call" <<<"$err" && grep -q "unknown %x" <<<"$err" ||
  fail "a refused template: $err"
CUDAPOOL_LOG_LEVEL=off run --log 'off-%p.jsonl' -- true
[ -z "$err" ] || fail "CUDAPOOL_LOG_LEVEL=off: $err"
run --disable --log 'dis-%p.jsonl' -- true
[ -z "$err" ] || fail "--disable: $err"
# TERM sent to run reaches COMMAND; run exits with its status (143)
(cd "$tmp" && exec "$L" run --log 'term-%p.jsonl' -- sh -c 'echo $$ >"$1"; exec sleep 30' sh \
  "$io/pid") 2>"$io/term.err" &
launcher=$!
for _ in $(seq 100); do [ -s "$io/pid" ] && break; sleep 0.1; done
[ -s "$io/pid" ] || fail "TERM: COMMAND did not start: $(cat "$io/term.err")"
kill -TERM "$launcher"
rc=0; wait "$launcher" || rc=$?
[ $rc -eq 143 ] || fail "TERM: exit $rc, not 143: $(cat "$io/term.err")"
if kill -0 "$(cat "$io/pid")" 2>/dev/null; then kill "$(cat "$io/pid")"; fail "TERM: COMMAND still runs"; fi

# ---- a program that allocates through the fake driver: its log, no note ---------------------------
fake="$build/tests/fakecuda"
if [ -f "$fake/libcuda.so.1" ]; then
  cuda_program='
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
ctx = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
p = ctypes.c_uint64()
assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0
assert cuda.cuMemFree_v2(p) == 0'
  # /usr/bin/python3, not the python3 on PATH: that may be a shell script (pyenv's), which under
  # the sanitizer runtime COMMAND gets would report its own leaks
  asan="${ASAN_OPTIONS:-}:detect_leaks=0"
  run --log 'cuda-%p.jsonl' -- env LD_LIBRARY_PATH="$fake" ASAN_OPTIONS="$asan" /usr/bin/python3 -c "$cuda_program"
  [ $rc -eq 0 ] || fail "a CUDA program: exit $rc: $(cat "$io/err")"
  ! grep -q "made no CUDA call" <<<"$err" || fail "a CUDA program: said no CUDA call: $err"
  ls "$tmp"/cuda-*.jsonl >/dev/null 2>&1 || fail "a CUDA program: no log: $(ls "$tmp")"
  # a log from a child of COMMAND (sh starts python3) counts: %p is the child's
  run --log 'child-%p.jsonl' -- sh -c 'env LD_LIBRARY_PATH="$1" ASAN_OPTIONS="$2" /usr/bin/python3 -c "$3"' sh \
    "$fake" "$asan" "$cuda_program"
  [ $rc -eq 0 ] && ! grep -q "made no CUDA call" <<<"$err" || fail "a CUDA child: exit $rc: $err"
  # the same name again: the shim writes NAME.1, which counts as this run's
  : >"$tmp/again.jsonl"
  run --log again.jsonl -- env LD_LIBRARY_PATH="$fake" ASAN_OPTIONS="$asan" /usr/bin/python3 -c "$cuda_program"
  [ -s "$tmp/again.jsonl.1" ] && ! grep -q "made no CUDA call" <<<"$err" || fail "NAME.1: $err"
else
  echo "run_front_door: the fake driver is not built: the CUDA program is not run"
fi

# ---- --conf-from LOG ----------------------------------------------------------------------------
log="$src/examples/logs/training-loop.jsonl"
"$build/tools/cudapool-tune" --quiet --json "$log" >"$io/tune.json"
want=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["recommendation"]
print(("keep" if r["keep_own"] else "change") + "\t" + r["cudapool_conf"] + "\t" + r["why"])' "$io/tune.json")
IFS=$'\t' read -r what conf why <<<"$want"
[ "$what" = change ] || fail "the fixture: tune keeps the log's settings ($why): pick another log"
run --conf-from "$log" -- sh -c 'echo "$CUDAPOOL_CONF"'
[ $rc -eq 0 ] && [ "$out" = "$conf" ] || fail "--conf-from: exit $rc, CUDAPOOL_CONF '$out', not '$conf': $(cat "$io/err")"
[ "$err" = "cudapool run: CUDAPOOL_CONF=$conf from cudapool tune $log: $why" ] ||
  fail "--conf-from: stderr: $(cat "$io/err")"
grep -q "^peak reserved .* instead of .* (-[0-9.]*%)" <<<"$why" || fail "--conf-from: why: $why"
# a log the defaults suit: said, and run with the defaults (CUDAPOOL_CONF empty: not the
# environment's PYTORCH_CUDA_ALLOC_CONF either)
printf '%s\n' '{"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"alloc","ptr":"0x1000","size":1048576,"stream":"0x0"}' \
  '{"seq":2,"t_ns":2,"tid":1,"dev":0,"action":"free_requested","ptr":"0x1000","size":1048576,"stream":"0x0"}' \
  >"$tmp/small.jsonl"
PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 run --conf-from small.jsonl -- sh -c 'echo "[${CUDAPOOL_CONF-unset}]"'
[ $rc -eq 0 ] && [ "$out" = "[]" ] || fail "--conf-from, keep: exit $rc, out $out: $(cat "$io/err")"
grep -q "^cudapool run: the defaults (CUDAPOOL_CONF empty) from cudapool tune small.jsonl, which recommends keeping the log's own settings, the defaults: none of the" <<<"$err" ||
  fail "--conf-from, keep: stderr: $(cat "$io/err")"
# a log that cannot be read: exit 1, COMMAND not started
run --conf-from "$tmp/missing.jsonl" -- sh -c 'echo started'
[ $rc -eq 1 ] && [ -z "$out" ] || fail "--conf-from a missing log: exit $rc, out $out"
grep -qF "cudapool run: --conf-from: cudapool tune $tmp/missing.jsonl failed" <<<"$err" ||
  fail "--conf-from a missing log: $(cat "$io/err")"
grep -q "No such file" "$io/err" || fail "--conf-from a missing log: tune's reason not shown: $(cat "$io/err")"
# with --conf: a usage error
run --conf max_split_size_mb:64 --conf-from "$log" -- true
[ $rc -eq 2 ] && grep -qx "cudapool run: --conf and --conf-from go one at a time" "$io/err" &&
  grep -q "^usage: cudapool run" "$io/err" || fail "--conf with --conf-from: exit $rc: $(cat "$io/err")"
"$L" run --help >"$io/help"
grep -q -- "--conf-from LOG" "$io/help" || fail "run --help does not document --conf-from"
echo "ok: run_front_door"
