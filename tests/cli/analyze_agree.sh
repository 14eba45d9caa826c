#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/analyze_agree.sh: the analysis engine (cudapool-analyze, docs/analysis-format.md) says
# what the Python report (the test oracle tests/oracle/report.py) says, field by field
# (tests/cli/analyze_compare.py), on every log the suite has: the fixtures of tests/cli/fixtures
# (and the hostile ones hostile_logs.py writes), the bundled example (a log of requests only: the
# engine replays it in process, the Python side through cudapool-replay --write-log), the parity
# traces, the replay fuzzer's corpus (inputs that are no log at all included: the same refusal),
# logs made at random and mutated (fixtures/random_logs.py, fixed seeds), a long one whose timelines
# are downsampled (more changes than the page keeps) and whose peaks lie mid-log (the segment maps
# at the peak), a log of the shim itself (a fake-driver program with backtraces) when the shim is
# built, and two logs as the ranks of one job. Then that the comparison catches an engine off by
# one, inputs the engine refuses as the report does (missing, a directory, empty), and stdin.
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
. "$CUDAPOOL_SOURCE_DIR/tests/cli/suite_logs.bash"
compare() { python3 "$src/tests/cli/analyze_compare.py" "$bin" "$@"; }

suite_logs

compare "${logs[@]}" >"$tmp/out" || { cat "$tmp/out" >&2; fail "the engine and the report differ"; }
tail -n 1 "$tmp/out"
compare --several "$fx/viewers.jsonl" "$fx/viewers-rank1.jsonl" "$fx/normal.jsonl" "$fx/killed.jsonl" \
  >"$tmp/out" || { cat "$tmp/out" >&2; fail "several logs: the engine and the report differ"; }

# The comparison can fail: an engine whose count of events and whose segment map at the peak are
# off by one is caught, each with its field's path.
cat >"$tmp/off_by_one" <<EOF
#!/usr/bin/env bash
"$bin" "\$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for x in d["logs"]:
    x["report"]["events"] += 1
    for dev in x["page"]["devices"].values():
        dev["maps"]["peak"]["blocks"] += 1
json.dump(d, sys.stdout)'
EOF
chmod +x "$tmp/off_by_one"
rc=0
python3 "$src/tests/cli/analyze_compare.py" "$tmp/off_by_one" "$fx/normal.jsonl" >"$tmp/out" || rc=$?
[ $rc -eq 1 ] || fail "an engine off by one passed the comparison (exit $rc)"
grep -qF "report.events: python 109 | engine 110" "$tmp/out" || fail "not said: report.events"
grep -qF "page.devices.0.maps.peak.blocks: python 5 | engine 6" "$tmp/out" ||
  fail "not said: the peak map's blocks ($(cat "$tmp/out"))"

# Inputs refused: the report's words, exit status 1, nothing on stdout.
refused() {
  local want=$1 rc=0
  shift
  "$bin" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
  [ $rc -eq 1 ] || fail "$*: exit $rc, not 1"
  [ ! -s "$tmp/stdout" ] || fail "$*: something on stdout"
  grep -qF -- "$want" "$tmp/stderr" || fail "$*: not said: $want (said: $(head -c 300 "$tmp/stderr"))"
}
refused "cannot read $tmp/missing.jsonl: No such file or directory" "$tmp/missing.jsonl"
refused "$tmp is a directory, not a log" "$tmp"
: >"$tmp/empty.jsonl"
refused "$tmp/empty.jsonl is empty: not a log (a log has a header line)" "$tmp/empty.jsonl"
refused "<stdin> is empty: not a log" - </dev/null
rc=0
"$bin" >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "no log: exit $rc, not 2"
rc=0
"$bin" - - </dev/null >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "stdin twice: exit $rc, not 2"

# stdin, and the log compressed (zstd, gzip, and a zstd file without its extension): the same
# document as the file's, under another name.
"$bin" "$fx/normal.jsonl" >"$tmp/file.json"
"$bin" - <"$fx/normal.jsonl" >"$tmp/stdin.json"
zstd -q -c "$fx/normal.jsonl" >"$tmp/normal.jsonl.zst"
gzip -c "$fx/normal.jsonl" >"$tmp/normal.jsonl.gz"
cp "$tmp/normal.jsonl.zst" "$tmp/normal-noext"
for f in "$tmp/normal.jsonl.zst" "$tmp/normal.jsonl.gz" "$tmp/normal-noext"; do
  "$bin" "$f" >"$tmp/$(basename "$f").json" || fail "$f: exit $?"
done
zstd -q -c "$fx/normal.jsonl" | "$bin" - >"$tmp/stdin-zst.json"
python3 - "$tmp/file.json" "$tmp/stdin.json" "$tmp/stdin-zst.json" "$tmp/normal.jsonl.zst.json" \
  "$tmp/normal.jsonl.gz.json" "$tmp/normal-noext.json" <<'PY' || fail "stdin or compressed: not the file's document"
import json, sys
docs = [json.load(open(p)) for p in sys.argv[1:]]
for d in docs:
    for x in d["logs"]:
        x["report"]["log"] = x["page"]["log"] = "L"
    for r in d["ranks"]:
        r["log"] = "L"
assert all(d == docs[0] for d in docs[1:])
PY
# a gzip log cut in the middle of its stream: read to the cut, and said in the ending
head -c 2000 "$tmp/normal.jsonl.gz" >"$tmp/cut.jsonl.gz"
"$bin" --no-page "$tmp/cut.jsonl.gz" >"$tmp/cut.json" || fail "cut.jsonl.gz: exit $?"
python3 -c "
import json, sys
e = json.load(open('$tmp/cut.json'))['logs'][0]['report']['ending']
assert e['summary'] == 'none' and 'frame' in e['clues'][0], e
" || fail "the cut compressed log's ending: $(head -c 400 "$tmp/cut.json")"
echo "analyze_agree: ok"
