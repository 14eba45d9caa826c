# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/script_harness.sh: sourced by the fakecuda test scripts that run one program
# under the shim with the fake driver. Reads their three arguments (the program, libcudapool.so,
# the directory of the fake libcuda.so.1) into program, shim and fake_dir; makes a scratch
# directory $work, removed at exit (with any program the script left running in the background);
# fail MESSAGE prints a FAIL line and sets status to 1.
set -u
program="$1"
shim="$2"
fake_dir="$3"
work=$(mktemp -d)
trap 'jobs -p | xargs -r kill -KILL 2>/dev/null; rm -rf "$work"' EXIT
status=0
fail() {
  echo "FAIL: $*"
  status=1
}
