#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/early_init.sh: the shim initialized from another library's constructor, before its
# own static initializers ran (cudart_like_early links early_driver_user.cpp, which looks up a driver
# function from its constructor, as cuBLASLt does). The settings read at that first call must
# survive: the allocation log is written, the summary printed at exit, and the program's own
# lookups traced. Through the fake driver; the GPU suite's `libraries` section runs the real case.
# Usage: early_init.sh <cudart_like_early> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"

LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$work/log-%p.jsonl" \
  CUDAPOOL_SUMMARY=stderr CUDAPOOL_TRACE_LOOKUPS=1 "$program" cache_hit shim >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 0 ] || fail "cudart_like_early cache_hit shim: exit $rc: $(tail -n 5 "$work/err")"

grep -q 'lookup dlsym(cuInit' "$work/err" ||
  fail "the constructor's lookup of cuInit was not traced (did the early library run?)"
grep -q 'lookup cuGetProcAddress_v2(cuMemAlloc' "$work/err" ||
  fail "the program's lookups were not traced: CUDAPOOL_TRACE_LOOKUPS was lost after the early start"
grep -q 'Allocated memory' "$work/err" ||
  fail "no summary at exit: CUDAPOOL_SUMMARY was lost after the early start"
logs=("$work"/log-*.jsonl)
if [ ! -f "${logs[0]}" ]; then
  fail "no allocation log: CUDAPOOL_LOG was lost after the early start"
else
  allocs=$(grep -c '"action":"alloc"' "${logs[0]}")
  [ "$allocs" -ge 1 ] || fail "the log holds no alloc event"
  echo "ok: log ${logs[0]##*/} with $allocs alloc events"
fi
[ $status = 0 ] && echo "ok: settings read at the early start survived the shim's static initialization"
exit $status
