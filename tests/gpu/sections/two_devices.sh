# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/two_devices.sh: the GPU suite's section two_devices: a pool per GPU (described
# below); one INFO line on a machine with one GPU. Sourced by tests/gpu/run.sh (which sets the
# variables and runs test_two_devices when GPU_TESTS_ONLY names two_devices, or by default); not a
# script to run alone, and not where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

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
