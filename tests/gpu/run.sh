#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
# fence_shortcuts late_stream alloc_basic driver_api capture contexts threads errors libraries other_allocs two_devices torch conf
# cupy numba jax logs hostile oom_snapshot control_cli), CUDAPOOL_REPLAY (default
# $REPO/build/tools/cudapool-replay: the log checks replay
# every log with it), GPU_TESTS_BUDGET_S (1200: no program starts after this many seconds; those
# left are reported as failed, "skipped: time budget"), GPU_TESTS_CONF_EXTRA (pairs added to the
# conf string of every run under the shim, e.g. "idle_release_ms:20": the suite under a setting of
# yours; checks that expect the defaults' numbers may then fail for that reason). Expected run time on an H200: about 12
# minutes, 3.5 of them the section contexts (run it in parts with GPU_TESTS_ONLY where a call is
# limited to 10 minutes; the default budget covers a whole run).
#
# This file is the entry: the settings above, the sourcing of the rest, main (the order of the
# sections, the summary lines, the exit status). Not the helpers (lib/common.sh), the build
# (lib/build.sh) nor any check: each section is tests/gpu/sections/<name>.sh, defining
# test_<name>. All are found beside this file, whatever the current directory.
# shellcheck source-path=SCRIPTDIR/../..
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

# The helpers, the build and the sections (sourced only: they define functions, and CONFS).
# shellcheck source=tests/gpu/lib/common.sh
source "$HERE/lib/common.sh" || exit 2
# shellcheck source=tests/gpu/lib/build.sh
source "$HERE/lib/build.sh" || exit 2
# shellcheck source=tests/gpu/sections/cross_stream.sh
source "$HERE/sections/cross_stream.sh" || exit 2
# shellcheck source=tests/gpu/sections/fence_shortcuts.sh
source "$HERE/sections/fence_shortcuts.sh" || exit 2
# shellcheck source=tests/gpu/sections/late_stream.sh
source "$HERE/sections/late_stream.sh" || exit 2
# shellcheck source=tests/gpu/sections/alloc_basic.sh
source "$HERE/sections/alloc_basic.sh" || exit 2
# shellcheck source=tests/gpu/sections/driver_api.sh
source "$HERE/sections/driver_api.sh" || exit 2
# shellcheck source=tests/gpu/sections/capture.sh
source "$HERE/sections/capture.sh" || exit 2
# shellcheck source=tests/gpu/sections/contexts.sh
source "$HERE/sections/contexts.sh" || exit 2
# shellcheck source=tests/gpu/sections/threads.sh
source "$HERE/sections/threads.sh" || exit 2
# shellcheck source=tests/gpu/sections/errors.sh
source "$HERE/sections/errors.sh" || exit 2
# shellcheck source=tests/gpu/sections/libraries.sh
source "$HERE/sections/libraries.sh" || exit 2
# shellcheck source=tests/gpu/sections/other_allocs.sh
source "$HERE/sections/other_allocs.sh" || exit 2
# shellcheck source=tests/gpu/sections/two_devices.sh
source "$HERE/sections/two_devices.sh" || exit 2
# shellcheck source=tests/gpu/sections/torch.sh
source "$HERE/sections/torch.sh" || exit 2
# shellcheck source=tests/gpu/sections/conf.sh
source "$HERE/sections/conf.sh" || exit 2
# shellcheck source=tests/gpu/sections/cupy.sh
source "$HERE/sections/cupy.sh" || exit 2
# shellcheck source=tests/gpu/sections/numba.sh
source "$HERE/sections/numba.sh" || exit 2
# shellcheck source=tests/gpu/sections/jax.sh
source "$HERE/sections/jax.sh" || exit 2
# shellcheck source=tests/gpu/sections/logs.sh
source "$HERE/sections/logs.sh" || exit 2
# shellcheck source=tests/gpu/sections/hostile.sh
source "$HERE/sections/hostile.sh" || exit 2
# shellcheck source=tests/gpu/sections/oom_snapshot.sh
source "$HERE/sections/oom_snapshot.sh" || exit 2
# shellcheck source=tests/gpu/sections/control_cli.sh
source "$HERE/sections/control_cli.sh" || exit 2

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
  for section in ${GPU_TESTS_ONLY:-cross_stream fence_shortcuts late_stream alloc_basic driver_api capture contexts threads errors libraries other_allocs two_devices torch conf cupy numba jax logs hostile oom_snapshot control_cli}; do
    case $section in
      cross_stream | fence_shortcuts | late_stream | alloc_basic | driver_api | capture | contexts | threads | errors | libraries | other_allocs | two_devices | torch | conf | cupy | numba | jax | logs | hostile | oom_snapshot | control_cli) "test_$section" ;;
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
