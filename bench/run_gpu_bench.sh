#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/run_gpu_bench.sh: allocation benchmarks of the LD_PRELOAD shim on a GPU machine; prints
# markdown tables. A benchmark, never a test: run it by hand and copy the tables into the docs.
#
#   OUT=/some/dir bench/run_gpu_bench.sh
#
# 1. alloc latency: median time per allocation+free pair for 512 B .. 1 GiB: cudaMalloc+cudaFree
#    (also with one 512 B block kept live, which makes the driver's small sizes cheap)
#    without the shim and under it (reuse_fence auto, sync, none; auto with the driver API called
#    directly; auto with CUDAPOOL_LOG), cudaMallocAsync+cudaFreeAsync, PyTorch's caching allocator
#    from C++ (bench/alloc_latency.cu, bench/torch_raw_alloc.py).
# 2. threads: total pairs/s (1 MiB) from 1, 4, 16 host threads: cudaMalloc+cudaFree without and
#    with the shim (and with its log), cudaMallocAsync on a stream per thread, PyTorch's raw_alloc
#    (bench/threads.cu, bench/torch_raw_alloc.py --threads).
# 3. the log's cost: extra time per pair and per event with CUDAPOOL_LOG (from table 1), events per
#    second sustained with 16 threads (from table 2), every event accounted for in the files.
# 4. PyTorch: tensor churn and a training loop with PyTorch's cache, with it off, with it off under
#    the shim: throughput and peak device memory (bench/torch_churn.py).
# 2b. threads_streams (only when BENCH_TABLES names it): table 2 for threads on the per-thread
#    default stream or a non-blocking stream each, pairs alone and with a kernel per pair.
# 5. rounds (only when BENCH_TABLES names it): table 1's columns again, ROUNDS times interleaved
#    (one run of each per round), with the median over rounds: on a noisy host one run per column
#    can land in a slow spell.
# 6. torch_rounds (only when BENCH_TABLES names it): table 4's churn and training loop with PyTorch's
#    cache and with it off under the shim, ROUNDS times interleaved, medians over rounds.
# 7. floor (only when BENCH_TABLES names it): the floor of interposition, ROUNDS interleaved rounds
#    of the static-cudart cudaMalloc+cudaFree loop under libcudapool_floor.so (the shim whose two
#    pooled hooks hand back a fixed pointer, shim/CMakeLists.txt), libcudapool_floor_ctx.so (the
#    same after asking the driver for the context id), the shim (default settings, no log; and the
#    CUDAPOOL_LIB_BASELINE build if given), raw cudaMalloc, cudaMallocAsync and PyTorch's
#    raw_alloc; the same through the driver entry points (--driver) for the floor and the shim.
#    Each column's median and minimum over rounds and its ratio to the floor's.
# BENCH_TABLES picks the tables and their order (default "latency threads log torch"). PIN_CPU=N
# runs every latency process of tables 1 and 5 (anchors included) under `taskset -c N`: on a
# shared host an unpinned process may land on a slow CPU (docs/benchmarks.md). Not pinned: the
# runs with CUDAPOOL_LOG (the log's writer thread would share the CPU), the threads and PyTorch
# tables.
# Each table is printed as soon as its numbers are in; the raw lines of every run are kept in
# $WORK/logs (and $OUT/gpu-bench-logs).
#
# Environment: CUDAPOOL_LIB (default $REPO/build/shim/libcudapool.so), CUDAPOOL_LIB_BASELINE
# (another build of the shim: the rounds table gets a "baseline" column, default settings), WORK (default
# /tmp/cudapool-bench: binaries, the PyTorch extension build, logs), LOG_COST (bench/log_cost of
# the shim's build directory, if built), LOG_DIR (where the allocation
# logs of the log-cost runs go, deleted after counting; default /dev/shm if it exists, so the disk
# does not time the log), OUT (if set: the output also goes to $OUT/gpu-bench.md), CUDA_HOME, NVCC,
# CUDA_ARCH (sm_90), PYTHON (python3), BENCH_BUDGET_S (540: nothing new starts after this many
# seconds), LAT_BUDGET_S (0.7: seconds of timing per size and run in table 1). Expected run time on
# an H200: about 4-6 minutes (the first run builds the PyTorch extension, about 1 minute).
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
# Another build of the shim (an earlier commit) for a "baseline" column of the rounds table.
# The floor builds for the floor table (ninja cudapool_floor cudapool_floor_ctx).
FLOOR="${CUDAPOOL_LIB_FLOOR:-$(dirname "$SHIM")/libcudapool_floor.so}"
FLOOR_CTX="${CUDAPOOL_LIB_FLOOR_CTX:-$(dirname "$SHIM")/libcudapool_floor_ctx.so}"
BASELINE="${CUDAPOOL_LIB_BASELINE:-}"
WORK="${WORK:-/tmp/cudapool-bench}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="${NVCC:-$CUDA_HOME/bin/nvcc}"
ARCH="${CUDA_ARCH:-sm_90}"
PY="${PYTHON:-python3}"
BUDGET="${BENCH_BUDGET_S:-540}"
LAT_BUDGET="${LAT_BUDGET_S:-0.7}"
BIN="$WORK/bin"
LOGS="$WORK/logs"
START=$SECONDS
SIZES=(512 1048576 8388608 67108864 1073741824)
LOG_DIR="${LOG_DIR:-}"
[ -z "$LOG_DIR" ] && { [ -d /dev/shm ] && [ -w /dev/shm ] && LOG_DIR=/dev/shm/cudapool-bench-logs || LOG_DIR="$WORK/alloc-logs"; }

