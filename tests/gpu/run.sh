#!/usr/bin/env bash
# tests/gpu/run.sh: the GPU test suite of the LD_PRELOAD shim. Run on a machine with an NVIDIA GPU,
# nvcc and python3 (torch, cupy, jax), from anywhere:
#
#   OUT=/some/dir tests/gpu/run.sh
#
# Builds every program of tests/gpu into $WORK/bin with nvcc, runs each under the shim (and where it
# tells something, also without it, and with CUDAPOOL_DISABLE=1), and prints one line per check:
# `PASS name details`, `FAIL name: why`, `EXPECTED-UNSAFE name: ...` (reuse_fence:none lost data,
# which it is allowed to), or `INFO ...`. Each program's own output follows its run, indented with
# `    | `. Ends with `gpu tests: N passed, N failed`; exit status 1 if anything failed.
#
# Environment: CUDAPOOL_LIB (the shim; default $REPO/build/shim/libcudapool.so), WORK (build and
# log directory, default /tmp/cudapool-gpu), OUT (if set: $OUT/gpu-tests.log and the per-program
# logs in $OUT/gpu-tests-logs/), CUDA_HOME (/usr/local/cuda), NVCC, CUDA_ARCH (sm_90), PYTHON
# (python3), GPU_TESTS_ONLY (sections to run, e.g. "logs jax"; default all: cross_stream
# fence_shortcuts late_stream alloc_basic driver_api contexts threads errors libraries other_allocs two_devices torch conf
# cupy numba jax logs), CUDAPOOL_REPLAY (default
# $REPO/build/tools/cudapool-replay: the log checks replay
# every log with it), GPU_TESTS_BUDGET_S (1200: no program starts after this many seconds; those
# left are reported as failed, "skipped: time budget"). Expected run time on an H200: about 12
# minutes, 3.5 of them the section contexts (run it in parts with GPU_TESTS_ONLY where a call is
# limited to 10 minutes; the default budget covers a whole run).
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/tests/gpu"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
WORK="${WORK:-/tmp/cudapool-gpu}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="${NVCC:-$CUDA_HOME/bin/nvcc}"
ARCH="${CUDA_ARCH:-sm_90}"
PY="${PYTHON:-python3}"
BUDGET="${GPU_TESTS_BUDGET_S:-1200}"
REPLAY="${CUDAPOOL_REPLAY:-$REPO/build/tools/cudapool-replay}"
BIN="$WORK/bin"
LOGS="$WORK/logs"
START=$SECONDS
N_PASS=0
N_FAIL=0
N_UNSAFE=0

pass() {
  N_PASS=$((N_PASS + 1))
  echo "PASS $*"
}
fail() {
  local name=$1
  shift
  N_FAIL=$((N_FAIL + 1))
  echo "FAIL $name: $*"
}
info() { echo "INFO $*"; }
remaining() { echo $((BUDGET - (SECONDS - START))); }

# The first lines of a log that say what went wrong.
why() {
  local w
  w=$(grep -E 'ERROR|CHECK-FAIL|CUDA error|CUDA driver error|FAILED|Traceback|Error|error:|Segmentation|Aborted|core dumped' "$1" 2>/dev/null |
    head -n 4 | cut -c1-300 | tr '\n' ' ')
  [ -n "$w" ] || w=$(tail -n 3 "$1" 2>/dev/null | cut -c1-300 | tr '\n' ' ')
  echo "$w"
}

# run NAME TIMEOUT MODE CMD...: runs CMD with its output in $LOGS/NAME.log, then shows the log
# (indented; torch_train's per-step loss lines left out). MODE: raw (no shim), shim (the shim,
# default settings), shim:CONF (the shim with CUDAPOOL_CONF=CONF), disable (the shim loaded with
# CUDAPOOL_DISABLE=1). Returns CMD's exit status; 124/137 timed out, 125 not run (time budget).
run() {
  local name=$1 tmo=$2 mode=$3
  shift 3
  local log="$LOGS/$name.log" rem
  rem=$(remaining)
  if ((rem < 5)); then
    echo "(not run: time budget of $BUDGET s used up)" >"$log"
    echo "---- $name: not run (time budget)"
    return 125
  fi
  ((tmo > rem)) && tmo=$rem
  local -a e=(env -u CUDAPOOL_CONF -u CUDAPOOL_DISABLE -u LD_PRELOAD)
  case $mode in
    raw) ;;
    shim) e+=("LD_PRELOAD=$SHIM") ;;
    shim:*) e+=("LD_PRELOAD=$SHIM" "CUDAPOOL_CONF=${mode#shim:}") ;;
    disable) e+=("LD_PRELOAD=$SHIM" "CUDAPOOL_DISABLE=1") ;;
    *) echo "run: bad mode $mode" >&2 ;;
  esac
  local t0=$SECONDS rc
  timeout -k 10 "$tmo" "${e[@]}" "$@" >"$log" 2>&1
  rc=$?
  echo "---- $name [$mode] rc $rc, $((SECONDS - t0)) s: ${*#"$BIN"/}"
  grep -v '^loss [0-9]' "$log" | cut -c1-400 | sed -e 's/^/    | /'
  return $rc
}

# verdict NAME RC LOG [DETAIL]: PASS on status 0, else FAIL saying why.
verdict() {
  local name=$1 rc=$2 log=$3 detail=${4:-}
  case $rc in
    0) pass "$name" "$detail" ;;
    125) fail "$name" "skipped: time budget" ;;
    124 | 137) fail "$name" "timed out; $(why "$log")" ;;
    *)
      if ((rc > 128)); then
        fail "$name" "killed by signal $((rc - 128)); $(why "$log")"
      else
        fail "$name" "exit $rc; $(why "$log")"
      fi
      ;;
  esac
}

