#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/oom_explained.sh: an out-of-memory the shim answers explains itself (through the
# fake driver; the GPU suite's errors section fills a real device). The program asks three times
# for a block that cannot fit: the explanation is printed once, with the request, the device's
# and the pool's memory and the cause; each oom event of the log carries the same figures; and
# `cudapool report` prints the explanation.
# Usage: oom_explained.sh <cudart_like> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" FAKECUDA_DEVICE_MEMORY=67108864 \
  CUDAPOOL_LOG="$work/log.jsonl" "$program" oom_explained shim >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 0 ] || fail "cudart_like oom_explained shim: exit $rc: $(tail -n 5 "$work/err")"

n=$(grep -c 'cudapool: out of memory on device 0: tried to allocate 40.00 MiB' "$work/err")
[ "$n" = 1 ] || fail "the explanation was printed $n times for one situation (want 1): $(cat "$work/err")"
grep -q 'cudapool:   device: 64.00 MiB total' "$work/err" || fail "no device line: $(cat "$work/err")"
grep -q 'cudapool:   pool: 40.00 MiB reserved, 40.00 MiB allocated' "$work/err" ||
  fail "no pool line: $(cat "$work/err")"
grep -q 'cudapool:   why: the program holds 40.00 MiB' "$work/err" ||
  fail "no shortage remedy: $(cat "$work/err")"

python3 - "$work/log.jsonl" <<'PY' || fail "the oom events do not carry the figures"
import json, sys
ooms = [e for e in map(json.loads, open(sys.argv[1])) if e.get("action") == "oom"]
assert len(ooms) == 3, len(ooms)
for e in ooms:
    assert e["size"] == 40 << 20 and e["block_size"] == 40 << 20, e
    assert e["segment_size"] == 40 << 20 and e["device_total"] == 64 << 20, e
    assert e["reserved"] == 40 << 20 and e["allocated"] == 40 << 20, e
    assert e["cause"] == "shortage", e
PY
"$root/scripts/cudapool" report "$work/log.jsonl" >"$work/report" 2>&1 ||
  fail "report failed: $(tail -n 5 "$work/report")"
grep -q 'out of memory on device 0: tried to allocate 40.00 MiB' "$work/report" ||
  fail "the report does not explain the OOM: $(grep -i -A3 oom "$work/report" | head -20)"
[ $status = 0 ] && echo "ok: explained once on stderr, 3 oom events with figures, and in the report"
exit $status
