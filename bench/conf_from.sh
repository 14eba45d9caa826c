#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/conf_from.sh: the loop "log, tune, run better" as a user types it, on the GPU, with an
# installed cudapool (PREFIX/bin/cudapool): a real PyTorch job (bench/verdict_burst.py: a burst
# of long requests leaves the cache high) run under the shim with a log, then run again with
# `cudapool run --conf-from LOG` (the setting cudapool tune recommends for that log); NVML's used
# memory (sampled every 5 ms by the job) and each log's peak reserved side by side with tune's
# prediction. Also what `run` says around COMMAND there: a program that makes no CUDA call, one
# that does not exist. Writes $OUT/conf-from.txt and the logs. Usage, on the GPU machine:
#   PREFIX=build/inst OUT=/some/dir bench/conf_from.sh
# Not here: what tune recommends and why (docs/tune.md), the job itself (verdict_burst.py).
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${OUT:?set OUT}" "${PREFIX:?set PREFIX (an install: cmake --install build --prefix P)}"
PY="${PYTHON:-python3}"
C="$(cd "$PREFIX" && pwd)/bin/cudapool"
mkdir -p "$OUT"
exec > >(tee "$OUT/conf-from.txt") 2>&1
echo "conf_from: $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
job=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_BACKTRACE=python "$PY" "$REPO/bench/verdict_burst.py")

echo "== 1. the job under the shim, with a log"
"$C" run --log "$OUT/first-%p.jsonl.zst" -- "${job[@]}"; echo "exit $?"
first=$(ls "$OUT"/first-*.jsonl.zst | head -1)
echo "== tune's prediction for it"
"$C" tune --quiet "$first" | head -12
echo "== 2. again, with the setting tune recommends"
"$C" run --conf-from "$first" --log "$OUT/better-%p.jsonl.zst" -- "${job[@]}"; echo "exit $?"
better=$(ls "$OUT"/better-*.jsonl.zst | head -1)
echo "== the two logs: their header's conf and peak reserved"
for l in "$first" "$better"; do
  "$C" report --quiet --json --no-tune "$l" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
v = d["verdict"]["devices"]
print(sys.argv[1].rsplit("/", 1)[-1], "conf", repr(d["header"].get("conf")),
      "peak reserved", {k: x["peak_reserved"] for k, x in v.items()},
      "peak allocated", {k: x["peak_allocated"] for k, x in v.items()})' "$l"
done
echo "== 3. a program that makes no CUDA call"
(cd "$OUT" && "$C" run --log 'nocuda-%p.jsonl' -- "$PY" -c 'print(1)'); echo "exit $?"
echo "== 4. a program that does not exist"
"$C" run -- ./no-such-program; echo "exit $?"
