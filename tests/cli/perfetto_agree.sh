#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/perfetto_agree.sh: `cudapool export --perfetto` from the analysis engine
# (cudapool-analyze --perfetto) writes the same trace, byte for byte, and the same notes as the
# Python pass it replaced (the test oracle tests/oracle/perfetto_pass.py), on every log
# analyze_agree.sh reads: the fixtures (and the hostile ones), the bundled example (a log of
# requests only: the engine replays it in process, the oracle through cudapool-replay --write-log),
# the parity traces, the replay fuzzer's corpus, logs made at random and mutated, a long one whose
# counters are downsampled, logs of the shim when it is built, and several logs as the ranks of one
# job (tests/cli/perfetto_compare.py). Then that the comparison catches an engine one byte off, and
# that a log on stdin (compressed) gives the trace of the same file.
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
. "$CUDAPOOL_SOURCE_DIR/tests/cli/suite_logs.bash"
compare() { python3 "$src/tests/cli/perfetto_compare.py" "$@"; }

suite_logs

compare "${logs[@]}" >"$tmp/out" || { cat "$tmp/out" >&2; fail "the engine's trace differs"; }
tail -n 1 "$tmp/out"
compare --several "$fx/viewers-rank1.jsonl" "$fx/viewers.jsonl" "$fx/normal.jsonl" \
  "$src"/examples/logs/*.jsonl >"$tmp/out" ||
  { cat "$tmp/out" >&2; fail "several logs: the engine's trace differs"; }

# The comparison can fail: an engine whose first counter point is one byte off is caught.
edited_engine "$tmp/off_by_one" '
for x in d["logs"]:
    x["perfetto"]["devices"][0]["points"][0][1] += 1'
rc=0
CUDAPOOL_ANALYZE="$tmp/off_by_one" compare "$fx/normal.jsonl" >"$tmp/out" || rc=$?
[ $rc -eq 1 ] || fail "an engine one byte off passed the comparison (exit $rc)"
has "normal.jsonl: line 4: python" "$tmp/out"

# stdin, compressed: the trace of the file, its name <stdin>.
if command -v zstd >/dev/null; then
  zstd -q -c "$fx/viewers.jsonl" >"$tmp/v.zst"
  cudapool export --perfetto "$tmp/file.json" "$fx/viewers.jsonl" 2>/dev/null
  cudapool export --perfetto "$tmp/stdin.json" - <"$tmp/v.zst" 2>"$tmp/err" ||
    fail "stdin: exit $?: $(cat "$tmp/err")"
  sed "s|\"log\":\"$fx/viewers.jsonl\"|\"log\":\"<stdin>\"|" "$tmp/file.json" >"$tmp/want.json"
  cmp -s "$tmp/want.json" "$tmp/stdin.json" || fail "stdin: not the file's trace"
fi
echo "perfetto_agree: ok"
