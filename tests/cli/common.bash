# SPDX-License-Identifier: Apache-2.0
# tests/cli/common.bash: what the command-line tests of the Python package share (sourced, not a
# test: ctest runs tests/cli/*.sh only): the source and fixture folders, a temporary folder removed
# at exit, the package on PYTHONPATH, and the failure helpers.
src="$CUDAPOOL_SOURCE_DIR"
fx="$src/tests/cli/fixtures"
export PYTHONPATH="$src/scripts"
cudapool() { python3 -m cudapool_analysis "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
has() { grep -qF -- "$1" "$2" || fail "$2: missing: $1"; }
# export_fails RC WHAT OUT ARGS...: `cudapool export ARGS` exits RC with a message on stderr, no
# traceback, and leaves neither OUT nor a temporary file (OUT.tmp, .OUT.*.tmp) behind.
export_fails() {
  local want=$1 what=$2 out=$3 rc=0
  shift 3
  cudapool export "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq "$want" ] || fail "$what: exit $rc, not $want: $(head -c 300 "$tmp/err")"
  [ -s "$tmp/err" ] || fail "$what: no message"
  if grep -q Traceback "$tmp/err"; then fail "$what: a traceback"; fi
  [ ! -e "$out" ] && [ ! -e "$out.tmp" ] || fail "$what: a file left behind"
  no_temporary "$out" || fail "$what: a temporary file left behind"
}
# no_temporary OUT: true when OUT's directory holds no temporary file of OUT (.OUT.XXXXXXXX.tmp,
# outfile.py's) or OUT.tmp
no_temporary() {
  local d b
  d=$(dirname "$1") b=$(basename "$1")
  [ ! -e "$1.tmp" ] || return 1
  [ -d "$d" ] || return 0
  ! find "$d" -maxdepth 1 -name ".$b.*.tmp" | grep -q .
}
