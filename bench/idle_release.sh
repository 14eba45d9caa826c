#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/idle_release.sh: issue 31's benchmark, in one call on a GPU machine: an inference loop of
# variable inputs (bench/variable_inputs.py: SAM, most images light, some needing tens of GB)
# and a fixed-shape training loop (bench/steady_train.py: ResNet-50), each with PyTorch's cache
# and with the cache off under the shim, side by side, in interleaved rounds. It answers: how
# much device memory each configuration holds (NVML's used memory, what nvidia-smi shows: peak
# and time-weighted mean during the loop, and after 1 s of idleness) and what it costs in speed.
# A benchmark, never a test; it measures nothing about the pool's policy offline (that is
# `cudapool tune` on the logs it leaves).
#
#   OUT=/some/dir bench/idle_release.sh
#
# Configurations (CONFIGS, in this order; even rounds run them in the reverse order):
#   defaults          variable_inputs.py, PyTorch's cache, its defaults
#   empty_cache       the same, torch.cuda.empty_cache() after every image
#   torch_expandable  PyTorch's cache, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
#   shim_expandable   the shim (PYTORCH_NO_CUDA_MEMORY_CACHING=1, LD_PRELOAD), CUDAPOOL_CONF=
#                     expandable_segments:True
#   shim_idle         the shim, CUDAPOOL_CONF=$IDLE_CONF (default
#                     "expandable_segments:True,expandable_handle_mb:256,idle_release_ms:100",
#                     what cudapool tune recommends on this loop's shim_expandable log (session
#                     19): cached memory unused for 100 ms goes back to the device, mapped in
#                     driver allocations of 12 pages; idle_release_floor_mb would keep a floor)
#   train_defaults    steady_train.py, PyTorch's cache, its defaults
#   train_shim_idle   steady_train.py under the shim with $IDLE_CONF
#   shim:CONF         variable_inputs.py under the shim with CUDAPOOL_CONF=CONF (no spaces)
#   shim2:CONF        the same under a second build of the shim, $CUDAPOOL_LIB2 (before and after)
#   nolog:CONF        as shim:CONF without CUDAPOOL_LOG (what writing the log costs the program)
# Each run is a fresh process; every shim run writes its allocation log (CUDAPOOL_LOG, zstd) for
# `cudapool report` / `cudapool tune`.
#
# Time, measured with VARIABLE_ARGS="--heavy-share 0.04" (sessions 18 and 20, H200 and H100): a
# variable_inputs.py run 19-32 s (imports, building SAM, warm-up, 96 measured images in 4-6 s, a
# 1 s idle tail), a steady_train.py run 14-18 s; 2 rounds of the 7 configurations: 319 s on the
# H100. BUDGET_S (480): no run starts after that many seconds;
# HARD_S (530): each run is killed (timeout) so that none ends past it; RUN_TIMEOUT_S (150) caps
# one run. Skipped runs are named in the output.
#
# Output: one markdown table per workload (configuration; images/s or steps/s, median over the
# rounds, and its ratio to the defaults of the same workload; peak and mean used GB; used GB after
# 1 s idle; PyTorch's max_memory_reserved; for the variable inputs, seconds per heavy and per
# light image), notes (NVML's base before CUDA; the shim's own warnings, such as a conf key it
# does not know), then the raw RUN lines. On stdout, and with OUT set: $OUT/idle-release.md (the
# tables and notes), $OUT/idle-release-raw.txt (RUN lines, failures, notes), and the logs of round
# 1 of the shim runs under $OUT/idle-release-logs/ (those under 15 MiB: what comes back from the
# machine is limited); every log stays in the work folder, whose path is printed.
#
# Environment: CUDAPOOL_LIB (default build/shim/libcudapool.so), PYTHON (default: python3 on PATH
# when it imports torch, torchvision, transformers and pynvml, else /usr/bin/python3), IDLE_CONF,
# ROUNDS (2), CONFIGS, IMAGES (48) and IMAGE_ROUNDS (2) for variable_inputs.py, STEPS (60) and
# WARMUP (10) for steady_train.py, VARIABLE_ARGS / TRAIN_ARGS (more arguments for each),
# PROBE=1 (first: variable_inputs.py --probe under PyTorch's defaults, ~25 s: seconds and peak
# memory of one image of each kind), BUDGET_S, HARD_S, RUN_TIMEOUT_S, OUT.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
IDLE_CONF="${IDLE_CONF:-expandable_segments:True,expandable_handle_mb:256,idle_release_ms:100}"
ROUNDS="${ROUNDS:-2}"
CONFIGS="${CONFIGS:-defaults empty_cache torch_expandable shim_expandable shim_idle train_defaults train_shim_idle}"
IMAGES="${IMAGES:-48}"
IMAGE_ROUNDS="${IMAGE_ROUNDS:-2}"
STEPS="${STEPS:-60}"
WARMUP="${WARMUP:-10}"
BUDGET="${BUDGET_S:-480}"
HARD="${HARD_S:-530}"
RUN_TIMEOUT="${RUN_TIMEOUT_S:-150}"
START=$SECONDS
WORK="$(mktemp -d /tmp/cudapool-idle-release.XXXXXX)"
LOGDIR="$WORK/logs"
RAW="$WORK/raw.txt"
mkdir -p "$LOGDIR"
: >"$RAW"