# In a run with the shim: a program that got as far as its banner must report libcudapool mapped
# (one that died earlier fails its own check).
preload_check() {
  local name=$1 rc=$2 log=$3
  [ "$rc" = 125 ] && return
  if grep -q 'shim not-loaded' "$log"; then
    fail "$name-preload" "the program does not see libcudapool mapped (LD_PRELOAD=$SHIM)"
  fi
}

# checked_run NAME TIMEOUT MODE DETAIL CMD...: run, then (under the shim) the preload check, then
# the verdict with DETAIL. Returns CMD's status.
checked_run() {
  local name=$1 tmo=$2 mode=$3 detail=$4 rc
  shift 4
  run "$name" "$tmo" "$mode" "$@"
  rc=$?
  [ "$mode" = raw ] || preload_check "$name" $rc "$LOGS/$name.log"
  verdict "$name" $rc "$LOGS/$name.log" "$detail"
  return $rc
}

# "512B=180ns 1048576B=..." from alloc_basic / driver_api output.
bare_ns() {
  awk '/^size [0-9]+:/ { s = $2; sub(":", "", s); for (i = 1; i <= NF; i++) if ($i == "bare") printf "%sB=%sns ", s, $(i + 2) }' "$1"
}

# The name a run mode gets in check names: raw, default, or the conf string with ':' and ','
# as '-' (reuse_fence-sync, thread_cache-always).
mode_tag() {
  local tag=${1#shim}
  tag=${tag#:}
  tag=${tag//[:,]/-}
  echo "${tag:-default}"
}

# "alloc 11, alloc_async 15, ..." from a log: each action and its count.
action_counts() {
  grep -o '"action":"[a-z_]*"' "$1" | sed 's/"action"://; s/"//g' | sort | uniq -c |
    awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }'
}

# logs_ready CHECK: before a section's logged runs, one FAIL named CHECK when the replay tool is
# missing (status 1); else sets ALOGS, the directory of the allocation logs.
logs_ready() {
  if [ ! -x "$REPLAY" ]; then
    fail "$1" "$REPLAY is not built (set CUDAPOOL_REPLAY)"
    return 1
  fi
  ALOGS="$WORK/alloc-logs"
  mkdir -p "$ALOGS"
}

# in_modes PROGRAM TIMEOUT DETAIL MODE...: runs $BIN/PROGRAM once per mode (checks PROGRAM-<tag>,
# mode_tag), each with the preload check under the shim and a verdict whose detail is every line
# part of the output matching the extended regex DETAIL, joined by "; ". Status 1 (and one FAIL)
# when the program was not built; 2 when it prints "PROGRAM: skipped" (it cannot run on this
# machine: one INFO line, the other modes are not run); else 0.
in_modes() {
  local program=$1 tmo=$2 detail=$3 mode tag rc log
  shift 3
  have "$program" || {
    fail "$program" "not built"
    return 1
  }
  for mode in "$@"; do
    tag="$program-$(mode_tag "$mode")"
    run "$tag" "$tmo" "$mode" "$BIN/$program"
    rc=$?
    log="$LOGS/$tag.log"
    if [ $rc = 0 ] && grep -q "^$program: skipped" "$log"; then
      info "$program: $(grep -o 'skipped.*' "$log" | head -1): not run"
      return 2
    fi
    [ "$mode" = raw ] || preload_check "$tag" $rc "$log"
    verdict "$tag" $rc "$log" "$(grep -oE "$detail" "$log" | paste -sd ';' | sed 's/;/; /g')"
  done
  return 0
}

# The largest allocation log of log_run NAME (a helper process may leave small ones).
largest_log() {
  ls -S "$ALOGS/$1"-*.jsonl 2>/dev/null | head -n 1
}

# ---------------------------------------------------------------------------------------------

build_all() {
  mkdir -p "$BIN" "$LOGS" || return 1
  local stubs=""
  for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs" "$CUDA_HOME/targets/sbsa-linux/lib/stubs"; do
    if [ -e "$d/libcuda.so" ]; then
      stubs=$d
      break
    fi
  done
  local -a lcuda=(-lcuda)
  [ -n "$stubs" ] && lcuda=(-L"$stubs" -lcuda)
  local -a common=(-O2 -std=c++17 -arch="$ARCH" -Xcompiler -pthread)
  local -a names=() pids=()
  b() {
    local name=$1 src=$2
    shift 2
    "$NVCC" "${common[@]}" -o "$BIN/$name" "$HERE/$src" "$@" -ldl >"$LOGS/build-$name.log" 2>&1 &
    names+=("$name")
    pids+=($!)
  }
  b alloc_basic_static alloc_basic.cu
  b alloc_basic_shared alloc_basic.cu -cudart=shared -Xlinker -rpath -Xlinker "$CUDA_HOME/lib64"
  b alloc_basic_ptds alloc_basic.cu --default-stream per-thread
  b driver_api driver_api.cpp -cudart=none "${lcuda[@]}"
  b contexts contexts.cpp -cudart=none "${lcuda[@]}"
  b threads threads.cu
  b cross_stream cross_stream.cu
  b cross_stream_ptds cross_stream.cu --default-stream per-thread
  b late_stream late_stream.cu
  b fence_shortcuts fence_shortcuts.cu
  b fence_shortcuts_ptds fence_shortcuts.cu --default-stream per-thread
  b errors errors.cu "${lcuda[@]}"
  b libraries libraries.cu -lcublas -lcufft -Xlinker -rpath -Xlinker "$CUDA_HOME/lib64"
  b other_allocs other_allocs.cu
  b two_devices two_devices.cu
  b reset_memory reset_memory.cu
  b ipc_check ipc_check.cu
  b odd_uses odd_uses.cu "${lcuda[@]}"
  local i rc
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    rc=$?
    if [ "$rc" = 0 ]; then
      pass "build-${names[$i]}"
    else
      fail "build-${names[$i]}" "nvcc exit $rc: $(head -c 600 "$LOGS/build-${names[$i]}.log" | tr '\n' ' ')"
    fi
  done
}

have() { [ -x "$BIN/$1" ]; }

# none_run NAME TIMEOUT CASES WHY CMD...: CMD under reuse_fence:none, whose data loss (exit 3,
# "old data CORRUPTED" lines) is reported as EXPECTED-UNSAFE, not failed.
none_run() {
  local name=$1 tmo=$2 cases=$3 why=$4 rc log
  shift 4
  run "$name" "$tmo" shim:reuse_fence:none "$@"
  rc=$?
  log="$LOGS/$name.log"
  preload_check "$name" $rc "$log"
  if [ $rc = 3 ]; then
    N_UNSAFE=$((N_UNSAFE + 1))
    echo "EXPECTED-UNSAFE $name: $(grep -c 'old data CORRUPTED' "$log") of $cases cases lost the old data ($why)"
  else
    verdict "$name" $rc "$log" "reuse_fence:none: old data survived in all $cases cases"
  fi
}

test_cross_stream() {
  local bin rc log fast
  for bin in cross_stream cross_stream_ptds; do
    have $bin || { fail "$bin" "not built"; continue; }
    # auto (explicit and default) and sync must be safe; auto must also free fast.
    for mode in shim:reuse_fence:auto shim shim:reuse_fence:sync; do
      local tag=${mode#shim}
      tag=${tag#:reuse_fence:}
      [ -z "$tag" ] && tag=default
      local -a args=()
      [ "$tag" = auto ] || [ "$tag" = default ] && args=(--expect-fast-free)
      run "$bin-$tag" 60 "$mode" "$BIN/$bin" "${args[@]}"
      rc=$?
      log="$LOGS/$bin-$tag.log"
      preload_check "$bin-$tag" $rc "$log"
      fast=$(awk '{ for (i = 1; i < NF; i++) if ($i == "free") { v = $(i + 1) + 0; if (v > m) m = v } } END { printf "%.3f", m }' "$log")
      verdict "$bin-$tag" $rc "$log" "$(grep -o 'new==X in [0-9]*' "$log" | head -1) of 12 cases, old data survived in all, slowest cudaFree $fast ms"
    done
    # No non-blocking stream in the process: auto may skip its barrier, and must stay safe.
    run "$bin-blocking-only" 60 shim "$BIN/$bin" --blocking-only --expect-fast-free
    rc=$?
    log="$LOGS/$bin-blocking-only.log"
    preload_check "$bin-blocking-only" $rc "$log"
    verdict "$bin-blocking-only" $rc "$log" "blocking and per-thread streams only: $(grep -o 'new==X in [0-9]*' "$log" | head -1) of 8 cases, old data survived in all"
    # none may be unsafe: data loss is reported, not failed.
    none_run "$bin-none" 60 12 "reuse_fence:none is documented as unsafe" "$BIN/$bin"
    # Without the shim: the real cudaFree waits for the kernel.
    run "$bin-raw" 60 raw "$BIN/$bin"
    rc=$?
    log="$LOGS/$bin-raw.log"
    fast=$(awk '{ for (i = 1; i < NF; i++) if ($i == "free") { v = $(i + 1) + 0; if (m == "" || v < m) m = v } } END { printf "%.1f", m }' "$log")
    verdict "$bin-raw" $rc "$log" "without the shim (fastest cudaFree $fast ms: the driver waits)"
  done
}

# The shortcuts of reuse_fence:auto (fence_shortcuts.cu): a block whose last work was joined into
# the legacy stream, or ran on the legacy or a blocking stream while an idle non-blocking stream
# exists, is reused at once and stays safe for new work on any stream; unjoined work is waited
# for. reuse_fence:none shows the cases can fail.
test_fence_shortcuts() {
  local bin rc log
  for bin in fence_shortcuts fence_shortcuts_ptds; do
    have $bin || { fail "$bin" "not built"; continue; }
    run "$bin" 90 shim "$BIN/$bin" --expect-reuse
    rc=$?
    log="$LOGS/$bin.log"
    preload_check "$bin" $rc "$log"
    verdict "$bin" $rc "$log" "$(grep -o 'new==X in [0-9]*' "$log" | head -1) of 32 cases (24 shortcut cases reused X), old data survived in all"
    none_run "$bin-none" 90 32 "the hazards are real" "$BIN/$bin"
    run "$bin-raw" 120 raw "$BIN/$bin"
    rc=$?
    verdict "$bin-raw" $rc "$LOGS/$bin-raw.log" "without the shim"
  done
}

# A block freed while a legacy-stream kernel still reads it, handed out again and written on a
# stream made after the free (non-blocking), or on the per-thread default stream (control).
test_late_stream() {
  have late_stream || { fail late_stream "not built"; return; }
  local size mode kind tag rc log
  for size in 4096 67108864; do
    for kind in nonblocking per-thread; do
      for mode in shim shim:thread_cache:always shim:reuse_fence:none raw; do
        tag="late_stream-$size-$kind-$(mode_tag "$mode")"
        local -a args=(--size "$size")
        [ "$kind" = per-thread ] && args+=(--per-thread)
        # The pool must hand X out again for the case to mean anything. Not with thread caches:
        # the new non-blocking stream ends their keeping, and X goes back to the pool fenced.
        [ "$mode" = shim ] || [ "$mode" = shim:reuse_fence:none ] && args+=(--expect-reuse)
        run "$tag" 60 "$mode" "$BIN/late_stream" "${args[@]}"
        rc=$?
        log="$LOGS/$tag.log"
        [ "$mode" = raw ] || preload_check "$tag" $rc "$log"
        if [ $rc = 3 ] && [ "$mode" = shim:reuse_fence:none ]; then
          N_UNSAFE=$((N_UNSAFE + 1))
          echo "EXPECTED-UNSAFE $tag: $(grep -o 'late_stream: size.*' "$log" | head -n 1)"
        else
          verdict "$tag" $rc "$log" "$(grep -o 'late_stream: size.*' "$log" | head -n 1)"
        fi
      done
    done
  done
}

test_alloc_basic() {
  local v rc log c
  for v in static shared ptds; do
    have alloc_basic_$v || { fail "alloc_basic_$v" "not built"; continue; }
    run "alloc_basic_$v-shim" 120 shim "$BIN/alloc_basic_$v" 10000
    rc=$?
    log="$LOGS/alloc_basic_$v-shim.log"
    preload_check "alloc_basic_$v-shim" $rc "$log"
    verdict "alloc_basic_$v-shim" $rc "$log" "10000 checked pairs per size; bare pairs: $(bare_ns "$log")"
    c=$(sed -n 's/^cached: //p' "$log" | head -1)
    case $c in
      yes*) pass "alloc_basic_$v-cached" "NVML: $(grep '^NVML used' "$log" | sed 's/.*(//; s/)//')" ;;
      no*) fail "alloc_basic_$v-cached" "device memory went back to the driver after the frees: the shim did not serve these allocations ($(grep '^NVML used' "$log"))" ;;
      *) [ $rc = 125 ] || info "alloc_basic_$v-cached: not measured (${c:-no output})" ;;
    esac
    run "alloc_basic_$v-raw" 120 raw "$BIN/alloc_basic_$v" 2000
    rc=$?
    log="$LOGS/alloc_basic_$v-raw.log"
    verdict "alloc_basic_$v-raw" $rc "$log" "2000 pairs per size, no shim; bare pairs: $(bare_ns "$log")"
    grep -q '^cached: yes' "$log" && info "alloc_basic_$v-raw: NVML shows memory held after the frees without the shim (measurement noise?)"
  done
  if have alloc_basic_static; then
    run alloc_basic_static-disable 120 disable "$BIN/alloc_basic_static" 2000
    rc=$?
    log="$LOGS/alloc_basic_static-disable.log"
    preload_check alloc_basic_static-disable $rc "$log"
    verdict alloc_basic_static-disable $rc "$log" "CUDAPOOL_DISABLE=1; bare pairs: $(bare_ns "$log")"
    if grep -q '^cached: yes' "$log"; then
      fail alloc_basic_static-disable-passthrough "memory stays held after the frees with CUDAPOOL_DISABLE=1"
    elif grep -q '^cached: no' "$log"; then
      pass alloc_basic_static-disable-passthrough "nothing cached with CUDAPOOL_DISABLE=1"
    fi
  fi
}

test_driver_api() {
  have driver_api || { fail driver_api "not built"; return; }
  local rc log c
  run driver_api-shim 120 shim "$BIN/driver_api" 10000
  rc=$?
  log="$LOGS/driver_api-shim.log"
  preload_check driver_api-shim $rc "$log"
  verdict driver_api-shim $rc "$log" "10000 checked pairs per size; bare pairs: $(bare_ns "$log")"
  c=$(sed -n 's/^cached: //p' "$log" | head -1)
  case $c in
    yes*) pass driver_api-cached "NVML: $(grep '^NVML used' "$log" | sed 's/.*(//; s/)//')" ;;
    no*) fail driver_api-cached "device memory went back to the driver: cuMemAlloc/cuMemFree were not served by the shim" ;;
    *) [ $rc = 125 ] || info "driver_api-cached: not measured (${c:-no output})" ;;
  esac
  run driver_api-raw 120 raw "$BIN/driver_api" 2000
  rc=$?
  log="$LOGS/driver_api-raw.log"
  verdict driver_api-raw $rc "$log" "no shim; bare pairs: $(bare_ns "$log")"
}

