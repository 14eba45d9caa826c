#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/commands_walk.sh: the front door, command by command: every command of the launcher
# (scripts/cudapool) and every C++ tool answers --help (exit 0, on stdout a usage line naming the
# command as a user types it: `usage: cudapool replay`, `usage: cudapool-cat`), --version (exit 0,
# "cudapool VERSION" on stdout, VERSION the project's), and refuses an unknown option as a usage
# error (exit 2; on stderr "cudapool COMMAND: unknown option ...",
# then a line starting "usage:"). Not here: the Python commands
# (commands_walk_python.sh); the installed launcher (install_package.sh); that version.py agrees
# with CMakeLists.txt (version_agree.sh); what any command does (their own tests).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
build="$CUDAPOOL_BUILD_DIR"
export CUDAPOOL_BUILD_DIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

version=$(sed -n 's/^project(cudapool VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no version in the project() line of CMakeLists.txt"

# walk NAME WANT_USAGE PROGRAM...: PROGRAM --help, --version and --no-such-option as above;
# WANT_USAGE: what the usage line starts with. (cudapool test hands the options it does not know to
# ctest, which judges them: its --no-such-option is not tried, lest it run the suite.)
walk() {
  local name=$1 want=$2 rc
  shift 2
  rc=0; "$@" --help >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] || fail "$name --help: exit $rc: $(head -c 300 "$tmp/err")"
  grep -qF -- "$want" "$tmp/out" || fail "$name --help: no line with '$want' on stdout: $(head -c 300 "$tmp/out")"
  grep -q -- "^$want" "$tmp/out" || fail "$name --help: '$want' does not begin a line: $(head -3 "$tmp/out")"
  rc=0; "$@" -h >"$tmp/out2" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/out2" || fail "$name -h: exit $rc, or not --help's text"
  rc=0; "$@" --version >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] || fail "$name --version: exit $rc: $(head -c 300 "$tmp/err")"
  [ "$(cat "$tmp/out")" = "cudapool $version" ] || fail "$name --version: '$(head -c 200 "$tmp/out")', not 'cudapool $version'"
  [ "$name" != "cudapool test" ] || return 0
  rc=0; "$@" --no-such-option >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  [ $rc -eq 2 ] || fail "$name --no-such-option: exit $rc, not 2: $(head -c 300 "$tmp/err")"
  grep -q '^usage: ' "$tmp/err" || fail "$name --no-such-option: no usage line on stderr: $(head -c 300 "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$name --no-such-option: printed on stdout: $(head -c 200 "$tmp/out")"
}
# usage_error NAME FIRST PROGRAM...: PROGRAM's usage error says FIRST, then its usage line.
usage_error() {
  local name=$1 first=$2 rc=0
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, not 2: $(head -c 300 "$tmp/err")"
  [ "$(head -n 1 "$tmp/err")" = "$first" ] || fail "$name: stderr begins '$(head -n 1 "$tmp/err")', not '$first'"
  sed -n 2p "$tmp/err" | grep -q '^usage: cudapool' || fail "$name: no usage line after the message: $(cat "$tmp/err")"
}

# The C++ tools, run directly.
for t in config replay tune; do
  walk "cudapool-$t" "usage: cudapool $t " "$build/tools/cudapool-$t"
  usage_error "cudapool-$t --bogus" "cudapool $t: unknown option --bogus" "$build/tools/cudapool-$t" --bogus
done
for t in cat analyze vocabulary; do
  walk "cudapool-$t" "usage: cudapool-$t" "$build/tools/cudapool-$t"
  usage_error "cudapool-$t --bogus" "cudapool-$t: unknown option --bogus" "$build/tools/cudapool-$t" --bogus
done
usage_error "cudapool-replay, no LOG" "cudapool replay: no LOG given" "$build/tools/cudapool-replay"
usage_error "cudapool-tune, no LOG" "cudapool tune: no LOG given" "$build/tools/cudapool-tune"
usage_error "cudapool-config a b" "cudapool config: expected at most one argument (quote the conf string)" \
  "$build/tools/cudapool-config" a:1 b:2
usage_error "cudapool-config --log-template" "cudapool config: --log-template needs a value" \
  "$build/tools/cudapool-config" --log-template
usage_error "cudapool-replay --conf" "cudapool replay: --conf needs a value" "$build/tools/cudapool-replay" --conf

# The launcher: its own commands and those it hands to the C++ tools.
L="$src/scripts/cudapool"
walk "cudapool" "usage: cudapool COMMAND" "$L"
for c in demo run setup build test help config replay tune; do
  walk "cudapool $c" "usage: cudapool $c" "$L" "$c"
done
# (test hands what it does not know to ctest: its unknown option is ctest's to judge)
usage_error "cudapool demo --bogus" "cudapool demo: no arguments, not --bogus" "$L" demo --bogus
usage_error "cudapool setup --bogus" "cudapool setup: no arguments, not --bogus" "$L" setup --bogus
usage_error "cudapool build --bogus" "cudapool build: unknown argument --bogus" "$L" build --bogus
usage_error "cudapool help --bogus" "cudapool help: no command '--bogus'" "$L" help --bogus
for c in run config replay tune; do
  usage_error "cudapool $c --bogus" "cudapool $c: unknown option --bogus" "$L" "$c" --bogus
done
usage_error "cudapool frob" "cudapool: unknown command 'frob'" "$L" frob
usage_error "cudapool --bogus" "cudapool: unknown option --bogus" "$L" --bogus
usage_error "cudapool run" "cudapool run: no COMMAND given" "$L" run
usage_error "cudapool run --conf" "cudapool run: --conf needs a value" "$L" run --conf
usage_error "cudapool build --sanitize" "cudapool build: --sanitize needs asan or tsan" "$L" build --sanitize
usage_error "cudapool test --sanitize msan" \
  "cudapool test: --sanitize: 'msan' is not asan (AddressSanitizer and UBSan) or tsan (ThreadSanitizer)" \
  "$L" test --sanitize msan
# help COMMAND is COMMAND --help
for c in run replay; do
  "$L" help "$c" >"$tmp/a" && "$L" "$c" --help >"$tmp/b" && cmp -s "$tmp/a" "$tmp/b" ||
    fail "cudapool help $c is not cudapool $c --help"
done
# A command's --help does not run it: demo replays nothing, build and test build nothing.
"$L" demo --help >"$tmp/out"
if grep -q "^Replaying" "$tmp/out"; then fail "demo --help ran the demo"; fi
CUDAPOOL_BUILD_DIR="$tmp/no-build-here" "$L" build --help >/dev/null
CUDAPOOL_BUILD_DIR="$tmp/no-build-here" "$L" test --help >/dev/null
[ ! -e "$tmp/no-build-here" ] || fail "build --help or test --help built"
# The list of commands names every command; none of its lines says scripts/cudapool's old name.
"$L" help >"$tmp/out"
for c in demo run config replay tune report export stats empty-cache snapshot top setup build test help; do
  grep -qE "^  $c( |$)" "$tmp/out" || fail "cudapool help does not list $c"
done
head -n 1 "$tmp/out" | grep -q '^usage: cudapool COMMAND' || fail "cudapool help: $(head -n 1 "$tmp/out")"
echo "ok: commands_walk"
