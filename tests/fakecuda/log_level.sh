#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/log_level.sh: the shim's own messages through its one logger, by
# CUDAPOOL_LOG_LEVEL (shim/support/diagnostics.h): warn (the default) shows a bad setting's warning
# with its "cudapool: " prefix and wording; error hides it; off shows nothing at all; info adds the
# settings in effect at start; debug adds each driver-function lookup; an unknown level is named
# once and the default kept. Through the fake driver.
# Usage: log_level.sh <cudart_like> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"

run() {  # name [env...]: stderr in $work/name.err
  local name=$1
  shift
  env "$@" LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_BACKTRACE=bogus \
    CUDAPOOL_CONF=max_split_size_mb:64 "$program" cache_hit shim >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: exit $?: $(tail -n 3 "$work/$name.err")"
}
bad='cudapool: CUDAPOOL_BACKTRACE=bogus: accepted: N or native:N (return addresses, N 0 to 16), python[:N] (Python frames, N 1 to 256), all[:N]; keeping none'
run default
grep -qxF "$bad" "$work/default.err" || fail "default: no warning: $(cat "$work/default.err")"
if grep -q 'settings from\|lookup ' "$work/default.err"; then fail "default: info or debug shown"; fi
run error CUDAPOOL_LOG_LEVEL=error
if grep -qF "$bad" "$work/error.err"; then fail "error: the warning was shown"; fi
run off CUDAPOOL_LOG_LEVEL=off
[ ! -s "$work/off.err" ] || fail "off: something on stderr: $(cat "$work/off.err")"
run info CUDAPOOL_LOG_LEVEL=info
grep -qxF "cudapool: settings from CUDAPOOL_CONF: max_split_size_mb:64" "$work/info.err" ||
  fail "info: no settings line: $(cat "$work/info.err")"
grep -qxF "cudapool:   max_split_size_mb = 64" "$work/info.err" || fail "info: no effective setting"
grep -qxF "$bad" "$work/info.err" || fail "info: the warning is missing"
if grep -q 'lookup ' "$work/info.err"; then fail "info: lookups shown"; fi
run debug CUDAPOOL_LOG_LEVEL=debug
grep -q '^cudapool: lookup cuGetProcAddress_v2(cuMemAlloc' "$work/debug.err" ||
  grep -q '^cudapool: lookup dlsym(cuMemAlloc' "$work/debug.err" ||
  fail "debug: no lookup lines: $(head -5 "$work/debug.err")"
run unknown CUDAPOOL_LOG_LEVEL=loud
[ "$(grep -c 'CUDAPOOL_LOG_LEVEL=loud: accepted: off, error, warn, info, debug, trace; keeping warn' \
  "$work/unknown.err")" = 1 ] || fail "unknown level: not named once: $(cat "$work/unknown.err")"
grep -qxF "$bad" "$work/unknown.err" || fail "unknown level: the default (warn) not kept"
exit $status
