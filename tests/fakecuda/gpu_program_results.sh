#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/gpu_program_results.sh: a GPU suite program that needs no kernels (driver API
# only, built here with the host compiler) run through the fake driver, without the shim and under
# it with several settings. Each run must pass its own checks, and its RESULT lines (the driver's
# answers) must read the same as without the shim, as tests/gpu/run.sh requires on the GPU. The
# fake checks the plumbing; the GPU suite checks the real driver.
# Usage: gpu_program_results.sh <program> <libcudapool.so> <fake libcuda.so.1 directory> ARGS...
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"
shift 3

run() {  # run NAME [VAR=VALUE...]: the program with the fake driver and the given environment
  local name=$1
  shift
  env LD_LIBRARY_PATH="$fake_dir" "$@" "$program" "${args[@]}" >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  [ $rc = 0 ] || fail "$name: exit $rc: $(grep -hE '^ERROR|error' "$work/$name.out" "$work/$name.err" | head -n 5)"
  return $rc
}
args=("$@")
run raw
grep -q '^RESULT ' "$work/raw.out" || fail "raw: no RESULT lines"
for conf in "" expandable_segments:True thread_cache:always reuse_fence:sync; do
  name=shim-${conf:-default}
  run "$name" LD_PRELOAD="$shim" CUDAPOOL_CONF="$conf" || continue
  if ! diff <(grep '^RESULT ' "$work/raw.out") <(grep '^RESULT ' "$work/$name.out") >"$work/diff"; then
    fail "$name: the driver's answers differ from the run without the shim: $(head -n 6 "$work/diff" | tr '\n' ' ')"
  else
    echo "ok: $name: $(grep -c '^RESULT ' "$work/$name.out") answers as without the shim; $(grep -E 'failed checks' "$work/$name.out")"
  fi
done
exit $status
