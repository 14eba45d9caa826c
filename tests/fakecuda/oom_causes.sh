#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/oom_causes.sh: every cause of an out-of-memory the shim answers, brought about
# through the fake driver (the oom_steps scenario: the allocations and frees of OOM_STEPS), is
# named in the log's oom event, and the explanation the shim printed on stderr (pool/oom.cpp) is
# the one `cudapool report` prints from the log (the analysis engine's, pool/oom.cpp's too), line
# for line: the two texts cannot drift. Then what must never be silent: a large_segment_size_mb the driver
# would refuse (above 1 TiB, or an odd number of MiB with expandable segments) is rejected when
# the shim starts, with the default kept; and a driver error other than out-of-memory during the
# pool's request is said on stderr and logged (alloc_failed, with the error).
# Usage: oom_causes.sh <cudart_like> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# run NAME CONF DEVICE_MEMORY STEPS [VAR=VALUE...]: the scenario under the shim, logged.
run() {
  local name="$1" conf="$2" memory="$3" steps="$4"
  shift 4
  env -u CUDAPOOL_CONF LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" FAKECUDA_DEVICE_MEMORY="$memory" \
    CUDAPOOL_CONF="$conf" OOM_STEPS="$steps" CUDAPOOL_LOG="$work/$name.jsonl" "$@" \
    "$program" oom_steps shim >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  [ $rc = 0 ] || fail "$name: exit $rc: $(tail -n 5 "$work/$name.err")"
  return $rc
}

# The explanation on stderr, without the "cudapool: " prefix: from its first line to its "why".
shim_text() {
  awk '/^cudapool: out of memory on device/ { on = 1 }
       on { sub(/^cudapool: /, ""); print } on && /^  why: / { exit }' "$1"
}
# The same explanation in the report (4 spaces in): from its first line to its "why".
report_text() {
  awk '/^    out of memory on device/ { on = 1 }
       on { sub(/^    /, ""); print } on && /^  why: / { exit }' "$1"
}