remaining() { echo $((BUDGET - (SECONDS - START))); }
# Whether $PY imports torch; says so when it does not.
torch_importable() {
  "$PY" -c 'import torch' >/dev/null 2>&1 && return 0
  note "$PY cannot import torch"
  return 1
}
PIN=()
[ -n "${PIN_CPU:-}" ] && PIN=(taskset -c "$PIN_CPU")
note() { echo "> $*"; }

# bench_run NAME TIMEOUT MODE CMD...: output to $LOGS/NAME.log. MODE: raw, or shim:CONF.
bench_run() {
  local name=$1 tmo=$2 mode=$3 rem
  shift 3
  rem=$(remaining)
  if ((rem < 10)); then
    echo "(not run: time budget)" >"$LOGS/$name.log"
    note "$name: not run (time budget of $BUDGET s used up)"
    return 125
  fi
  ((tmo > rem)) && tmo=$rem
  local -a e=(env -u CUDAPOOL_CONF -u CUDAPOOL_DISABLE -u LD_PRELOAD -u PYTORCH_NO_CUDA_MEMORY_CACHING)
  case $mode in
    raw) ;;
    shim:*) e+=("LD_PRELOAD=$SHIM" "CUDAPOOL_CONF=${mode#shim:}") ;;
    shimlog:*) e+=("LD_PRELOAD=$SHIM" "CUDAPOOL_CONF=${mode#shimlog:}" "CUDAPOOL_LOG=$LOG_DIR/$name-%p.jsonl") ;;
    base:*) e+=("LD_PRELOAD=$BASELINE" "CUDAPOOL_CONF=${mode#base:}") ;;
    floor) e+=("LD_PRELOAD=$FLOOR") ;;
    floorctx) e+=("LD_PRELOAD=$FLOOR_CTX") ;;
  esac
  local t0=$SECONDS rc
  timeout -k 10 "$tmo" "${e[@]}" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  if [ $rc != 0 ]; then
    note "$name: exit $rc after $((SECONDS - t0)) s: $(grep -E 'error|Error|ERROR' "$LOGS/$name.log" | head -n 2 | cut -c1-250 | tr '\n' ' ')"
  fi
  if [[ $mode == shim*:* ]] && grep -q 'shim not-loaded' "$LOGS/$name.log"; then
    note "$name: WARNING: the program does not see libcudapool mapped (LD_PRELOAD=$SHIM)"
  fi
  return $rc
}

# ns -> "123 ns" / "12.3 us" / "1.23 ms"
fmt_ns() {
  awk -v v="$1" 'BEGIN {
    if (v == "") { print "-"; exit }
    if (v < 1000) printf "%.0f ns", v
    else if (v < 1e6) printf "%.2f us", v / 1e3
    else printf "%.2f ms", v / 1e6 }'
}

fmt_size() {
  awk -v b="$1" 'BEGIN {
    if (b >= 1073741824) printf "%g GiB", b / 1073741824
    else if (b >= 1048576) printf "%g MiB", b / 1048576
    else if (b >= 1024) printf "%g KiB", b / 1024
    else printf "%d B", b }'
}

# median_ns LOG SIZE -> the median_ns of that size's line, or empty.
median_ns() {
  awk -v s="$2" '$1 == "size=" s { for (i = 1; i <= NF; i++) if ($i ~ /^median_ns=/) { sub("median_ns=", "", $i); print $i } }' "$1" 2>/dev/null | head -n 1
}

# field LOG KEY -> value of KEY=value on the RESULT line
field() {
  awk -v k="$2" '$1 == "RESULT" { for (i = 2; i <= NF; i++) { n = index($i, "="); if (substr($i, 1, n - 1) == k) print substr($i, n + 1) } }' "$1" 2>/dev/null | head -n 1
}

