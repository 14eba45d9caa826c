#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/soak.sh: the GPU soak of issue 18 (tests/gpu/soak.cu), one process per setting, all at
# once on one GPU (they share it; each runs SOAK_SECONDS, default 300): the shim's default
# (reuse_fence:auto, thread_cache:auto), reuse_fence:sync, reuse_fence:none, thread_cache:always,
# thread_cache:never, expandable_segments:True, idle release (idle_release_ms:20, alone and with
# expandable segments: released memory comes back all the time; and both again with a floor of
# 256 MiB kept, below what the soak holds, so that releases are partial), and the program without
# the shim (the anchor).
# For each: zero corrupted blocks (reuse_fence:none may corrupt: its count is reported, not
# failed), memory flat (nvidia-smi's per-process used memory, sampled every 2 s: the second half
# of the run never above the first half's most by more than 10% + 64 MiB), and, where a log is
# written (thread caches are off under a log, so the thread_cache runs write none), the log
# checked line by line and replayed to its own summary (tests/log_check.py --replay).
# Usage: CUDAPOOL_LIB=.../libcudapool.so CUDAPOOL_REPLAY=.../cudapool-replay [SOAK_SECONDS=300]
#        [SOAK_THREADS=4] [SOAK_ONLY="name ..."] [OUT=dir] tests/gpu/soak.sh
# Prints PASS/FAIL/INFO lines and a summary; exits 1 when any check failed.
# Not here: the GPU suite's sections (run.sh).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
REPLAY="${CUDAPOOL_REPLAY:-$REPO/build/tools/cudapool-replay}"
SECONDS_EACH="${SOAK_SECONDS:-300}"
THREADS="${SOAK_THREADS:-4}"
NVCC="${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}"
WORK="$(mktemp -d /tmp/cudapool-soak.XXXXXX)"
PY="${PYTHON:-python3}"
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
info() { echo "INFO $*"; }

"$NVCC" -O2 -arch="${CUDA_ARCH:-sm_90}" -std=c++17 -o "$WORK/soak" "$HERE/soak.cu" || {
  echo "FAIL build soak.cu"; exit 1; }

# name|conf|log (1: write a log)|preload (1: under the shim)
SETTINGS=(
  "default||1|1"
  "fence-sync|reuse_fence:sync|1|1"
  "fence-none|reuse_fence:none|1|1"
  "cache-always|thread_cache:always|0|1"
  "cache-never|thread_cache:never|0|1"
  "expandable|expandable_segments:True|1|1"
  "idle|idle_release_ms:20|1|1"
  "idle-expandable|expandable_segments:True,idle_release_ms:20|1|1"
  "idle-floor|idle_release_ms:20,idle_release_floor_mb:256|1|1"
  "idle-expandable-floor|expandable_segments:True,idle_release_ms:20,idle_release_floor_mb:256|1|1"
  "idle-handles|expandable_segments:True,expandable_handle_mb:100,idle_release_ms:20,idle_release_floor_mb:256|1|1"
  "no-shim||0|0"
)

# SOAK_ONLY="name ...": only those settings (e.g. "idle idle-expandable").
if [ -n "${SOAK_ONLY:-}" ]; then
  kept=()
  for s in "${SETTINGS[@]}"; do
    [[ " $SOAK_ONLY " == *" ${s%%|*} "* ]] && kept+=("$s")
  done
  SETTINGS=("${kept[@]}")
fi

declare -A PID_OF
for s in "${SETTINGS[@]}"; do
  IFS='|' read -r name conf logged preload <<<"$s"
  env_args=(CUDAPOOL_CONF="$conf")
  [ "$logged" = 1 ] && env_args+=(CUDAPOOL_LOG="$WORK/$name.jsonl")
  [ "$preload" = 1 ] && env_args+=(LD_PRELOAD="$SHIM")
  env "${env_args[@]}" "$WORK/soak" "$SECONDS_EACH" "$THREADS" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PID_OF[$name]=$!
done

