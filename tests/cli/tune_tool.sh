#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/tune_tool.sh: cudapool-tune and `scripts/cudapool tune` as a user runs them: the sweep
# on the bundled log and on logs the fake driver's shim wrote, several logs, JSON, and bad input
# (each a clear message and a non-zero exit, never a crash).
set -euo pipefail
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-tune"
src="$CUDAPOOL_SOURCE_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

log="$src/examples/logs/training-loop.jsonl"
"$bin" "$log" >"$tmp/out.txt" || fail "tune exited $?"
grep -q "rank  setting" "$tmp/out.txt" || fail "no table"
grep -q "own " "$tmp/out.txt" || fail "the log's own setting is not in the table"
grep -q "^  CUDAPOOL_CONF='expandable_segments:True'" "$tmp/out.txt" || fail "no recommendation"
grep -q "caveat: expandable segments" "$tmp/out.txt" || fail "no caveat"

"$bin" --json --try 'max_split_size_mb:64' --device-memory 16G "$log" >"$tmp/out.json" ||
  fail "json tune exited $?"
python3 - "$tmp/out.json" <<'PY' || fail "json output wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "cudapool.tune/1"
log = d["logs"][0]
assert log["device_memory"] == 16 << 30, log["device_memory"]
res = log["results"]
assert [r["rank"] for r in res] == list(range(1, len(res) + 1))
assert any(r["setting"] == "own" and r["vs_own"] == 0 for r in res)
assert any(r["tried_by_user"] and r["changes"] == "max_split_size_mb:64" for r in res)
peaks = [r["peak_reserved"] for r in res if r["ooms"] == 0]
assert peaks == sorted(peaks), peaks
assert d["recommendation"]["cudapool_conf"] == "expandable_segments:True"
assert not d["recommendation"]["keep_own"]
PY

# Several logs: a table each and the worst rank.
"$bin" "$log" "$log" >"$tmp/two.txt" || fail "two logs exited $?"
grep -q "Over all 2 logs" "$tmp/two.txt" || fail "no worst-rank table"
grep -q "for the worst of the 2 logs" "$tmp/two.txt" || fail "recommendation not for the worst rank"

# A fraction: garbage collection is tried, every row runs under it.
"$bin" --json --fraction 0.5 "$log" >"$tmp/frac.json" || fail "--fraction exited $?"
python3 - "$tmp/frac.json" <<'PY' || fail "--fraction not applied"
import json, sys
d = json.load(open(sys.argv[1]))
res = d["logs"][0]["results"]
assert any(r["changes"].startswith("garbage_collection_threshold") for r in res)
assert all("per_process_memory_fraction:0.5" in r["conf"] for r in res)
PY

# stdin
"$bin" --json - <"$log" >"$tmp/stdin.json" || fail "stdin exited $?"

# Bad input.
expect() {  # expected-status grep-pattern args...
  local want=$1 pattern=$2 rc=0
  shift 2
  "$bin" "$@" >"$tmp/o.txt" 2>"$tmp/e.txt" || rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, expected $want: $(head -c 300 "$tmp/e.txt")"
  grep -q -- "$pattern" "$tmp/e.txt" || fail "$*: no '$pattern' in: $(head -c 300 "$tmp/e.txt")"
}
expect 2 "no LOG given"
expect 1 "No such file" "$tmp/does-not-exist"
expect 1 "is a directory" "$tmp"
: >"$tmp/empty.jsonl"
expect 1 "no alloc events" "$tmp/empty.jsonl"
printf 'garbage\n\x00\xff\xfe binary\n{"a":\n' >"$tmp/garbage.jsonl"
expect 1 "no alloc events" "$tmp/garbage.jsonl"
head -c 100000 /dev/urandom >"$tmp/random.bin"
expect 1 "no alloc events" "$tmp/random.bin"
expect 2 "not a valid conf string" --try 'max_split_size_mb:3' "$log"
expect 2 "not a device size" --device-memory 1 "$log"
expect 2 "not a device size" --device-memory 99999999999T "$log"
expect 2 "not a device size" --device-memory lots "$log"
expect 2 "greater than 0 and at most 1" --fraction 2 "$log"
expect 2 "unknown option" --frobnicate "$log"
expect 2 "--threads" --threads 0 "$log"
expect 1 "No such file" "$log" "$tmp/does-not-exist"

# A log with some bad lines among good events: tuned, with a note.
{ head -n 200 "$log"; echo 'not json'; tail -n 50 "$log"; } >"$tmp/partly.jsonl"
"$bin" "$tmp/partly.jsonl" >"$tmp/partly.txt" || fail "a partly bad log exited $?"
grep -q "note: 1 malformed lines" "$tmp/partly.txt" || fail "bad lines not noted"

# One pass, memory bounded by the live state: 3 million events on stdin (the example's first 2000
# lines, then segment_free events, cheap to replay) under 150 MB of address space; the tune that
# read the log into memory first needed 400-600 MB for them (std::bad_alloc under 400 MB). A
# sanitizer build reserves terabytes of shadow address space: there it runs without the limit.
limit="ulimit -v 150000"
if grep -qE 'lib(asan|tsan)\.so' <<<"$(ldd "$bin" 2>/dev/null || true)"; then limit=true; fi
long_log() (
  set +o pipefail  # yes ends with SIGPIPE when head has its lines
  head -n 2000 "$log"
  yes '{"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"segment_free","ptr":"0x7f0000000000","size":2097152}' |
    head -n 3000000
)
rc=0
long_log | (eval "$limit" && exec "$bin" --threads 2 --json -) >"$tmp/long.json" 2>"$tmp/long.err" || rc=$?
[ $rc -eq 0 ] || fail "3 million events under 150 MB: exit $rc: $(head -c 300 "$tmp/long.err")"
head -n 2000 "$log" >"$tmp/head.jsonl"
"$bin" --json - <"$tmp/head.jsonl" >"$tmp/head.json" || fail "the example's first lines: exit $?"
python3 - "$tmp/long.json" "$tmp/head.json" <<'PY' || fail "3 million events: not the head's figures"
import json, sys
long, head = (json.load(open(p)) for p in sys.argv[1:])
assert long["logs"][0]["events"] == 1999 + 3000000, long["logs"][0]["events"]
assert long["logs"][0]["results"] == head["logs"][0]["results"]  # segment_free: nothing to replay
assert long["recommendation"] == head["recommendation"]
PY

# The launcher finds the built tool.
CUDAPOOL_BUILD_DIR="$CUDAPOOL_BUILD_DIR" "$src/scripts/cudapool" tune --json "$log" >"$tmp/l.json" ||
  fail "scripts/cudapool tune failed"
echo "tune_tool: ok"