# log_counts NAME: counts the events in the allocation logs of run NAME ($LOG_DIR/NAME-*.jsonl),
# writes "files=F lines=L allocs=A summaries=S bytes=B" to $LOGS/NAME.count, deletes the logs.
log_counts() {
  local name=$1 files lines=0 allocs=0 sums=0 bytes=0 f
  files=$(ls "$LOG_DIR/$name"-*.jsonl 2>/dev/null | wc -l)
  for f in "$LOG_DIR/$name"-*.jsonl; do
    [ -f "$f" ] || continue
    lines=$((lines + $(wc -l <"$f")))
    allocs=$((allocs + $(grep -c '"action":"alloc"' "$f")))
    sums=$((sums + $(grep -c '"action":"summary"' "$f")))
    bytes=$((bytes + $(stat -c %s "$f")))
    rm -f "$f"
  done
  echo "files=$files lines=$lines allocs=$allocs summaries=$sums bytes=$bytes" >"$LOGS/$name.count"
}

# count LOGNAME KEY -> a value from $LOGS/NAME.count
count() { tr ' ' '\n' <"$LOGS/$1.count" 2>/dev/null | sed -n "s/^$2=//p"; }

build() {
  mkdir -p "$BIN" "$LOGS" || return 1
  local -a common=(-O2 -std=c++17 -arch="$ARCH" -Xcompiler -pthread)
  "$NVCC" "${common[@]}" -o "$BIN/alloc_latency" "$REPO/bench/alloc_latency.cu" >"$LOGS/build-alloc_latency.log" 2>&1 &
  local p1=$!
  "$NVCC" "${common[@]}" -o "$BIN/threads" "$REPO/bench/threads.cu" -lcuda >"$LOGS/build-threads.log" 2>&1 &
  local p2=$!
  "$NVCC" "${common[@]}" --default-stream per-thread -o "$BIN/threads_ptds" "$REPO/bench/threads.cu" -lcuda >"$LOGS/build-threads_ptds.log" 2>&1 &
  local p3=$!
  wait $p1 || note "build of alloc_latency failed: $(head -c 400 "$LOGS/build-alloc_latency.log")"
  wait $p2 || note "build of threads failed: $(head -c 400 "$LOGS/build-threads.log")"
  wait $p3 || note "build of threads_ptds failed: $(head -c 400 "$LOGS/build-threads_ptds.log")"
}

# "512 B X; 1 MiB Y; ..." for the run logged as $LOGS/$1.log.
per_size() {
  local s
  for s in "${SIZES[@]}"; do printf '%s %s; ' "$(fmt_size "$s")" "$(fmt_ns "$(median_ns "$LOGS/$1.log" "$s")")"; done
}

table_latency() {
  echo
  echo "## Allocation latency (median per allocation+free pair, idle GPU)"
  echo
  local -a cols=(raw rawheld auto sync none driver log async torch)
  if [ -x "$BIN/alloc_latency" ]; then
    bench_run lat-raw 180 raw "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    note "no shim: $(per_size lat-raw)"
    # The driver serves a small size from a page it already maps while other memory is live.
    bench_run lat-rawheld 180 raw "${PIN[@]}" "$BIN/alloc_latency" --hold 512 --budget-s "$LAT_BUDGET"
    note "no shim, one 512 B block live: $(per_size lat-rawheld)"
    for f in auto sync none; do
      bench_run "lat-$f" 120 "shim:reuse_fence:$f" "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
      note "shim, reuse_fence:$f: $(per_size lat-$f)"
    done
    bench_run lat-driver 120 shim:reuse_fence:auto "${PIN[@]}" "$BIN/alloc_latency" --driver --budget-s "$LAT_BUDGET"
    note "shim, auto, cuMemAlloc_v2+cuMemFree_v2 directly: $(per_size lat-driver)"
    mkdir -p "$LOG_DIR"
    bench_run lat-log 120 shimlog:reuse_fence:auto "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    log_counts lat-log
    note "shim, auto, CUDAPOOL_LOG: $(per_size lat-log) log: $(cat "$LOGS/lat-log.count")"
    bench_run lat-async 120 raw "${PIN[@]}" "$BIN/alloc_latency" --async --budget-s "$LAT_BUDGET"
    note "cudaMallocAsync: $(per_size lat-async)"
  else
    note "alloc_latency was not built"
  fi
  if "$PY" -c 'import torch' >/dev/null 2>&1; then
    # The first run builds the extension (about a minute); later runs reuse $WORK/torch-ext.
    bench_run lat-torch 300 raw "${PIN[@]}" "$PY" "$REPO/bench/torch_raw_alloc.py" --build-dir "$WORK/torch-ext" --budget-s "$LAT_BUDGET"
    note "PyTorch caching allocator: $(per_size lat-torch)"
  else
    note "$PY cannot import torch: no PyTorch column"
  fi
  echo
  echo "| size | cudaMalloc+cudaFree, no shim | same, one 512 B block live | shim, reuse_fence:auto | shim, sync | shim, none | shim, auto, cuMemAlloc_v2+cuMemFree_v2 | shim, auto, CUDAPOOL_LOG | cudaMallocAsync+cudaFreeAsync | PyTorch raw_alloc+raw_delete |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  local s c row
  for s in "${SIZES[@]}"; do
    row="| $(fmt_size "$s") |"
    for c in "${cols[@]}"; do
      row+=" $(fmt_ns "$(median_ns "$LOGS/lat-$c.log" "$s")") |"
    done
    echo "$row"
  done
  echo
  echo "Median over batches of pairs (each batch about 20 us, at most 1000 pairs; $LAT_BUDGET s of timing per size, at most 200000 pairs). Same, one 512 B block live: cudaMalloc+cudaFree without the shim while one 512 B block stays allocated (the driver then serves small sizes from a page it already maps). cuMemAlloc_v2+cuMemFree_v2: the driver API through cudaGetDriverEntryPointByVersion (the shim's hooks), i.e. the pool without cudart's bookkeeping. CUDAPOOL_LOG: the log written to $LOG_DIR. cudaMallocAsync: one non-blocking stream, default pool with release threshold UINT64_MAX. PyTorch: c10::cuda::CUDACachingAllocator::raw_alloc/raw_delete timed in C++. Pairs timed per cell: \`$LOGS/lat-*.log\`."
}

