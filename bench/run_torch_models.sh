#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/run_torch_models.sh: real PyTorch models (bench/torch_models.py) with PyTorch's own cache
# and with the cache off under the shim, side by side in one call; prints one markdown table. A
# benchmark for a GPU machine, never a test.
#
#   OUT=/some/dir bench/run_torch_models.sh
#
# Each (workload, setting, mode) runs in a fresh process, in this order: for each workload and each
# setting, every mode once, then again ROUNDS times in all (interleaved, so a slow spell of the host
# hits all modes). Modes: `torch` (PyTorch's cache), `shim:FENCE` (PYTORCH_NO_CUDA_MEMORY_CACHING=1,
# libcudapool.so preloaded, reuse_fence FENCE, logged to a file: the pool's peaks come from the
# log's summary line, the fences' behaviour from its events, bench/log_fences.py). Settings: the
# defaults, and (EXPANDABLE=1) expandable_segments:True on both sides.
#
# Environment: WORKLOADS (default "resnet50:train resnet50:infer fasterrcnn:infer fasterrcnn:train
# gpt2:train gpt2:infer gpt2var:train gpt2var:infer"; MODEL:TASK[:STEPS]), MODES (default "torch
# shim:auto"), SETTINGS (default "default", add "expandable"), ROUNDS (1), CUDAPOOL_LIB (default
# $REPO/build/shim/libcudapool.so), PYTHON (python3), OUT (table and raw lines also go there),
# BUDGET_S (560: nothing new starts after this many seconds), EXTRA_CONF (appended to the shim's
# conf string), PROFILE=1 (first: each workload once under torch.profiler, PyTorch's cache off,
# no shim: the streams its work goes to).
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
PY="${PYTHON:-python3}"
WORKLOADS="${WORKLOADS:-resnet50:train resnet50:infer fasterrcnn:infer fasterrcnn:train gpt2:train gpt2:infer gpt2var:train gpt2var:infer}"
MODES="${MODES:-torch shim:auto}"
SETTINGS="${SETTINGS:-default}"
ROUNDS="${ROUNDS:-1}"
BUDGET="${BUDGET_S:-560}"
WORK="$(mktemp -d /tmp/cudapool-models.XXXXXX)"
START=$SECONDS
RAW="$WORK/raw.txt"
: >"$RAW"

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8

steps_of() {
  case "$1" in
    resnet50:train) echo 20 ;; resnet50:infer) echo 30 ;;
    fasterrcnn:*) echo 30 ;;
    gpt2:train | gpt2var:train) echo 30 ;; *) echo 30 ;;
  esac
}

if [ "${PROFILE:-0}" = 1 ]; then
  for w in $WORKLOADS; do
    IFS=: read -r model task steps <<<"$w"
    echo "== profile $model $task"
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$REPO/bench/torch_models.py" --model "$model" \
      --task "$task" --steps 2 --warmup 1 --profile 2>&1 | grep -E '^PROFILE|Error|error' | head -40
  done
fi

