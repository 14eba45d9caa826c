#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/cpu_only.sh: programs that never touch CUDA run unchanged under the shim, with no
# driver on the machine: exit 0 and nothing on stderr. Not a driver test (no fake on the path).
# Usage: cpu_only.sh <path of libcudapool.so>
set -u
shim="$1"
status=0

check() {
  local err rc
  err=$(LD_PRELOAD="$shim" "$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne 0 || -n "$err" ]]; then
    echo "FAIL: LD_PRELOAD=$shim $*: exit $rc, stderr: ${err:-<empty>}"
    status=1
  else
    echo "ok: LD_PRELOAD=libcudapool.so $* (exit 0, empty stderr)"
  fi
}

check /bin/true
if command -v python3 >/dev/null 2>&1; then
  check python3 -c 'print(1)'
else
  echo "skip: no python3"
fi
exit $status