# Contexts the program makes itself (driver API): two beside the primary one, destroyed with
# blocks live and cached, a block of a destroyed context freed, a new context, then (under the
# shim's defaults and with expandable segments) 270 contexts one after another, more than the
# shim's 256 pool slots; about 180 ms each; and 270 cudaDeviceReset calls in a row (reset_memory). Not 256 contexts alive at once: an H200 holds about
# 100 (measured: cuCtxCreate ran out of memory at the 101st). Checked by data; the driver's answers
# must read the same with the shim.
test_contexts() {
  have contexts || { fail contexts "not built"; return; }
  local detail='contexts: [0-9]+ failed checks|INFO cycles .*|INFO alive .*|INFO memory_back .*'
  local mode tag rc rc_raw args log raw="$LOGS/contexts-raw.log"
  for mode in raw shim shim:expandable_segments:True shim:thread_cache:always shim:reuse_fence:sync; do
    tag=contexts-$(mode_tag "$mode")
    case $mode in
      shim | shim:expandable*) args=(270 0) ;;
      *) args=(20 0 500) ;;
    esac
    log="$LOGS/$tag.log"
    checked_run "$tag" 240 "$mode" "" "$BIN/contexts" "${args[@]}"
    rc=$?
    [ "$mode" = raw ] && rc_raw=$rc
    [ $rc = 125 ] && continue
    info "$tag: $(grep -oE "$detail" "$log" | paste -sd ';' | sed 's/;/; /g')"
    [ "$mode" = raw ] || [ "$rc_raw" = 125 ] || same_results "$raw" "$log" "$tag-same"
  done
  # cudart's cudaDeviceReset (a path no hook sees) 270 times, each bringing a new context.
  have reset_memory || { fail reset_memory "not built"; return; }
  for mode in shim shim:expandable_segments:True; do
    tag=reset_memory-270-$(mode_tag "$mode")
    checked_run "$tag" 180 "$mode" "" "$BIN/reset_memory" 270
    info "$tag: $(grep -oE 'reset_memory: [0-9]+ resets.*' "$LOGS/$tag.log")"
  done
}

