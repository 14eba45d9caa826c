#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/memviz_agree.sh: `cudapool export --memory-viz` from the analysis engine
# (cudapool-analyze --memory-viz) makes the same snapshot (equal objects once pickled and read back)
# and the same notes as the Python pass it replaced (the test oracle tests/oracle/memviz_pass.py:
# build), on every log the suite has (suite_logs.bash: fixtures, hostile logs, the bundled example
# of requests only, parity traces, the fuzzer's corpus, random and mutated logs, a long one, the
# shim's logs), with the default ring (100000 entries) and with a ring of 7 (entries pushed out,
# completions appended to entries already gone) (tests/cli/memviz_compare.py). Then that the
# comparison catches an engine one byte off, and that a compressed log on stdin gives the file's
# snapshot.
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
. "$CUDAPOOL_SOURCE_DIR/tests/cli/suite_logs.bash"
compare() { python3 "$src/tests/cli/memviz_compare.py" "$@"; }

suite_logs
for n in 100000 7; do
  compare "$n" "${logs[@]}" >"$tmp/out" ||
    { cat "$tmp/out" >&2; fail "--max-entries $n: the engine's snapshot differs"; }
  tail -n 1 "$tmp/out"
done

# The comparison can fail: an engine whose first block is one byte larger is caught.
edited_engine "$tmp/off_by_one" '
for x in d["logs"]:
    x["memviz"]["devices"][0]["blocks"][0][2] += 1'
rc=0
CUDAPOOL_ANALYZE="$tmp/off_by_one" compare 100000 "$fx/normal.jsonl" >"$tmp/out" || rc=$?
[ $rc -eq 1 ] || fail "an engine one byte off passed the comparison (exit $rc)"
has "normal.jsonl: snapshot.segments[" "$tmp/out"

# stdin, compressed: the file's snapshot.
if command -v zstd >/dev/null; then
  zstd -q -c "$fx/viewers.jsonl" >"$tmp/v.zst"
  cudapool export --memory-viz "$tmp/file.json" "$fx/viewers.jsonl" 2>/dev/null
  cudapool export --memory-viz "$tmp/stdin.json" - <"$tmp/v.zst" 2>"$tmp/err" ||
    fail "stdin: exit $?: $(cat "$tmp/err")"
  cmp -s "$tmp/file.json" "$tmp/stdin.json" || fail "stdin: not the file's snapshot"
fi
echo "memviz_agree: ok"