run_one() {  # workload setting mode round
  local w=$1 setting=$2 mode=$3 round=$4
  local model task steps conf log line stats
  IFS=: read -r model task steps <<<"$w"
  [ -n "$steps" ] || steps=$(steps_of "$model:$task")
  conf=""
  [ "$setting" = expandable ] && conf="expandable_segments:True"
  log="$WORK/$model-$task-$setting-${mode//:/_}-$round.jsonl"
  if [ "$mode" = torch ]; then
    line=$(env ${conf:+PYTORCH_CUDA_ALLOC_CONF=$conf} "$PY" "$REPO/bench/torch_models.py" \
      --model "$model" --task "$task" --steps "$steps" 2>"$WORK/err.txt" | grep '^RESULT ' | tail -1)
    stats='{}'
  else
    local fence=${mode#shim:} c
    c="reuse_fence:$fence${conf:+,$conf}${EXTRA_CONF:+,$EXTRA_CONF}"
    line=$(env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_CONF="$c" CUDAPOOL_LOG="$log" \
      LD_PRELOAD="$SHIM" "$PY" "$REPO/bench/torch_models.py" --model "$model" --task "$task" \
      --steps "$steps" 2>"$WORK/err.txt" | grep '^RESULT ' | tail -1)
    stats=$("$PY" "$REPO/bench/log_fences.py" "$log" 2>/dev/null || echo '{}')
    rm -f "$log"
  fi
  if [ -z "$line" ]; then
    echo "FAILED $model $task $setting $mode: $(tail -3 "$WORK/err.txt" | tr '\n' ' ')"
    return
  fi
  echo "RUN workload=$model:$task setting=$setting mode=$mode round=$round ${line#RESULT } LOG $stats" | tee -a "$RAW"
}

for w in $WORKLOADS; do
  for setting in $SETTINGS; do
    for round in $(seq 1 "$ROUNDS"); do
      for mode in $MODES; do
        if [ $((SECONDS - START)) -ge "$BUDGET" ]; then
          echo "BUDGET: $BUDGET s spent, $w $setting $mode round $round not run"
          continue
        fi
        run_one "$w" "$setting" "$mode" "$round"
      done
    done
  done
done

"$PY" - "$RAW" <<'EOF' | tee "$WORK/table.md"
import json, re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"RUN workload=(\S+) setting=(\S+) mode=(\S+) round=(\d+) (\{.*\}) LOG (\{.*\})$", line.strip())
    if not m:
        continue
    w, setting, mode, rnd, res, log = m.groups()
    res, log = json.loads(res), json.loads(log)
    rows.setdefault((w, setting), {}).setdefault(mode, []).append((res, log))
mib = lambda b: "%.0f" % (b / 2**20) if b is not None else "-"
print("| workload | setting | mode | peak reserved MiB | peak allocated MiB | device allocs | steps/s (median) | vs torch: reserved | steps/s | fenced frees | same result |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (w, setting), modes in rows.items():
    base = modes.get("torch")
    def peak(mode, runs):
        if mode == "torch":
            r = runs[0][0]
            return r["torch_peak_reserved"], r["torch_peak_allocated"], r["torch_device_allocs"]
        l = runs[0][1]
        return l.get("reserved_bytes.all.peak"), l.get("allocated_bytes.all.peak"), l.get("num_device_alloc")
    bres = peak("torch", base) if base else None
    bsps = statistics.median(r["steps_per_s"] for r, _ in base) if base else None
    for mode, runs in modes.items():
        res, alloc, dev = peak(mode, runs)
        sps = statistics.median(r["steps_per_s"] for r, _ in runs)
        rel_r = "%+.1f%%" % (100.0 * (res / bres[0] - 1)) if bres and res and bres[0] else "-"
        rel_s = "%.3f" % (sps / bsps) if bsps else "-"
        fenced = "-" if mode == "torch" else "%s / %s" % (runs[0][1].get("fenced_frees"), runs[0][1].get("frees"))
        same = "-" if not base else ("yes" if all(r["checksum"] == base[0][0]["checksum"] for r, _ in runs) else "NO")
        print("| %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s | %s |" % (
            w, setting, mode, mib(res), mib(alloc), dev, sps, rel_r, rel_s, fenced, same))
EOF
# What the fences did and which streams had work, per shim run (the first round).
"$PY" - "$RAW" <<'EOF'
import json, re, sys
for line in open(sys.argv[1]):
    m = re.match(r"RUN workload=(\S+) setting=(\S+) mode=(shim\S*) round=1 .* LOG (\{.*\})$", line.strip())
    if not m:
        continue
    log = json.loads(m.group(4))
    print("FENCES %s %s %s %s" % (m.group(1), m.group(2), m.group(3), json.dumps(log.get("fences", {}), sort_keys=True)))
    print("STREAMS %s created %d (%d non-blocking) by %s; first work: %s" % (
        m.group(1), log.get("streams_created", 0), log.get("nonblocking_created", 0),
        "; ".join(log.get("created_by", []))[:300],
        "; ".join("%s %s %s" % (w["kind"], w["entry"], w["by"]) for w in log.get("first_work", [])[:4])[:400]))
EOF
if [ -n "${OUT:-}" ]; then
  cp "$RAW" "$OUT/torch-models-raw.txt"
  cp "$WORK/table.md" "$OUT/torch-models.md"
fi
rm -rf "$WORK"