test_threads() {
  have threads || { fail threads "not built"; return; }
  local rc log
  for mode in shim shim:reuse_fence:sync; do
    local tag=default
    [ "$mode" = shim ] || tag=sync
    run "threads-$tag" 150 "$mode" "$BIN/threads" 3000
    rc=$?
    log="$LOGS/threads-$tag.log"
    preload_check "threads-$tag" $rc "$log"
    verdict "threads-$tag" $rc "$log" "$(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
  done
  run threads-none 150 shim:reuse_fence:none "$BIN/threads" 3000
  rc=$?
  log="$LOGS/threads-none.log"
  preload_check threads-none $rc "$log"
  if [ $rc = 1 ] && grep -qE '^ERROR thread [0-9]+: [0-9]+ bad words' "$log" &&
    ! grep -qE 'CUDA error|overlaps a live block|null pointer' "$log"; then
    N_UNSAFE=$((N_UNSAFE + 1))
    echo "EXPECTED-UNSAFE threads-none: blocks were reused before their last kernel ran ($(grep -o 'bad words [0-9]*' "$log" | tail -n 1))"
  else
    verdict threads-none $rc "$log" "reuse_fence:none: no data lost"
  fi
  # Thread caches forced on: with streams beyond the legacy one they stop caching (fences needed);
  # with the legacy stream only they keep blocks, and the data must stay intact.
  run threads-tc 150 shim:thread_cache:always "$BIN/threads" 3000
  rc=$?
  log="$LOGS/threads-tc.log"
  preload_check threads-tc $rc "$log"
  verdict threads-tc $rc "$log" "thread_cache:always, mixed streams: $(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
  for mode in shim:thread_cache:always shim:thread_cache:never; do
    local tag=legacy-${mode#shim:thread_cache:}
    run "threads-$tag" 150 "$mode" "$BIN/threads" 3000 --legacy-only
    rc=$?
    log="$LOGS/threads-$tag.log"
    preload_check "threads-$tag" $rc "$log"
    verdict "threads-$tag" $rc "$log" "${mode#shim:}, legacy stream only: $(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
  done
  run threads-raw 150 raw "$BIN/threads" 400
  rc=$?
  log="$LOGS/threads-raw.log"
  verdict threads-raw $rc "$log" "no shim, 400 ops per thread; $(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
}

# Every RESULT line of the run without the shim ($1) must read the same in the run with it ($2);
# RESULT-SOFT lines may differ (reported, not failed). Test names: $3-<key>.
same_results() {
  local raw=$1 shim=$2 prefix=$3 kind key rest other n=0
  while read -r kind key rest; do
    n=$((n + 1))
    other=$(awk -v k="$kind" -v key="$key" '$1 == k && $2 == key { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }' "$shim")
    if [ "$rest" = "$other" ]; then
      pass "$prefix-$key" "$rest"
    elif [ "$kind" = RESULT-SOFT ]; then
      info "$prefix-$key: differs, not a failure: without the shim '$rest', with it '${other:-(missing)}'"
    else
      fail "$prefix-$key" "without the shim '$rest', with it '${other:-(missing)}'"
    fi
  done < <(grep -E '^RESULT(-SOFT)? ' "$raw")
  [ $n -gt 0 ] || fail "$prefix" "no RESULT lines from the run without the shim"
}

test_errors() {
  have errors || { fail errors "not built"; return; }
  local rc_raw rc_shim rc_tc raw="$LOGS/errors-raw.log" shim="$LOGS/errors-shim.log"
  local tc="$LOGS/errors-tc.log"
  checked_run errors-raw 180 raw "every check passes without the shim" "$BIN/errors"
  rc_raw=$?
  checked_run errors-shim 180 shim "every check passes under the shim" "$BIN/errors"
  rc_shim=$?
  # The same with thread caches forced on (the program uses the legacy stream only until its
  # graph and fork cases).
  checked_run errors-tc 180 shim:thread_cache:always "every check passes under the shim with thread_cache:always" \
    "$BIN/errors"
  rc_tc=$?
  if [ $rc_raw != 125 ]; then
    [ $rc_shim = 125 ] || same_results "$raw" "$shim" errors-same
    [ $rc_tc = 125 ] || same_results "$raw" "$tc" errors-tc-same
  fi
  # The device filled with 4 GiB chunks: the shim explains the out-of-memory it answered.
  if [ $rc_shim != 125 ]; then
    if grep -q 'cudapool: out of memory on device 0: tried to allocate 4.00 GiB' "$shim" &&
      grep -q 'cudapool:   why: ' "$shim"; then
      pass errors-oom-explained "$(grep -m1 'cudapool:   why: ' "$shim" | cut -c1-160)"
    else
      fail errors-oom-explained "no explanation of the 4 GiB out-of-memory in $shim"
    fi
  fi
  # Legal but unusual uses (no current context, cudaFreeAsync of a cudaMalloc block, relaxed
  # capture, a host function, a freed pointer's range and attributes, 200000 live blocks): the
  # same answers as without the shim.
  if have odd_uses; then
    local m tag
    for m in raw shim shim:thread_cache:always shim:expandable_segments:True; do
      tag=odd_uses-$(mode_tag "$m")
      checked_run "$tag" 120 "$m" "every check passes" "$BIN/odd_uses"
      [ $? = 125 ] || [ "$m" = raw ] || same_results "$LOGS/odd_uses-raw.log" "$LOGS/$tag.log" "$tag-same"
    done
  else
    fail odd_uses "not built"
  fi
  # IPC: an export that succeeds must show the importing process the exporter's bytes; under the
  # shim a block inside a segment (the second of two 512 B blocks) must be refused.
  in_modes ipc_check 120 'ipc_check: [0-9]+ of 3 exported.*' raw shim shim:expandable_segments:True ||
    return
  if grep -q 'second_512B: export refused' "$LOGS/ipc_check-default.log"; then
    pass ipc_check-refused "under the shim the block inside a segment was not exported"
  else
    fail ipc_check-refused "under the shim the block inside a segment was exported: $(grep 'second_512B' "$LOGS/ipc_check-default.log")"
  fi
}

# cuBLAS and cuFFT (each with its own static cudart) and Thrust and CUB (the program's cudart):
# results checked against the CPU under the shim (default, sync) and without it; then a logged run
# whose log must hold more alloc events than the program's own cudaMalloc calls (the libraries'
# workspace allocations reached the pool).
test_libraries() {
  in_modes libraries 180 '[0-9]* rounds of .*' raw shim shim:reuse_fence:sync || return
  logs_ready libraries-log || return
  log_run libraries 1 "$BIN/libraries" 10
  local f direct allocs
  f=$(largest_log libraries)
  direct=$(grep -o 'direct cudaMalloc calls [0-9]*' "$LOGS/log-libraries.log" | grep -o '[0-9]*$')
  if [ -n "$f" ] && [ -n "$direct" ]; then
    allocs=$(grep -c '"action":"alloc"' "$f")
    if [ "$allocs" -gt "$direct" ]; then
      pass libraries-pooled "$allocs alloc events in the log, $direct of them the program's own cudaMalloc calls: the libraries' allocations reached the pool ($(action_counts "$f"))"
    else
      fail libraries-pooled "$allocs alloc events in the log, not more than the program's own $direct cudaMalloc calls"
    fi
  else
    fail libraries-pooled "no log or no count of direct cudaMalloc calls"
  fi
}

# The allocation APIs the shim passes through (managed, pitched, 3D, host, stream-ordered,
# arrays) around live pooled blocks: data checked under the shim and without it; the log must show
# each kind passed through and every cudaFree of a non-pooled pointer forwarded.
test_other_allocs() {
  in_modes other_allocs 120 '[0-9]* rounds of .*' \
    raw shim shim:reuse_fence:sync shim:thread_cache:always || return
  logs_ready other_allocs-log || return
  log_run other_allocs 10 "$BIN/other_allocs" 5
  local f action missing=""
  f=$(largest_log other_allocs)
  [ -n "$f" ] || return
  for action in alloc_managed alloc_pitch alloc_async alloc_host free_host free_unowned; do
    grep -q "\"action\":\"$action\"" "$f" || missing+="$action "
  done
  # 5 rounds: cudaMallocAsync twice and cudaMallocFromPoolAsync once each.
  local async_allocs
  async_allocs=$(grep -c '"action":"alloc_async"' "$f")
  [ "$async_allocs" = 15 ] || missing+="(alloc_async: $async_allocs, want 15) "
  if [ -z "$missing" ]; then
    pass other_allocs-logged "$(action_counts "$f")"
  else
    fail other_allocs-logged "no $missing event in $f"
  fi
}

# Two GPUs: a pool per device, frees routed by pointer, peer copies, per-device cudaMemGetInfo,
# a thread per device, one device reset. Needs two devices; with one, one INFO line.
test_two_devices() {
  in_modes two_devices 120 'device 1 block freed from device 0.*|after freeing 24 MiB.*' \
    raw shim shim:reuse_fence:sync shim:thread_cache:always || return  # not built, or one GPU
  logs_ready two_devices-log || return
  log_run two_devices 100 "$BIN/two_devices"
  local f devs
  f=$(largest_log two_devices)
  [ -n "$f" ] || return
  devs=$(grep '"action":"alloc"' "$f" | grep -o '"dev":[0-9]*' | sort -u | tr '\n' ' ')
  if [ "$(echo "$devs" | wc -w)" -ge 2 ]; then
    pass two_devices-logged "alloc events on ${devs% }"
  else
    fail two_devices-logged "alloc events on ${devs:-no device} only"
  fi
}

py_has() { "$PY" -c "import $1" >/dev/null 2>&1; }

# same_losses CHECK REFERENCE LOG: PASS when LOG holds the 50 losses and the parameter sum of the
# reference run (without the shim) bit for bit; FAIL when they differ, or when the reference
# printed no 50 losses to compare.
same_losses() {
  local name=$1 a=$2 b=$3
  if [ "$(grep -c '^loss ' "$a" 2>/dev/null)" != 50 ] || ! grep -q '^params ' "$a"; then
    fail "$name" "the run without the shim printed no 50 losses to compare"
  elif cmp -s <(grep -E '^(loss|params) ' "$a") <(grep -E '^(loss|params) ' "$b"); then
    pass "$name" "50 losses and the parameter sum bit-identical with and without the shim (last $(grep '^loss 49 ' "$a" | cut -d' ' -f3))"
  else
    fail "$name" "losses differ: $(diff <(grep -E '^(loss|params) ' "$a") <(grep -E '^(loss|params) ' "$b") | head -n 4 | tr '\n' ' ')"
  fi
}

test_torch() {
  if ! py_has torch; then
    fail torch "$PY cannot import torch"
    return
  fi
  local rc a
  export CUBLAS_WORKSPACE_CONFIG=:4096:8
  checked_run torch_train-raw-nocache 180 raw "no shim, PyTorch cache off" \
    env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_train.py"
  checked_run torch_train-shim-nocache 180 shim "shim, PyTorch cache off" \
    env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_train.py"
  a="$LOGS/torch_train-raw-nocache.log"
  same_losses torch_train-bitwise "$a" "$LOGS/torch_train-shim-nocache.log"
  # PyTorch's own cache on top of the shim must work too; the losses are compared for information.
  checked_run torch_train-shim-cache 180 shim "shim under PyTorch's own caching allocator" \
    "$PY" "$HERE/torch_train.py"
  if cmp -s <(grep -E '^(loss|params) ' "$a") <(grep -E '^(loss|params) ' "$LOGS/torch_train-shim-cache.log"); then
    info "torch_train: the run with PyTorch's cache on gives the same bits"
  else
    info "torch_train: the run with PyTorch's cache on gives other bits (not a failure)"
  fi

  checked_run torch_graph-raw-cache 180 raw "plain PyTorch (reference)" "$PY" "$HERE/torch_graph.py"
  checked_run torch_graph-shim-cache 180 shim "PyTorch cache on, shim below: captured, 10 replays correct" \
    "$PY" "$HERE/torch_graph.py"
  local rc_raw
  run torch_graph-raw-nocache 180 raw env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_graph.py"
  rc_raw=$?
  info "torch_graph-raw-nocache: exit $rc_raw ($(grep -m1 -E 'capture refused|torch_graph: (ok|FAILED)' "$LOGS/torch_graph-raw-nocache.log" | cut -c1-200))"
  run torch_graph-shim-nocache 180 shim env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$PY" "$HERE/torch_graph.py"
  rc=$?
  preload_check torch_graph-shim-nocache $rc "$LOGS/torch_graph-shim-nocache.log"
  case $rc in
    0) pass torch_graph-shim-nocache "PyTorch cache off, shim: captured, 10 replays correct (without the shim: exit $rc_raw)" ;;
    3) pass torch_graph-shim-nocache "PyTorch cache off, shim: capture refused with an exception, no crash, CUDA still works (without the shim: exit $rc_raw): $(grep -m1 'capture refused' "$LOGS/torch_graph-shim-nocache.log" | cut -c1-200)" ;;
    2)
      if [ "$rc_raw" = 2 ]; then
        pass torch_graph-shim-nocache "PyTorch cache off, shim: capture refused and CUDA unusable afterwards, as without the shim (no crash)"
      else
        verdict torch_graph-shim-nocache $rc "$LOGS/torch_graph-shim-nocache.log"
      fi
      ;;
    *) verdict torch_graph-shim-nocache $rc "$LOGS/torch_graph-shim-nocache.log" ;;
  esac
}

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
}

