# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/conf.sh: the GPU suite's section conf: the pool's settings on the real driver
# (CONFS, described below). Reuses the logs errors-raw and torch_train-raw-nocache of the sections
# errors and torch when they ran, else makes them. Sourced by tests/gpu/run.sh (which sets the
# variables and runs test_conf when GPU_TESTS_ONLY names conf, or by default); not a script to run
# alone, and not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# The pool's settings on the real driver. `expandable`: expandable_segments:True (segments grow
# through the virtual memory API: cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess).
# `tuned`: splitting, rounding and garbage collection changed, and a memory fraction of 0.5. Under
# each: alloc_basic (data and overlap checked), cross_stream (reuse fences; frees stay fast),
# errors (the same answers as without the shim), conf_check.py (PyTorch churn checked, 1 GiB
# tensors until out-of-memory and recovery; with the fraction, cudaMemGetInfo's total and the
# out-of-memory point are the cap) and torch_train (losses bit-identical with the run without the
# shim).
CONFS=("expandable=expandable_segments:True"
  "tuned=max_split_size_mb:64,roundup_power2_divisions:4,garbage_collection_threshold:0.6,per_process_memory_fraction:0.5")

test_conf() {
  local entry name conf rc fraction
  # cudaDeviceReset with 1 GiB cached: nothing may stay allocated (the driver keeps cuMemCreate
  # pages past the context; the shim gives them back).
  in_modes reset_memory 60 'reset_memory: shim.*' raw shim shim:expandable_segments:True
  local raw_errors="$LOGS/errors-raw.log" raw_train="$LOGS/torch_train-raw-nocache.log"
  if have errors && ! grep -q '^RESULT' "$raw_errors" 2>/dev/null; then
    run errors-raw 180 raw "$BIN/errors"
  fi
  if py_has torch && [ "$(grep -c '^loss ' "$raw_train" 2>/dev/null)" != 50 ]; then
    run torch_train-raw-nocache 180 raw env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_train.py"
  fi
  if py_has torch; then
    checked_run conf-raw-torch 240 raw "conf_check.py without the shim: churn, out-of-memory and recovery" \
      env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/conf_check.py"
  fi
  for entry in "${CONFS[@]}"; do
    name=conf-${entry%%=*}
    conf=${entry#*=}
    info "$name: CUDAPOOL_CONF=$conf"
    have alloc_basic_static && checked_run "$name-alloc_basic" 120 "shim:$conf" \
      "2000 checked pairs per size, data and overlaps checked" "$BIN/alloc_basic_static" 2000
    # The log says which path served the segments; it must replay equal to its summary under
    # the same settings (the header carries them).
    if have alloc_basic_static && logs_ready "$name-log"; then
      rm -f "$ALOGS/$name"-*.jsonl
      checked_run "$name-logged" 120 "shim:$conf" "logged" env CUDAPOOL_LOG="$ALOGS/$name-%p.jsonl" "$BIN/alloc_basic_static" 500
      local f out
      f=$(largest_log "$name")
      if [ -z "$f" ]; then
        fail "$name-log" "no log file was written"
      elif ! out=$("$PY" "$HERE/../log_check.py" --replay "$REPLAY" "$f" 2>&1); then
        fail "$name-log" "$out"
      elif [[ $conf == *expandable_segments:True* ]] && { [ "$(grep -c '"action":"segment_map"' "$f")" = 0 ] || grep -q '"action":"segment_alloc"' "$f"; }; then
        fail "$name-log" "expandable segments asked for, yet the log shows $(action_counts "$f")"
      else
        pass "$name-log" "replay equal to the summary; $out"
      fi
    fi
    have cross_stream && checked_run "$name-cross_stream" 60 "shim:$conf" \
      "blocks freed under running kernels on other streams: old data survived in all cases" \
      "$BIN/cross_stream" --expect-fast-free
    if have errors; then
      checked_run "$name-errors" 180 "shim:$conf" "every check passes" "$BIN/errors"
      [ $? = 125 ] || same_results "$raw_errors" "$LOGS/$name-errors.log" "$name-errors-same"
    fi
    py_has torch || continue
    fraction=$(echo "$conf" | grep -o 'per_process_memory_fraction:[0-9.]*' | cut -d: -f2)
    checked_run "$name-torch" 240 "shim:$conf" "PyTorch, cache off: churn, out-of-memory and recovery${fraction:+, total = the cap}" \
      env PYTORCH_NO_CUDA_MEMORY_CACHING=1 ${fraction:+CONF_CHECK_FRACTION=$fraction} "$PY" "$HERE/conf_check.py"
    checked_run "$name-torch_train" 180 "shim:$conf" "PyTorch, cache off" \
      env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_train.py"
    same_losses "$name-torch_train-bitwise" "$raw_train" "$LOGS/$name-torch_train.log"
  done
  # A large segment above max_split_size, split by a small tensor: its free piece is oversize by
  # its size, and must not go back to the driver as a segment (split_piece.py). The cap: ~43 MiB.
  if py_has torch; then
    local total_mib
    total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1)
    fraction=$(awk -v t="$total_mib" 'BEGIN { printf "%.6f", 43 / t }')
    checked_run conf-split-piece 120 \
      "shim:large_segment_size_mb:32,max_split_size_mb:22,per_process_memory_fraction:$fraction" \
      "a split piece of a large segment is not released as a segment" \
      env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/split_piece.py"
  fi
}