table_rounds() {
  local rounds="${ROUNDS:-5}" r c s
  local -a cols=(raw rawheld auto never always sync none driver log async torch)
  [ -n "$BASELINE" ] && cols+=(baseline)
  echo
  echo "## Allocation latency, $rounds interleaved rounds (median per pair; median over rounds)"
  echo
  if [ ! -x "$BIN/alloc_latency" ]; then
    note "alloc_latency was not built"
    return
  fi
  local have_torch=0
  "$PY" -c 'import torch' >/dev/null 2>&1 && have_torch=1
  for ((r = 1; r <= rounds; r++)); do
    bench_run "rounds-raw-$r" 180 raw "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    bench_run "rounds-rawheld-$r" 180 raw "${PIN[@]}" "$BIN/alloc_latency" --hold 512 --budget-s "$LAT_BUDGET"
    bench_run "rounds-auto-$r" 120 shim:reuse_fence:auto "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    bench_run "rounds-never-$r" 120 shim:reuse_fence:auto,thread_cache:never "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    bench_run "rounds-always-$r" 120 shim:reuse_fence:auto,thread_cache:always "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    bench_run "rounds-sync-$r" 120 shim:reuse_fence:sync "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    bench_run "rounds-none-$r" 120 shim:reuse_fence:none "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    bench_run "rounds-driver-$r" 120 shim:reuse_fence:auto "${PIN[@]}" "$BIN/alloc_latency" --driver --budget-s "$LAT_BUDGET"
    mkdir -p "$LOG_DIR"
    bench_run "rounds-log-$r" 120 shimlog:reuse_fence:auto "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
    log_counts "rounds-log-$r"
    bench_run "rounds-async-$r" 120 raw "${PIN[@]}" "$BIN/alloc_latency" --async --budget-s "$LAT_BUDGET"
    ((have_torch)) && bench_run "rounds-torch-$r" 300 raw "${PIN[@]}" "$PY" "$REPO/bench/torch_raw_alloc.py" --build-dir "$WORK/torch-ext" --budget-s "$LAT_BUDGET"
    [ -n "$BASELINE" ] && bench_run "rounds-baseline-$r" 120 base:reuse_fence:auto "${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET"
  done
  echo "| size | column | rounds (ns) | median | raw / median |"
  echo "| --- | --- | --- | --- | --- |"
  local raw vals med
  median_of() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  for s in "${SIZES[@]}"; do
    raw=$(for ((r = 1; r <= rounds; r++)); do median_ns "$LOGS/rounds-raw-$r.log" "$s"; done | median_of)
    for c in "${cols[@]}"; do
      vals=$(for ((r = 1; r <= rounds; r++)); do median_ns "$LOGS/rounds-$c-$r.log" "$s"; done)
      [ -z "$vals" ] && continue
      med=$(echo "$vals" | median_of)
      echo "| $(fmt_size "$s") | $c | $(echo "$vals" | awk '{ printf "%s%.0f", (NR > 1 ? ", " : ""), $1 }') | $(fmt_ns "$med") | $(awk -v a="$raw" -v b="$med" 'BEGIN { if (a != "" && b > 0) printf "%.0fx", a / b; else print "-" }') |"
    done
  done
  echo
  echo "raw / median: the median of the raw rounds over the column's median. Columns: raw = cudaMalloc+cudaFree without the shim; rawheld = the same with one 512 B block kept allocated throughout (the driver then serves small sizes from a page it already maps); auto, sync and none = cudaMalloc+cudaFree under the shim with that reuse_fence (thread_cache at its default, auto: off in a single-threaded program); never and always = auto with thread_cache:never / thread_cache:always (the pair served by the thread's cache); driver = cuMemAlloc_v2+cuMemFree_v2 through cudaGetDriverEntryPointByVersion under the shim (auto); log = auto with CUDAPOOL_LOG in $LOG_DIR (3 events per pair); async = cudaMallocAsync+cudaFreeAsync on one stream, no shim; torch = PyTorch's raw_alloc+raw_delete from C++, no shim."
  echo
  echo "Logged runs (every pair must be in the log: timed pairs + 8 untimed per size):"
  local want
  for ((r = 1; r <= rounds; r++)); do
    want=$(awk '$1 ~ /^size=/ { for (i = 1; i <= NF; i++) if ($i ~ /^iters=/) { sub("iters=", "", $i); n += $i + 8 } } END { print n + 0 }' "$LOGS/rounds-log-$r.log" 2>/dev/null)
    echo "- round $r: pairs $want, alloc events $(count "rounds-log-$r" allocs), $(cat "$LOGS/rounds-log-$r.count" 2>/dev/null)"
  done
}