# Per-process device memory, every 2 s, while any soak runs.
start=$(date +%s)
(
  while kill -0 "${PID_OF[@]}" 2>/dev/null || pgrep -f "$WORK/soak" >/dev/null; do
    now=$(($(date +%s) - start))
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
      sed "s/^/$now, /"
    echo "$now, total, $(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)"
    sleep 2
  done
) >"$WORK/memory.csv" &
sampler=$!

for s in "${SETTINGS[@]}"; do
  IFS='|' read -r name conf logged preload <<<"$s"
  wait "${PID_OF[$name]}"
  rc=$?
  line=$(grep '^soak:' "$WORK/$name.out")
  blocks=$(sed -n 's/.*corrupted_blocks \([0-9]*\).*/\1/p' <<<"$line")
  info "soak-$name ${conf:-default settings}${preload:+}: rc $rc; $line"
  if [ -z "$line" ] || [ "$rc" -eq 2 ] || [ "$rc" -gt 2 ]; then
    fail "soak-$name did not finish (rc $rc): $(tail -3 "$WORK/$name.err" | tr '\n' ' ')"
  elif [ "$name" = fence-none ]; then
    info "soak-$name corrupted $blocks block(s): reuse_fence:none hands blocks back before the streams' kernels finish (allowed, reported)"
    pass "soak-$name ran to the end; corruption reported: $blocks block(s)"
  elif [ "$blocks" = 0 ]; then
    pass "soak-$name 0 corrupted blocks"
  else
    fail "soak-$name $blocks corrupted block(s)"
  fi
done
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null

# Flat memory: per pid, the second half's most against the first half's most (nvidia-smi may not
# list a container's pids: then the device's total, all soaks together, is what is checked).
names=()
for s in "${SETTINGS[@]}"; do names+=("${s%%|*}"); done
if ! awk -F', *' '$2 != "total"' "$WORK/memory.csv" | grep -q .; then
  info "nvidia-smi lists no per-process memory here: the device's total is checked instead"
  PID_OF[all-soaks]=total
  names=(all-soaks)
fi
for name in "${names[@]}"; do
  verdict=$(awk -F', *' -v pid="${PID_OF[$name]}" -v half=$((SECONDS_EACH / 2)) '
    $2 == pid { if ($1 < half) { if ($3 > a) a = $3 } else { if ($3 > b) b = $3 }; n++ }
    END { if (n == 0) { print "none"; exit }
          printf "%s %d %d\n", (b <= a * 1.10 + 64 ? "flat" : "grew"), a, b }' "$WORK/memory.csv")
  case "$verdict" in
    flat*) pass "soak-$name-memory flat: most used first half ${verdict#flat } MiB (first, second half)" ;;
    grew*) fail "soak-$name-memory grew: most used first half ${verdict#grew } MiB (first, second half)" ;;
    *) fail "soak-$name-memory no nvidia-smi sample for pid ${PID_OF[$name]}" ;;
  esac
done

# Logs: every line checked, replayed to the summary (the logs checked side by side).
declare -A CHECK_OF
for s in "${SETTINGS[@]}"; do
  IFS='|' read -r name conf logged preload <<<"$s"
  [ "$logged" = 1 ] || continue
  "$PY" "$REPO/tests/log_check.py" --replay "$REPLAY" "$WORK/$name.jsonl" >"$WORK/$name.check" 2>&1 &
  CHECK_OF[$name]=$!
done
for s in "${SETTINGS[@]}"; do
  IFS='|' read -r name conf logged preload <<<"$s"
  [ "$logged" = 1 ] || continue
  mib=$(($(stat -c %s "$WORK/$name.jsonl") / 1048576))
  if wait "${CHECK_OF[$name]}"; then
    pass "soak-$name-log $mib MiB; $(tr '\n' ' ' <"$WORK/$name.check")"
  else
    fail "soak-$name-log $mib MiB; $(tr '\n' ' ' <"$WORK/$name.check" | cut -c1-600)"
  fi
done

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$WORK"/*.out "$WORK"/*.err "$WORK"/*.check "$WORK/memory.csv" "$OUT/" 2>/dev/null
fi
rm -rf "$WORK"
echo "soak: $failures failed check(s), ${SECONDS_EACH} s per setting, $THREADS threads each"
[ "$failures" -eq 0 ]
