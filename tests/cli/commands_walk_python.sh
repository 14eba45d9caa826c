#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/commands_walk_python.sh: the launcher's Python commands (report, export, stats,
# empty-cache, snapshot, top: scripts/cudapool_analysis) at the front door, as commands_walk.sh
# checks the others: through scripts/cudapool, --help and -h (exit 0, a line on stdout beginning
# "usage: cudapool COMMAND"), --version (exit 0, "cudapool VERSION" on stdout, VERSION the
# project's, from cudapool_analysis/version.py), an unknown option (exit 2, a line beginning
# "usage:" on stderr, nothing on stdout). Not here: what the commands do (their own tests).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
export CUDAPOOL_BUILD_DIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
version=$(sed -n 's/^project(cudapool VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
L="$src/scripts/cudapool"
failures=()
for c in report export stats empty-cache snapshot top; do
  rc=0; "$L" "$c" --help >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] && grep -q "^usage: cudapool $c" "$tmp/out" ||
    failures+=("$c --help: exit $rc, stdout begins '$(head -n 1 "$tmp/out")'")
  rc=0; "$L" "$c" -h >"$tmp/out2" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/out2" || failures+=("$c -h: exit $rc, or not --help's text")
  rc=0; "$L" "$c" --version >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = "cudapool $version" ] ||
    failures+=("$c --version: exit $rc, stdout '$(head -c 100 "$tmp/out")', not 'cudapool $version'")
  rc=0; "$L" "$c" --no-such-option >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  [ $rc -eq 2 ] && grep -q '^usage: ' "$tmp/err" && [ ! -s "$tmp/out" ] ||
    failures+=("$c --no-such-option: exit $rc, stderr '$(head -c 200 "$tmp/err")'")
done
[ ${#failures[@]} -eq 0 ] || { printf 'FAIL: %s\n' "${failures[@]}" >&2; exit 1; }
echo "ok: commands_walk_python"
