#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/output_force.sh: `export` and `report --html` keep an existing OUT (issue 29): "cudapool
# export: OUT exists: give --force to replace it" on stderr, exit 1, the file untouched, no
# temporary file left; --force replaces it (mode 0600); a FIFO or /dev/null is written without it.
# And the two commands' own command line: -h/--help (usage on stdout, exit 0), --version
# ("cudapool 0.1.0" from version.py on stdout, exit 0), a usage error ("cudapool report: what is
# wrong" then the usage line naming `cudapool report`, on stderr, exit 2). Not here: the refusals
# of OUT that are usage errors (output_rule.sh), how the file is written (output_private.sh).
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
log="$fx/normal.jsonl"
version=$(python3 -c 'from cudapool_analysis.version import VERSION; print(VERSION)')

# kept WHAT OUT COMMAND ARGS...: exit 1, the message, OUT's bytes as they were, no temporary file
kept() {
  local what=$1 out=$2 command=$3 rc=0
  shift 3
  echo "earlier" >"$out"
  chmod 644 "$out"
  cudapool "$command" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  [ $rc -eq 1 ] || fail "$what: exit $rc, not 1: $(tail -c 300 "$tmp/err")"
  grep -qxF "cudapool $command: $out exists: give --force to replace it" "$tmp/err" ||
    fail "$what: message: $(cat "$tmp/err")"
  echo earlier | cmp -s - "$out" || fail "$what: $out was written over"
  [ "$(stat -c %a "$out")" = 644 ] || fail "$what: $out's mode changed"
  no_temporary "$out" || fail "$what: a temporary file left behind"
  if grep -q Traceback "$tmp/err"; then fail "$what: a traceback"; fi
}
# replaced WHAT OUT COMMAND ARGS...: with --force, exit 0 and a new file of mode 0600
replaced() {
  local what=$1 out=$2 command=$3
  shift 3
  cudapool "$command" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || fail "$what: $(cat "$tmp/err")"
  ! echo earlier | cmp -s - "$out" || fail "$what: $out not replaced"
  [ "$(stat -c %a "$out")" = 600 ] || fail "$what: mode $(stat -c %a "$out")"
  no_temporary "$out" || fail "$what: a temporary file left behind"
}

trace="$tmp/trace.json" snap="$tmp/snap.pickle" page="$tmp/page.html"
kept "export --perfetto over a file" "$trace" export --perfetto "$trace" "$log"
replaced "export --perfetto --force" "$trace" export --perfetto "$trace" --force "$log"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))["traceEvents"]' "$trace"
kept "export --memory-viz over a file" "$snap" export --memory-viz "$snap" "$log"
replaced "export --memory-viz --force" "$snap" export --force --memory-viz "$snap" "$log"
kept "report --html over a file" "$page" report --html "$page" "$log"
replaced "report --html --force" "$page" report --html "$page" --force "$log"
has "<!DOCTYPE html>" "$page"
# a symbolic link at OUT is a name taken; --force replaces the link, not its target
echo target >"$tmp/target"
ln -s "$tmp/target" "$tmp/link.json"
rc=0
cudapool export --perfetto "$tmp/link.json" "$log" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] && has "link.json exists: give --force to replace it" "$tmp/err" ||
  fail "a link at OUT: exit $rc"
cudapool export --perfetto "$tmp/link.json" --force "$log" 2>"$tmp/err" || fail "$(cat "$tmp/err")"
[ ! -L "$tmp/link.json" ] && [ "$(cat "$tmp/target")" = target ] || fail "--force followed the link"
# written as they are, without --force: /dev/null and a FIFO with a reader
cudapool export --perfetto /dev/null "$log" 2>"$tmp/err" || fail "/dev/null: $(cat "$tmp/err")"
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/from-fifo" &
reader=$!
cudapool export --perfetto "$tmp/fifo" "$log" 2>"$tmp/err" || fail "a FIFO: $(cat "$tmp/err")"
wait "$reader"
has '"traceEvents"' "$tmp/from-fifo"
# --force is an option of --html: a usage error without it
rc=0
cudapool report --force "$log" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && has "cudapool report: --force is an option of --html" "$tmp/err" ||
  fail "report --force without --html: exit $rc"

# ---- -h/--help, --version, usage errors ---------------------------------------------------------
for command in report export; do
  for h in -h --help; do
    cudapool $command $h >"$tmp/out" 2>"$tmp/err" || fail "$command $h: exit $?"
    head -1 "$tmp/out" | grep -q "^usage: cudapool $command " ||
      fail "$command $h: $(head -2 "$tmp/out")"
    [ ! -s "$tmp/err" ] || fail "$command $h wrote on stderr: $(cat "$tmp/err")"
  done
  cudapool $command --version >"$tmp/out" 2>"$tmp/err" || fail "$command --version: exit $?"
  [ "$(cat "$tmp/out")" = "cudapool $version" ] || fail "$command --version: $(cat "$tmp/out")"
  [ "$version" = 0.1.0 ] || fail "version.py says $version"
  [ ! -s "$tmp/err" ] || fail "$command --version wrote on stderr"
  for bad in "" "--bogus $log" "--max-points"; do
    rc=0
    # shellcheck disable=SC2086
    cudapool $command $bad >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
    [ $rc -eq 2 ] || fail "$command $bad: exit $rc, not 2"
    [ ! -s "$tmp/out" ] || fail "$command $bad: wrote on stdout"
    head -1 "$tmp/err" | grep -q "^cudapool $command: [a-z-]" ||
      fail "$command $bad: first line: $(head -1 "$tmp/err")"
    sed -n 2p "$tmp/err" | grep -q "^usage: cudapool $command " ||
      fail "$command $bad: no usage line: $(cat "$tmp/err")"
    if grep -q "error:" "$tmp/err"; then fail "$command $bad: argparse's own wording"; fi
  done
done
# the options' own checks say it the same way
rc=0
cudapool export --memory-viz "$tmp/x.pickle" "$log" "$log" >/dev/null 2>"$tmp/err" || rc=$?
want="cudapool export: --memory-viz takes exactly one LOG (2 given)"
[ $rc -eq 2 ] && head -1 "$tmp/err" | grep -qxF "$want" ||
  fail "export --memory-viz with two logs: exit $rc: $(cat "$tmp/err")"
echo "output_force: ok"