# The settings of one side must not leak into the other: each run sets its own.
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING CUDAPOOL_CONF \
  CUDAPOOL_LOG LD_PRELOAD
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1

# The interpreter: $PYTHON, else the first of python3 (PATH) and /usr/bin/python3 that has what
# the two scripts import. A shell wrapper (pyenv's python3) works too: the shim is preloaded into
# it, but it makes no CUDA call and the log is written by the python it execs.
if [ -n "${PYTHON:-}" ]; then
  PY="$PYTHON"
else
  PY=""
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 &&
      "$p" -c 'import torch, torchvision, transformers, pynvml' >/dev/null 2>&1; then
      PY="$(command -v "$p")"
      break
    fi
  done
  if [ -z "$PY" ]; then
    echo "idle_release.sh: neither python3 nor /usr/bin/python3 imports torch, torchvision, transformers and pynvml; set PYTHON" >&2
    exit 2
  fi
fi

HAVE_SHIM=1
if [ ! -f "$SHIM" ]; then
  HAVE_SHIM=0
  echo "WARNING: no shim at $SHIM (set CUDAPOOL_LIB): the shim's configurations are skipped" | tee -a "$RAW"
fi
echo "idle_release.sh: python $PY, shim $SHIM, IDLE_CONF=$IDLE_CONF, rounds $ROUNDS, work folder $WORK"

if [ "${PROBE:-0}" = 1 ]; then
  # shellcheck disable=SC2086  # VARIABLE_ARGS is a list of words
  timeout --kill-after=10 120 "$PY" "$REPO/bench/variable_inputs.py" --probe ${VARIABLE_ARGS:-} \
    2>"$WORK/probe.err" | grep '^PROBE ' | tee -a "$RAW"
  [ "${PIPESTATUS[0]}" = 0 ] || echo "FAILED probe: $(tail -3 "$WORK/probe.err" | tr '\n' ' ')" | tee -a "$RAW"
fi