table_floor() {
  local rounds="${ROUNDS:-5}" r c s
  local -a cols=(floor floorctx shim raw async torch floordrv shimdrv)
  [ -n "$BASELINE" ] && cols+=(baseline)
  echo
  echo "## The floor of interposition, $rounds interleaved rounds (ns per cudaMalloc+cudaFree pair)"
  echo
  if [ ! -x "$BIN/alloc_latency" ] || [ ! -f "$FLOOR" ] || [ ! -f "$FLOOR_CTX" ]; then
    note "floor: needs alloc_latency, $FLOOR and $FLOOR_CTX (ninja cudapool_floor cudapool_floor_ctx)"
    return
  fi
  local have_torch=0 lat=("${PIN[@]}" "$BIN/alloc_latency" --budget-s "$LAT_BUDGET")
  "$PY" -c 'import torch' >/dev/null 2>&1 && have_torch=1
  for ((r = 1; r <= rounds; r++)); do
    bench_run "floor-floor-$r" 120 floor "${lat[@]}"
    bench_run "floor-floorctx-$r" 120 floorctx "${lat[@]}"
    bench_run "floor-shim-$r" 120 shim: "${lat[@]}"
    bench_run "floor-raw-$r" 180 raw "${lat[@]}"
    bench_run "floor-async-$r" 120 raw "${lat[@]}" --async
    ((have_torch)) && bench_run "floor-torch-$r" 300 raw "${PIN[@]}" "$PY" "$REPO/bench/torch_raw_alloc.py" --build-dir "$WORK/torch-ext" --budget-s "$LAT_BUDGET"
    bench_run "floor-floordrv-$r" 120 floor "${lat[@]}" --driver
    bench_run "floor-shimdrv-$r" 120 shim: "${lat[@]}" --driver
    [ -n "$BASELINE" ] && bench_run "floor-baseline-$r" 120 base: "${lat[@]}"
  done
  echo "| size | column | rounds (ns) | median | min | median / floor's | min / floor's |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  local vals med min fmed fmin base
  median_of() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  for s in "${SIZES[@]}"; do
    for c in "${cols[@]}"; do
      vals=$(for ((r = 1; r <= rounds; r++)); do median_ns "$LOGS/floor-$c-$r.log" "$s"; done)
      [ -z "$vals" ] && continue
      # The driver-API columns against the floor through the driver API, the rest against cudart's.
      base=floor
      [ "$c" = shimdrv ] && base=floordrv
      fmed=$(for ((r = 1; r <= rounds; r++)); do median_ns "$LOGS/floor-$base-$r.log" "$s"; done | median_of)
      fmin=$(for ((r = 1; r <= rounds; r++)); do median_ns "$LOGS/floor-$base-$r.log" "$s"; done | sort -g | head -n 1)
      med=$(echo "$vals" | median_of)
      min=$(echo "$vals" | sort -g | head -n 1)
      echo "| $(fmt_size "$s") | $c | $(echo "$vals" | awk '{ printf "%s%.0f", (NR > 1 ? ", " : ""), $1 }') | $(fmt_ns "$med") | $(fmt_ns "$min") | $(awk -v a="$med" -v b="$fmed" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }') | $(awk -v a="$min" -v b="$fmin" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }') |"
    done
  done
  echo
  echo "Columns: floor = cudaMalloc+cudaFree from static cudart under libcudapool_floor.so (the shim's dlsym and cuGetProcAddress path to hooks that hand back a fixed pointer); floorctx = the same, the hooks first asking the driver for the context id (cuCtxGetId); shim = libcudapool.so, default settings, no log; raw = no shim; async = cudaMallocAsync+cudaFreeAsync on one stream, no shim; torch = PyTorch's raw_alloc+raw_delete from C++, no shim; floordrv and shimdrv = cuMemAlloc_v2+cuMemFree_v2 through cudaGetDriverEntryPointByVersion (no cudart bookkeeping) under the floor and the shim (their ratio is to floordrv); baseline = CUDAPOOL_LIB_BASELINE, default settings. Each process lands at one of the host's speeds: the min over rounds compares the fast spells."
}