# py_check NAME MODULE TIMEOUT WHAT SCRIPT [VAR=VALUE...]: the Python check SCRIPT (exit 0 when
# every check passed) under the shim and without it, with the variables set: checks NAME-shim and
# NAME-raw; one FAIL when MODULE cannot be imported.
py_check() {
  local name=$1 module=$2 tmo=$3 what=$4 script=$5
  shift 5
  if ! py_has "$module"; then
    fail "$module" "$PY cannot import $module"
    return
  fi
  checked_run "$name-shim" "$tmo" shim "$what, shim" env "$@" "$PY" "$HERE/$script"
  checked_run "$name-raw" "$tmo" raw "$what, no shim" env "$@" "$PY" "$HERE/$script"
}

test_cupy() { py_check cupy_check cupy 180 "CuPy pools off" cupy_check.py; }

# Numba finds the driver on its own (not through cudart) and allocates with cuMemAlloc.
test_numba() { py_check numba_check numba 240 "Numba device arrays" numba_check.py; }

test_jax() {
  py_check jax_check jax 240 "XLA platform allocator" jax_check.py \
    XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false
}

# The allocation log on real programs: each runs under the shim with CUDAPOOL_LOG; every file it
# leaves must pass tests/log_check.py (every line, field and type, the summary line) and replay
# through cudapool-replay to the summary line's statistics exactly. The alloc counts show which
# frameworks' allocations reach the pool (JAX's through XLA's platform allocator included).
# log_run NAME MIN_ALLOCS CMD...: runs CMD under the shim with its log in $ALOGS/NAME-%p.jsonl.
log_run() {
  local name=$1 min=$2
  shift 2
  local rc f out ok=1 n=0 allocs=""
  rm -f "$ALOGS/$name"-*.jsonl
  run "log-$name" 240 shim env CUDAPOOL_LOG="$ALOGS/$name-%p.jsonl" "$@"
  rc=$?
  preload_check "log-$name" $rc "$LOGS/log-$name.log"
  if [ $rc != 0 ]; then
    verdict "log-$name" $rc "$LOGS/log-$name.log"
    return
  fi
  for f in "$ALOGS/$name"-*.jsonl; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    # A helper process (a compiler, a probe) may log a few events; the main one must reach MIN.
    if out=$("$PY" "$HERE/../log_check.py" --replay "$REPLAY" "$f" 2>&1); then
      allocs+="${f##*/}: $out; "
      echo "    | log_check ${f##*/}: $out"
    else
      ok=0
      fail "log-$name-check" "$out"
    fi
  done
  if [ $n = 0 ]; then
    fail "log-$name" "no log file was written ($ALOGS/$name-*.jsonl)"
    return
  fi
  [ $ok = 1 ] || return
  local best
  best=$(for f in "$ALOGS/$name"-*.jsonl; do grep -c '"action":"alloc"' "$f"; done | sort -n | tail -n 1)
  if [ "${best:-0}" -ge "$min" ]; then
    pass "log-$name" "$n log file(s), every line checked, replay equal to the summary; ${allocs%; }"
  else
    fail "log-$name" "at most $best alloc events in a log, want at least $min: the allocations did not reach the pool"
  fi
}