run_one() {  # config round
  local config=$1 round=$2 script conf="" shim=0 log=1 elapsed limit name line
  local -a envs=(PYTHONUNBUFFERED=1) args=()
  case "$config" in
    defaults) script=variable_inputs.py; args=(--mode defaults) ;;
    empty_cache) script=variable_inputs.py; args=(--mode empty_cache) ;;
    torch_expandable)
      script=variable_inputs.py; args=(--mode defaults)
      conf="expandable_segments:True"; envs+=(PYTORCH_CUDA_ALLOC_CONF="$conf") ;;
    shim_expandable) script=variable_inputs.py; args=(--mode defaults); shim=1; conf="expandable_segments:True" ;;
    shim_idle) script=variable_inputs.py; args=(--mode defaults); shim=1; conf="$IDLE_CONF" ;;
    shim:* | shim2:* | nolog:*)  # a conf of your own, under $CUDAPOOL_LIB or $CUDAPOOL_LIB2
      script=variable_inputs.py; args=(--mode defaults); shim=1; conf="${config#*:}"
      [ "${config%%:*}" = shim2 ] && shim=2
      [ "${config%%:*}" = nolog ] && log=0 ;;
    train_defaults) script=steady_train.py ;;
    train_shim_idle) script=steady_train.py; shim=1; conf="$IDLE_CONF" ;;
    *) echo "unknown configuration $config" | tee -a "$RAW"; return ;;
  esac
  if [ "$script" = variable_inputs.py ]; then
    args+=(--images "$IMAGES" --rounds "$IMAGE_ROUNDS")
    # shellcheck disable=SC2206  # a list of words
    args+=(${VARIABLE_ARGS:-})
  else
    args+=(--steps "$STEPS" --warmup "$WARMUP")
    # shellcheck disable=SC2206
    args+=(${TRAIN_ARGS:-})
  fi
  name="$(echo "$config" | tr ':,' '-_')-r$round"
  local lib="$SHIM"
  if [ "$shim" = 2 ]; then
    lib="${CUDAPOOL_LIB2:-}"
    shim=1
  fi
  if [ "$shim" = 1 ]; then
    if [ ! -f "$lib" ]; then
      echo "SKIPPED $name: no shim at '$lib'" | tee -a "$RAW"
      return
    fi
    envs+=(PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_CONF="$conf" LD_PRELOAD="$lib")
    [ "$log" = 1 ] && envs+=(CUDAPOOL_LOG="$LOGDIR/$name.jsonl.zst")
  fi
  elapsed=$((SECONDS - START))
  limit=$((HARD - elapsed))
  [ "$limit" -gt "$RUN_TIMEOUT" ] && limit=$RUN_TIMEOUT
  if [ "$elapsed" -ge "$BUDGET" ] || [ "$limit" -lt 30 ]; then
    echo "BUDGET: ${elapsed} s spent, $name not run" | tee -a "$RAW"
    return
  fi
  timeout --kill-after=10 "$limit" env "${envs[@]}" "$PY" "$REPO/bench/$script" "${args[@]}" \
    >"$WORK/$name.out" 2>"$WORK/$name.err"
  local rc=$?
  line=$(grep '^RESULT ' "$WORK/$name.out" | tail -1)
  if [ -z "$line" ]; then
    echo "FAILED $name (exit $rc, $((SECONDS - START - elapsed)) s): $(tail -3 "$WORK/$name.err" | tr '\n' ' ' | cut -c1-600)" | tee -a "$RAW"
    return
  fi
  conf="${conf// /}"
  echo "RUN config=$config round=$round conf=${conf:-none} wall_s=$((SECONDS - START - elapsed)) ${line#RESULT }" | tee -a "$RAW"
  # What the shim said on stderr (a conf key it does not know, an out-of-memory explanation).
  if [ "$shim" = 1 ]; then
    grep -i 'cudapool' "$WORK/$name.err" | sort -u | head -5 | sed "s|^|NOTE $name: |" | tee -a "$RAW"
  fi
}

for round in $(seq 1 "$ROUNDS"); do
  order="$CONFIGS"
  if [ $((round % 2)) = 0 ]; then
    order="$(echo "$CONFIGS" | tr ' ' '\n' | grep -v '^$' | tac | tr '\n' ' ')"
  fi
  for config in $order; do
    run_one "$config" "$round"
  done
done

"$PY" - "$RAW" "$IDLE_CONF" <<'EOF' | tee "$WORK/table.md"
import json, re, statistics, sys
raw, idle_conf = sys.argv[1], sys.argv[2]
runs, notes, other = {}, [], []
for line in open(raw):
    line = line.rstrip("\n")
    m = re.match(r"RUN config=(\S+) round=(\d+) conf=(\S+) wall_s=(\d+) (\{.*\})$", line)
    if m:
        res = json.loads(m.group(5))
        res["_wall_s"] = int(m.group(4))
        runs.setdefault(m.group(1), []).append(res)
    elif line.startswith("NOTE "):
        notes.append(line[5:])
    elif line.startswith(("FAILED", "SKIPPED", "BUDGET", "WARNING")):
        other.append(line)
GB = 1e9
LABEL = {
    "defaults": "PyTorch cache, defaults",
    "empty_cache": "PyTorch cache, `empty_cache()` after every image",
    "torch_expandable": "PyTorch cache, `expandable_segments:True`",
    "shim_expandable": "shim, `expandable_segments:True`",
    "shim_idle": "shim, `%s`" % idle_conf,
    "train_defaults": "PyTorch cache, defaults",
    "train_shim_idle": "shim, `%s`" % idle_conf,
}
for c in runs:
    if c.startswith(("shim:", "shim2:", "nolog:")):
        lib, conf = c.split(":", 1)
        LABEL[c] = "%s, `%s`" % ({"shim": "shim", "shim2": "shim ($CUDAPOOL_LIB2)",
                                  "nolog": "shim without its log"}[lib], conf)
