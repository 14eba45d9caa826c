# SPDX-License-Identifier: Apache-2.0
# tests/gpu/lib/build.sh: build_all, which compiles every program of tests/gpu into $BIN with nvcc
# (all at once, one PASS or FAIL line build-NAME each, the compiler's output in
# $LOGS/build-NAME.log). Sourced by tests/gpu/run.sh, whose main calls it before the sections; not
# where any program is run (tests/gpu/sections/) nor the helpers (lib/common.sh).
# shellcheck shell=bash
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
  b capture_rules capture_rules.cpp -cudart=none "${lcuda[@]}"
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