test_logs() {
  logs_ready logs || return
  have alloc_basic_static && log_run alloc_basic_static 1000 "$BIN/alloc_basic_static" 500
  have alloc_basic_shared && log_run alloc_basic_shared 1000 "$BIN/alloc_basic_shared" 500
  have driver_api && log_run driver_api 1000 "$BIN/driver_api" 500
  # Several contexts on one device, three left to the exit: the events carry "ctx", the replay
  # runs a pool per context, and the report's values agree with the summary.
  if have contexts; then
    log_run contexts 500 "$BIN/contexts" 10 0 300 1
    local cf out
    cf=$(largest_log contexts)
    if [ -n "$cf" ] && grep -q '"ctx":2' "$cf"; then
      if out=$(PYTHONPATH="$REPO/scripts" "$PY" -m cudapool_analysis report --json "$cf" | "$PY" -c '
import json, sys
rep = json.load(sys.stdin)
bad = [n for n in rep["notes"] if "in the summary" in n]
print("report: %d problems, %d disagreements" % (rep["problem_count"], len(bad)))
sys.exit(1 if rep["problem_count"] or bad else 0)' 2>&1); then
        pass log-contexts-report "$out"
      else
        fail log-contexts-report "$out"
      fi
    elif [ -n "$cf" ]; then
      fail log-contexts-ctx "no event of a third context (\"ctx\":2) in $cf"
    fi
  fi
  have threads && log_run threads 1000 "$BIN/threads" 300
  # Frees behind reuse fences: the replay must hold them as the shim did.
  have cross_stream && log_run cross_stream 10 "$BIN/cross_stream" --expect-fast-free
  if py_has torch; then
    local f rc out
    log_run torch_train 1000 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_BACKTRACE=8 "$PY" "$HERE/torch_train.py"
    f=$(ls "$ALOGS"/torch_train-*.jsonl 2>/dev/null | head -n 1)
    if [ -n "$f" ] && grep -q '"backtrace":\["0x' "$f"; then
      pass log-torch_train-backtraces "alloc events carry return addresses with CUDAPOOL_BACKTRACE=8"
    elif [ -n "$f" ]; then
      fail log-torch_train-backtraces "no backtrace field in $f"
    fi
    # os._exit runs no atexit handler: the shim's _exit must still put every queued event in
    # the file (no summary line, as after a signal).
    rm -f "$ALOGS"/os_exit-*.jsonl
    run log-os_exit 120 shim env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_LOG="$ALOGS/os_exit-%p.jsonl" \
      "$PY" -c 'import os, torch
for i in range(20000): torch.empty(1 << 18, device="cuda").fill_(1.0)
torch.cuda.synchronize(); print("os_exit: 20000 tensors, then os._exit(3)", flush=True); os._exit(3)'
    rc=$?
    f=$(largest_log os_exit)
    if [ $rc != 3 ]; then
      verdict log-os_exit "$([ $rc = 0 ] && echo 1 || echo $rc)" "$LOGS/log-os_exit.log"
    elif [ -z "$f" ]; then
      fail log-os_exit "no log file was written"
    elif out=$("$PY" "$HERE/../log_check.py" --no-summary --min-allocs 20000 "$f" 2>&1); then
      pass log-os_exit "status 3 kept, every queued event in the file: $out"
    else
      fail log-os_exit "$out"
    fi
    run summary-torch_train 180 shim env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAPOOL_SUMMARY=stderr "$PY" "$HERE/torch_train.py"
    rc=$?
    if [ $rc = 0 ] && grep -q 'allocated_bytes\|Allocated memory' "$LOGS/summary-torch_train.log"; then
      pass summary-torch_train "CUDAPOOL_SUMMARY=stderr printed the table at exit"
    else
      verdict summary-torch_train "$([ $rc = 0 ] && echo 1 || echo $rc)" "$LOGS/summary-torch_train.log"
    fi
  fi
  py_has cupy && log_run cupy 1000 "$PY" "$HERE/cupy_check.py"
  py_has numba && log_run numba 1000 "$PY" "$HERE/numba_check.py"
  if py_has jax; then
    # XLA's platform allocator uses the virtual memory API (cuMemCreate/cuMemMap): its buffers are
    # passed through and logged, not pooled; the pool serves the cudart allocations of its
    # libraries (cuBLAS, cuDNN). Both must be in the log.
    log_run jax 1 env XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" "$HERE/jax_check.py"
    local jf counts
    jf=$(largest_log jax)
    if [ -n "$jf" ]; then
      counts=$(action_counts "$jf")
      if [ "$(grep -c '"action":"vmm_map"' "$jf")" -ge 20 ]; then
        pass log-jax-seen "XLA's buffers seen through the VMM API (passed through, not pooled): $counts"
      else
        fail log-jax-seen "fewer than 20 vmm_map events: JAX's allocations were not seen: $counts"
      fi
    fi
  fi
  if [ -n "${OUT:-}" ]; then
    # A sample for the record: the PyTorch log, compressed.
    f=$(ls "$ALOGS"/torch_train-*.jsonl 2>/dev/null | head -n 1)
    [ -n "$f" ] && gzip -c "$f" >"$OUT/torch_train-log.jsonl.gz"
  fi
}

main() {
  echo "gpu tests: $(date -u +%Y-%m-%dT%H:%M:%SZ) host $(uname -n) repo $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu tests: gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)"
  else
    echo "gpu tests: nvidia-smi not found"
  fi
  echo "gpu tests: shim $SHIM; nvcc $("$NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*' || echo "not found at $NVCC"); $("$PY" --version 2>&1); work $WORK; budget $BUDGET s"
  rm -rf "$LOGS"
  mkdir -p "$BIN" "$LOGS" || {
    fail setup "cannot create $WORK"
    return 1
  }
  if [ ! -f "$SHIM" ]; then
    fail shim-library "$SHIM does not exist (build it, or set CUDAPOOL_LIB)"
    echo "gpu tests: $N_PASS passed, $N_FAIL failed"
    return 1
  fi

  build_all
  local section
  for section in ${GPU_TESTS_ONLY:-cross_stream fence_shortcuts late_stream alloc_basic driver_api contexts threads errors libraries other_allocs two_devices torch conf cupy numba jax logs}; do
    case $section in
      cross_stream | fence_shortcuts | late_stream | alloc_basic | driver_api | contexts | threads | errors | libraries | other_allocs | two_devices | torch | conf | cupy | numba | jax | logs) "test_$section" ;;
      *) fail "GPU_TESTS_ONLY" "no section '$section'" ;;
    esac
  done

  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT/gpu-tests-logs" && cp "$LOGS"/*.log "$OUT/gpu-tests-logs/" 2>/dev/null
  fi
  echo "gpu tests: $N_UNSAFE expected-unsafe results (reuse_fence:none), $((SECONDS - START)) s"
  echo "gpu tests: $N_PASS passed, $N_FAIL failed"
  [ "$N_FAIL" = 0 ]
}

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" || exit 2
  main "$@" 2>&1 | tee "$OUT/gpu-tests.log"
  exit "${PIPESTATUS[0]}"
else
  main "$@"
fi
