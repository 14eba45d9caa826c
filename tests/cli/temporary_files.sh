#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/temporary_files.sh: nothing a command makes outlives it, however it ends (issue 26
# item 16; inputs.py, fanout.py, tools.run_tool): a `report --html` (also with --tune, of stdin:
# fanout.py's pipes) and an `export`, of a file or of stdin, killed (SIGKILL, SIGTERM, SIGHUP) while
# their analysis engine runs, leave nothing in TMPDIR and no temporary file beside OUT, and the
# engine ends with them. The engine here is a stand-in (CUDAPOOL_ANALYZE) that says it started and
# waits, so the kill always lands during its work; a stand-in replay (CUDAPOOL_REPLAY) that writes a
# little to its --write-log and waits is there too, for a path that would still replay a log.
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
stubs=()
trap 'for p in "${stubs[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
ex="$src/examples/logs/training-loop.jsonl"
cat >"$tmp/replay" <<'STUB'
#!/usr/bin/env bash
# a stand-in for cudapool-replay --write-log OUT LOG: some of OUT, then a wait
[ "$1" = --write-log ] || exit 2
head -c 100000 "$3" >"$2"
echo $$ >"$STARTED.tmp" && mv "$STARTED.tmp" "$STARTED"
exec sleep 600
STUB
cat >"$tmp/analyze" <<'STUB'
#!/usr/bin/env bash
# a stand-in for cudapool-analyze: says it started, then a wait
echo $$ >"$STARTED.tmp" && mv "$STARTED.tmp" "$STARTED"
exec sleep 600
STUB
chmod +x "$tmp/replay" "$tmp/analyze"
mkdir "$tmp/t" "$tmp/out"

# killed SIGNAL HOW ARGS...: `cudapool ARGS` (HOW: file, or stdin: the log piped in as -) killed
# by SIGNAL once its replay started; then TMPDIR and OUT's folder hold nothing and the replay ends
killed() {
  local sig=$1 how=$2 pid stub n=0
  shift 2
  export STARTED="$tmp/started"
  rm -f "$STARTED"
  if [ "$how" = stdin ]; then
    cat "$ex" | TMPDIR="$tmp/t" CUDAPOOL_REPLAY="$tmp/replay" CUDAPOOL_ANALYZE="$tmp/analyze" \
      python3 -m cudapool_analysis "$@" 2>"$tmp/err" &
  else
    TMPDIR="$tmp/t" CUDAPOOL_REPLAY="$tmp/replay" CUDAPOOL_ANALYZE="$tmp/analyze" \
      python3 -m cudapool_analysis "$@" 2>"$tmp/err" &
  fi
  pid=$!
  until [ -s "$STARTED" ]; do      # the hang guard: 300 s
    n=$((n + 1))
    [ $n -lt 3000 ] && kill -0 "$pid" 2>/dev/null || fail "$*: the stand-in did not start: $(cat "$tmp/err")"
    sleep 0.1
  done
  stub=$(cat "$STARTED")
  stubs+=("$stub")
  kill "-$sig" "$pid"
  wait "$pid" 2>/dev/null || true
  [ -z "$(ls -A "$tmp/t")" ] || fail "$sig, $how, $*: left in TMPDIR: $(ls -lA "$tmp/t")"
  [ -z "$(ls -A "$tmp/out")" ] || fail "$sig, $how, $*: left beside OUT: $(ls -lA "$tmp/out")"
  n=0
  while kill -0 "$stub" 2>/dev/null; do
    n=$((n + 1))
    [ $n -lt 600 ] || fail "$sig, $how, $*: the replay or the engine outlived the command"
    sleep 0.1
  done
}
for sig in KILL TERM HUP; do
  killed $sig file report --html "$tmp/out/page.html" "$ex"
  killed $sig stdin report --html "$tmp/out/page.html" -
  killed $sig stdin report --html "$tmp/out/page.html" --tune -
done
killed KILL file export --memory-viz "$tmp/out/snap.pickle" "$ex"
killed KILL stdin export --perfetto "$tmp/out/trace.json" -
killed TERM file export --perfetto "$tmp/out/trace.json" "$ex"

# ---- and a command that ends normally leaves nothing either ------------------------------------
cat "$ex" | TMPDIR="$tmp/t" python3 -m cudapool_analysis report --html "$tmp/out/page.html" - \
  2>"$tmp/err" || fail "report --html of stdin: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/t")" ] || fail "a finished report left in TMPDIR: $(ls -A "$tmp/t")"
[ "$(ls -A "$tmp/out")" = page.html ] || fail "a finished report left: $(ls -A "$tmp/out")"
echo "temporary_files: ok"