# cause NAME CONF DEVICE_MEMORY STEPS CAUSE WHY: the last step fails with out-of-memory, the oom
# event's cause is CAUSE, stderr and the report explain it alike, and the "why" line holds WHY.
cause() {
  local name="$1" conf="$2" memory="$3" steps="$4" want="$5" why="$6"
  run "$name" "$conf" "$memory" "$steps" || return
  tail -n 2 "$work/$name.out" | grep -q "CUDA_ERROR_OUT_OF_MEMORY" ||
    fail "$name: the last step did not run out of memory: $(cat "$work/$name.out")"
  local got
  got=$(python3 -c 'import json, sys
print(" ".join(e.get("cause", "-") for e in map(json.loads, open(sys.argv[1]))
               if e.get("action") == "oom"))' "$work/$name.jsonl")
  [ "$got" = "$want" ] || fail "$name: oom causes in the log: '$got' (want '$want')"
  shim_text "$work/$name.err" >"$work/$name.shim"
  [ -s "$work/$name.shim" ] || fail "$name: no explanation on stderr: $(cat "$work/$name.err")"
  grep -qF -- "$why" "$work/$name.shim" ||
    fail "$name: the explanation lacks '$why': $(cat "$work/$name.shim")"
  "$root/scripts/cudapool" report "$work/$name.jsonl" >"$work/$name.report" 2>&1 ||
    fail "$name: report failed: $(tail -n 5 "$work/$name.report")"
  report_text "$work/$name.report" >"$work/$name.explained"
  if ! cmp -s "$work/$name.shim" "$work/$name.explained"; then
    fail "$name: the report's explanation differs from the shim's:
$(diff "$work/$name.shim" "$work/$name.explained")"
  fi
}

# 1. The causes. The last three are settings that made the pool ask for more than the memory
# left while what the block needs would have fitted: the setting is named, with what fits.
cause shortage "" 64M "a40M a40M" shortage \
  "why: the program holds 40.00 MiB of the device's 64.00 MiB"
cause cap per_process_memory_fraction:0.5 64M "a20M a20M" cap \
  "why: the memory cap refused it, the device had room. Raise per_process_memory_fraction to at least 0.63"
cause fragmentation "" 60M "a6M a6M a6M a6M a6M a6M f1 f2 f4 f5 a25M" fragmentation \
  "why: fragmentation: 28.00 MiB is reserved but unallocated, yet no free block holds 25.00 MiB"
cause large_segment large_segment_size_mb:512 256M "a5M" large_segment_size \
  "large_segment_size_mb:512 made the pool ask for 512.00 MiB for a block of 5.00 MiB, and 256.00 MiB was free. Set large_segment_size_mb to at most 256, or leave it unset (20)"
cause large_segment_default "" 64M "a48M a5M" large_segment_size \
  "large_segment_size_mb:20 made the pool ask for 20.00 MiB for a block of 5.00 MiB, and 16.00 MiB was free. Set large_segment_size_mb to at most 16"
cause large_segment_page expandable_segments:True,large_segment_size_mb:512 256M "a12M" \
  large_segment_size \
  "large_segment_size_mb:512 made the pool ask for 512.00 MiB for a block of 12.00 MiB, and 256.00 MiB was free"
cause large_segment_cap per_process_memory_fraction:0.5,large_segment_size_mb:200 256M "a5M" \
  large_segment_size \
  "and 128.00 MiB was free under the cap (per_process_memory_fraction). Set large_segment_size_mb to at most 128, or leave it unset (20)"
cause roundup roundup_power2_divisions:2 180M "a150M" roundup \
  "roundup_power2_divisions rounded 150.00 MiB up to a block of 192.00 MiB, and 180.00 MiB was free, enough for the request itself (150.00 MiB). Use at least 4 divisions for sizes from 128.00 MiB (list entry 128:4)"

# 2. Values the driver would refuse are rejected at start; the default (20) serves the request.
# (Before: every allocation got CUDA_ERROR_INVALID_VALUE, with no message and no event.)
for value in 8796093022209 1048577 11; do
  name="rejected_$value"
  run "$name" "expandable_segments:True,large_segment_size_mb:$value" 256M "a5M" || continue
  grep -q "step a5M: CUDA_SUCCESS" "$work/$name.out" ||
    fail "$name: the request failed: $(cat "$work/$name.out" "$work/$name.err")"
  grep -q "^cudapool: Invalid conf pair: large_segment_size_mb:$value (.*accepted: an integer from 11 to 1048576 (MiB), even with expandable_segments:True; keeping: 20)$" \
    "$work/$name.err" || fail "$name: no diagnostic naming the limit: $(cat "$work/$name.err")"
done

# 3. A driver error other than out-of-memory in the pool's request is said and logged, once.
run refused expandable_segments:True 256M "a5M a5M a5M" \
  FAKECUDA_FAIL=cuMemAddressReserve:1:CUDA_ERROR_INVALID_VALUE && {
  grep -q "step a5M: CUDA_ERROR_INVALID_VALUE" "$work/refused.out" ||
    fail "refused: the program did not get the driver's error: $(cat "$work/refused.out")"
  n=$(grep -c "^cudapool: allocation failed on device 0: the driver refused an expandable segment's address range of .* (pages of 20.00 MiB: large_segment_size_mb:20), for a block of 5.00 MiB, with error 1 (CUDA_ERROR_INVALID_VALUE); the program's request of 5.00 MiB gets that error$" \
        "$work/refused.err")
  [ "$n" = 1 ] || fail "refused: the refusal was said $n times (want 1): $(cat "$work/refused.err")"
  python3 - "$work/refused.jsonl" <<'PY' || fail "refused: no alloc_failed event with the error"
import json, sys
failed = [e for e in map(json.loads, open(sys.argv[1])) if e.get("action") == "alloc_failed"]
assert len(failed) == 1, failed
assert failed[0]["size"] == 5 << 20 and failed[0]["error"] == 1, failed
PY
}

[ $status = 0 ] && echo "ok: 8 causes named and explained alike by the shim and the report; 3 refused values rejected at start; a driver error said and logged"
exit $status