table_torch_rounds() {
  local rounds="${ROUNDS:-5}" r m part
  echo
  echo "## PyTorch, $rounds interleaved rounds (churn it/s, train steps/s, peak device memory)"
  echo
  torch_importable || return
  for ((r = 1; r <= rounds; r++)); do
    for part in churn train; do
      bench_run "trounds-cache-$part-$r" 120 raw "$PY" "$REPO/bench/torch_churn.py" --mode torch-cache --part "$part" --churn-iters 300000 --churn-seconds 20 --train-seconds 30
      bench_run "trounds-shim-$part-$r" 120 shim:reuse_fence:auto env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$REPO/bench/torch_churn.py" --mode nocache-shim --part "$part" --churn-iters 300000 --churn-seconds 20 --train-seconds 30
    done
  done
  echo "| mode | part | rounds (per s) | median | peak used, NVML (MiB, per round) |"
  echo "| --- | --- | --- | --- | --- |"
  local vals peaks med
  for part in churn train; do
    for m in cache shim; do
      vals=$(for ((r = 1; r <= rounds; r++)); do field "$LOGS/trounds-$m-$part-$r.log" per_s; done)
      peaks=$(for ((r = 1; r <= rounds; r++)); do field "$LOGS/trounds-$m-$part-$r.log" peak_nvml_mib; done | tr '\n' ' ')
      [ -z "$vals" ] && continue
      med=$(echo "$vals" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
      echo "| $([ $m = cache ] && echo "PyTorch's cache" || echo "cache off + shim") | $part | $(echo "$vals" | paste -sd, - | sed 's/,/, /g') | $med | $peaks |"
    done
  done
  echo
  echo "Each cell a fresh process; churn 300000 torch.empty of 256 B .. 16 MiB into 8 slots; train up to 200 steps of bench/torch_churn.py's MLP. Peak used: NVML device memory at the points of peak use minus the value at start."
}

table_threads() {
  echo
  echo "## Host threads (allocation+free of 1 MiB, total pairs/s)"
  echo
  if [ ! -x "$BIN/threads" ]; then
    note "threads was not built"
    return
  fi
  bench_run threads-raw 60 raw "$BIN/threads" --seconds 2
  bench_run threads-never 60 shim:reuse_fence:auto,thread_cache:never "$BIN/threads" --seconds 2
  bench_run threads-shim 60 shim:reuse_fence:auto "$BIN/threads" --seconds 2
  bench_run threads-always 60 shim:reuse_fence:auto,thread_cache:always "$BIN/threads" --seconds 2
  bench_run threads-driver 60 shim:reuse_fence:auto "$BIN/threads" --driver --seconds 2
  mkdir -p "$LOG_DIR"
  bench_run threads-log 90 shimlog:reuse_fence:auto "$BIN/threads" --seconds 2
  log_counts threads-log
  bench_run threads-async 60 raw "$BIN/threads" --async --seconds 2
  if "$PY" -c 'import torch' >/dev/null 2>&1; then
    bench_run threads-torch 300 raw "$PY" "$REPO/bench/torch_raw_alloc.py" --build-dir "$WORK/torch-ext" --threads 1,4,16 --seconds 2
  fi
  echo "| threads | cudaMalloc, no shim | shim, thread_cache:never | shim (default: thread_cache:auto) | shim, thread_cache:always | shim (default), cuMemAlloc from -lcuda | shim (default) + CUDAPOOL_LOG | cudaMallocAsync, a stream per thread | PyTorch raw_alloc |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  local n c row
  for n in 1 4 16; do
    row="| $n |"
    for c in raw never shim always driver log async torch; do
      row+=" $(awk -v n="$n" '$1 == "threads=" n { sub("pairs_per_s=", "", $4); print $4 }' "$LOGS/threads-$c.log" 2>/dev/null | head -n 1) |"
    done
    echo "${row//| |/| - |}"
  done
  echo
  echo "All with reuse_fence:auto. thread_cache:auto turns a pool's thread caches on once its lock was contended in 1/8 of 1024 acquisitions; with CUDAPOOL_LOG there are none (docs/shim.md, \"Thread caches\")."
}

# Threads whose work is not on the legacy stream: the per-thread default stream (a program built
# with --default-stream per-thread) or a non-blocking stream per thread, pairs alone and with a
# small kernel on the block before each free (reuse_fence:auto must follow that work).
table_threads_streams() {
  echo
  echo "## Host threads on per-thread and non-blocking streams (allocation+free of 1 MiB, total pairs/s)"
  echo
  if [ ! -x "$BIN/threads_ptds" ]; then
    note "threads_ptds was not built"
    return
  fi
  bench_run ts-ptds-shim 60 shim:reuse_fence:auto "$BIN/threads_ptds" --seconds 2
  bench_run ts-ptds-never 60 shim:reuse_fence:auto,thread_cache:never "$BIN/threads_ptds" --seconds 2
  bench_run ts-nb-shim 60 shim:reuse_fence:auto "$BIN/threads" --stream nonblocking --seconds 2
  bench_run ts-ptdswork-shim 60 shim:reuse_fence:auto "$BIN/threads_ptds" --stream per-thread --work --seconds 2
  bench_run ts-ptdswork-raw 60 raw "$BIN/threads_ptds" --stream per-thread --work --seconds 2
  bench_run ts-nbwork-shim 60 shim:reuse_fence:auto "$BIN/threads" --stream nonblocking --work --seconds 2
  bench_run ts-nbwork-raw 60 raw "$BIN/threads" --stream nonblocking --work --seconds 2
  echo "| threads | per-thread default stream (built --default-stream per-thread), shim | the same, thread_cache:never | a non-blocking stream each, shim | per-thread stream + a kernel per pair, shim | the same, no shim | non-blocking stream + a kernel per pair, shim | the same, no shim |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  local n c row
  for n in 1 4 16; do
    row="| $n |"
    for c in ptds-shim ptds-never nb-shim ptdswork-shim ptdswork-raw nbwork-shim nbwork-raw; do
      row+=" $(awk -v n="$n" '$1 == "threads=" n { sub("pairs_per_s=", "", $4); print $4 }' "$LOGS/ts-$c.log" 2>/dev/null | head -n 1) |"
    done
    echo "${row//| |/| - |}"
  done
  echo
  echo "All with reuse_fence:auto (default settings: thread_cache:auto) unless the column says otherwise."
}

# The log's cost, from the latency and threads runs with CUDAPOOL_LOG.
table_log() {
  echo
  echo "## The allocation log's cost (CUDAPOOL_LOG, reuse_fence:auto)"
  echo
  echo "| size | pair, no log | pair, with log | extra per pair | extra per event (3 per pair) |"
  echo "| --- | --- | --- | --- | --- |"
  local s a b
  for s in "${SIZES[@]}"; do
    a=$(median_ns "$LOGS/lat-auto.log" "$s")
    b=$(median_ns "$LOGS/lat-log.log" "$s")
    if [ -n "$a" ] && [ -n "$b" ]; then
      echo "| $(fmt_size "$s") | $(fmt_ns "$a") | $(fmt_ns "$b") | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f ns", b - a }') | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f ns", (b - a) / 3 }') |"
    else
      echo "| $(fmt_size "$s") | $(fmt_ns "$a") | $(fmt_ns "$b") | - | - |"
    fi
  done
  # Every pair is in the log: allocs logged == pairs done (timed + 8 untimed per size).
  local want got
  want=$(awk '$1 ~ /^size=/ { for (i = 1; i <= NF; i++) if ($i ~ /^iters=/) { sub("iters=", "", $i); n += $i + 8 } } END { print n + 0 }' "$LOGS/lat-log.log" 2>/dev/null)
  got=$(count lat-log allocs)
  echo
  echo "Latency run: $want pairs done, $got alloc events in the log ($(count lat-log lines) lines, $(count lat-log bytes) bytes, $(count lat-log summaries) summary line)."
  local p16 secs16 sustained
  p16=$(awk '$1 == "threads=16" { sub("pairs=", "", $2); print $2 }' "$LOGS/threads-log.log" 2>/dev/null)
  secs16=$(awk '$1 == "threads=16" { sub("seconds=", "", $3); print $3 }' "$LOGS/threads-log.log" 2>/dev/null)
  want=$(awk '$1 ~ /^threads=/ { n = $1; sub("threads=", "", n); p = $2; sub("pairs=", "", p); t += p + n } END { print t + 0 }' "$LOGS/threads-log.log" 2>/dev/null)
  got=$(count threads-log allocs)
  if [ -n "$p16" ] && [ -n "$secs16" ]; then
    sustained=$(awk -v p="$p16" -v s="$secs16" 'BEGIN { printf "%.2f M", 3 * p / s / 1e6 }')
    echo "Threads run: 16 threads sustained $sustained events/s into one log (3 per pair); $want pairs done in all counts, $got alloc events in the log ($(count threads-log lines) lines, $(count threads-log bytes) bytes)."
  fi
  local log_cost="${LOG_COST:-$(dirname "$SHIM")/../bench/log_cost}"
  if [ -x "$log_cost" ]; then
    echo
    echo "CPU-only (bench/log_cost, the pool with the Logger as its sink, no CUDA):"
    echo
    "$log_cost" "$LOG_DIR" 2>&1 | tee "$LOGS/log_cost.log"
  fi
}

