#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/report_engine.sh: `cudapool report` and `report --json` take their figures from one run
# of the analysis engine (cudapool-analyze, found as tools.py finds every tool; $CUDAPOOL_ANALYZE
# overrides it; scripts/cudapool_analysis/engine.py). An engine that prints other figures changes
# the report; one that fails, is killed, prints no document or cannot be found makes the report
# fail with one clear line naming it, exit status 1, nothing on stdout, no traceback. The engine's
# own refusals reach stderr in the report's words ("cudapool report: ...").
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze"
[ -x "$bin" ] || fail "no $bin (build it)"
log="$fx/normal.jsonl"

# The report's figures are the engine's: an engine whose event count is 1000 more is believed.
cat >"$tmp/more_events" <<EOF
#!/usr/bin/env bash
"$bin" "\$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for x in d["logs"]:
    x["report"]["events"] += 1000
json.dump(d, sys.stdout)'
EOF
chmod +x "$tmp/more_events"
cudapool report "$log" >"$tmp/real.txt"
events=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events'])" \
  <(cudapool report --json "$log"))
CUDAPOOL_ANALYZE="$tmp/more_events" cudapool report --json "$log" >"$tmp/more.json"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['events'] == $events + 1000" \
  "$tmp/more.json" || fail "report --json does not print the engine's figures"
CUDAPOOL_ANALYZE="$tmp/more_events" cudapool report "$log" >"$tmp/more.txt"
has "lines, $((events + 1000)) events" "$tmp/more.txt"
hasnt() { ! grep -qF -- "$1" "$2" || fail "$2: has: $1"; }
hasnt "lines, $((events + 1000)) events" "$tmp/real.txt"

# engine_fails WHAT WANT: the report with CUDAPOOL_ANALYZE=$tmp/engine exits 1, says WANT in one
# line starting "cudapool report: ", nothing on stdout, no traceback; the same with --json.
engine_fails() {
  local what=$1 want=$2 json rc
  for json in "" --json; do
    rc=0
    CUDAPOOL_ANALYZE="$tmp/engine" cudapool report $json "$log" >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ $rc -eq 1 ] || fail "$what$json: exit $rc, not 1"
    [ ! -s "$tmp/out" ] || fail "$what$json: something on stdout"
    ! grep -q Traceback "$tmp/err" || fail "$what$json: a traceback: $(cat "$tmp/err")"
    grep -qF -- "cudapool report: $want" "$tmp/err" ||
      fail "$what$json: not said: $want (said: $(head -c 300 "$tmp/err"))"
  done
}
printf '#!/bin/sh\nexit 3\n' >"$tmp/engine"
chmod +x "$tmp/engine"
engine_fails "an engine that fails" "the analysis engine $tmp/engine exited with status 3 without a message; no report"
printf '#!/bin/sh\nexit 1\n' >"$tmp/engine"
engine_fails "an engine that fails silently" "the analysis engine $tmp/engine exited with status 1 without a message"
printf '#!/bin/sh\nkill -9 $$\n' >"$tmp/engine"
engine_fails "an engine killed" "the analysis engine $tmp/engine was killed by signal 9"
printf '#!/bin/sh\necho "{not json"\n' >"$tmp/engine"
engine_fails "an engine that prints no document" "the analysis engine $tmp/engine printed no document this report reads"
printf '#!/bin/sh\necho "{\\"schema\\": \\"cudapool.analysis/1\\", \\"logs\\": []}"\n' >"$tmp/engine"
engine_fails "a document of no log" \
  "the analysis engine $tmp/engine printed no document this report reads (not a cudapool.analysis/1 document of 1 log(s))"
printf '#!/bin/sh\necho "cudapool report: $1 $2 says no" >&2\nexit 1\n' >"$tmp/engine"
engine_fails "an engine that refuses" "--as cudapool report says no"
rm -f "$tmp/engine"
rc=0
CUDAPOOL_ANALYZE="$tmp/engine" CUDAPOOL_BUILD_DIR="$tmp/nothing" PATH=/usr/bin:/bin \
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from cudapool_analysis import tools
tools.places = lambda name: [sys.argv[2]]
from cudapool_analysis.cli import main
sys.exit(main(["report", sys.argv[3]]))' "$src/scripts" "$tmp/engine" "$log" \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "no engine: exit $rc, not 1"
has "cudapool report: cudapool-analyze not found" "$tmp/err"
has "scripts/cudapool build" "$tmp/err"

# The engine's own refusal, in the report's words (it runs with --as "cudapool report").
rc=0
cudapool report "$tmp/missing.jsonl" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "a missing log: exit $rc"
has "cudapool report: cannot read $tmp/missing.jsonl: No such file or directory" "$tmp/err"
hasnt "cudapool-analyze" "$tmp/err"
echo "report_engine: ok"