med = lambda xs: statistics.median(xs) if xs else None
gb = lambda b: "-" if b is None else "%.1f" % (b / GB)

def rows(configs, rate_key, unit, base_config, per_kind):
    tail = med([r["idle_tail_s"] for c in configs for r in runs.get(c, [])])
    head = "| configuration | %s (median) | vs defaults | peak used GB | mean used GB | used after %g s idle GB | torch max reserved GB |" % (
        unit, tail)
    sep = "| --- | --- | --- | --- | --- | --- | --- |"
    if per_kind:
        head += " s per heavy image | s per light image |"
        sep += " --- | --- |"
    head += " rounds | wall s per run |"
    sep += " --- | --- |"
    out = [head, sep]
    base = med([r[rate_key] for r in runs.get(base_config, [])])
    for c in configs:
        rs = runs.get(c)
        if not rs:
            continue
        rate = med([r[rate_key] for r in rs])
        rel = "%.3f" % (rate / base) if base else "-"
        cells = [LABEL.get(c, c), "%.2f" % rate, rel,
                 gb(med([r["nvml_peak"] for r in rs])), gb(med([r["nvml_mean"] for r in rs])),
                 gb(med([r["nvml_idle"] for r in rs])),
                 gb(med([r["max_memory_reserved"] for r in rs]))]
        if per_kind:
            for kind in ("heavy", "light"):
                v = [r["seconds_by_kind"][kind] / r["kinds"][kind] for r in rs
                     if r.get("kinds", {}).get(kind) and kind in r.get("seconds_by_kind", {})]
                cells.append("%.3f" % med(v) if v else "-")
        cells += [", ".join("%.2f" % r[rate_key] for r in rs), "%d" % med([r["_wall_s"] for r in rs])]
        out.append("| " + " | ".join(cells) + " |")
    return out

lines = []
variable = [c for c in runs if not c.startswith("train_")]
train = [c for c in runs if c.startswith("train_")]
if variable:
    r0 = runs[variable[0]][0]
    lines.append("Variable inputs (bench/variable_inputs.py: SAM ViT-B, %d images a run, %s, heavy = %d points):" % (
        r0["images"], ", ".join("%s %d" % kv for kv in sorted(r0["kinds"].items())), r0["heavy_points"]))
    lines.append("")
    lines += rows(variable, "images_per_s", "images/s", "defaults", True)
    lines.append("")
if train:
    r0 = runs[train[0]][0]
    lines.append("Steady training (bench/steady_train.py: ResNet-50, batch %d, %d measured steps after %d):" % (
        r0["batch"], r0["steps"], r0["warmup"]))
    lines.append("")
    lines += rows(train, "steps_per_s", "steps/s", "train_defaults", False)
    lines.append("")
bases = [r["nvml_base"] for rs in runs.values() for r in rs]
if bases:
    lines.append("NVML used memory before CUDA started in each process (the base, not subtracted above): %s-%s GB. GB = 10^9 bytes." % (
        gb(min(bases)), gb(max(bases))))
checks = {c: sorted({r.get("checksum") for r in rs}) for c, rs in runs.items() if not c.startswith("train_")}
if checks:
    lines.append("Checksums of the masks' areas: " + "; ".join("%s %s" % (c, "/".join(v)) for c, v in checks.items()) + ".")
for n in notes:
    lines.append("- shim: " + n)
for o in other:
    lines.append("- " + o)
print("\n".join(lines))
EOF

echo
echo "Raw lines:"
cat "$RAW"
echo "Logs (all rounds): $LOGDIR"
ls -l "$LOGDIR"

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$WORK/table.md" "$OUT/idle-release.md"
  cp "$RAW" "$OUT/idle-release-raw.txt"
  for f in "$LOGDIR"/*-r1.jsonl.zst; do
    [ -f "$f" ] || continue
    mkdir -p "$OUT/idle-release-logs"
    if [ "$(stat -c %s "$f")" -lt $((15 * 1024 * 1024)) ]; then
      cp "$f" "$OUT/idle-release-logs/"
    else
      echo "not copied to \$OUT (over 15 MiB): $f"
    fi
  done
fi
echo "idle_release.sh: $((SECONDS - START)) s in all; work folder $WORK (kept)"