table_torch() {
  echo
  echo "## PyTorch: tensor churn and training"
  echo
  torch_importable || return
  local -a modes=(torch-cache nocache nocache-shim)
  local m part
  for m in "${modes[@]}"; do
    for part in churn train; do
      local -a cmd=("$PY" "$REPO/bench/torch_churn.py" --mode "$m" --part "$part" --churn-seconds 15 --train-seconds 30)
      case $m in
        torch-cache) bench_run "torch-$m-$part" 120 raw "${cmd[@]}" ;;
        nocache) bench_run "torch-$m-$part" 120 raw env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${cmd[@]}" ;;
        nocache-shim) bench_run "torch-$m-$part" 120 shim:reuse_fence:auto env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${cmd[@]}" ;;
      esac
      note "$m $part: $(grep -m1 -E '^torch_churn: (churn|train) ' "$LOGS/torch-$m-$part.log" | cut -c14-)"
    done
  done
  echo
  echo "| mode | churn it/s | churn peak used (NVML) | churn peak used (mem_get_info) | train steps/s | train peak used (NVML) | train peak used (mem_get_info) | torch max reserved (train) |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  local label c t
  for m in "${modes[@]}"; do
    case $m in
      torch-cache) label="PyTorch cache" ;;
      nocache) label="cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1)" ;;
      nocache-shim) label="cache off + shim" ;;
    esac
    c="$LOGS/torch-$m-churn.log"
    t="$LOGS/torch-$m-train.log"
    echo "| $label | $(field "$c" per_s) | $(field "$c" peak_nvml_mib) MiB | $(field "$c" peak_meminfo_mib) MiB | $(field "$t" per_s) | $(field "$t" peak_nvml_mib) MiB | $(field "$t" peak_meminfo_mib) MiB | $(field "$t" torch_max_reserved_mib) MiB |"
  done
  echo
  echo "Churn: up to 100000 torch.empty (256 B .. 16 MiB, 8 slots), stopped after 15 s. Train: pre-norm MLP blocks, width 1024, 8192 tokens, AdamW, up to 200 steps (stopped after 30 s), after 5 warm-up steps. Peak used: device memory in use at the points of peak use, minus the value at start, from NVML (everything held from the driver, cached blocks included) and from torch.cuda.mem_get_info (cudaMemGetInfo; a pool may count its cached blocks as free). Each cell a fresh process."
}

main() {
  mkdir -p "$BIN" "$LOGS" || exit 2
  rm -f "$LOGS"/*.log
  echo "# cudapool GPU benchmarks"
  echo
  local gpu="nvidia-smi not found"
  command -v nvidia-smi >/dev/null 2>&1 && gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ); GPU: $gpu; $(nproc) CPU cores; repo $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?'); shim $SHIM; nvcc $("$NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*' | cut -d' ' -f2); $("$PY" --version 2>&1)"
  if [ ! -f "$SHIM" ]; then
    note "WARNING: $SHIM does not exist: the shim columns will be empty (set CUDAPOOL_LIB)"
  fi
  build
  local t
  for t in ${BENCH_TABLES:-latency threads log torch}; do
    case $t in
      latency | threads | threads_streams | log | torch | rounds | torch_rounds | floor) "table_$t" ;;
      *) note "BENCH_TABLES: no table '$t' (latency, threads, threads_streams, log, torch, rounds, torch_rounds, floor)" ;;
    esac
  done
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT/gpu-bench-logs" && cp "$LOGS"/*.log "$OUT/gpu-bench-logs/" 2>/dev/null
  fi
  echo
  rmdir "$LOG_DIR" 2>/dev/null
  echo "(benchmarks took $((SECONDS - START)) s)"
}

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" || exit 2
  main "$@" 2>&1 | tee "$OUT/gpu-bench.md"
  exit "${PIPESTATUS[0]}"
else
  main "$@"
fi
