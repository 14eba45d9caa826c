#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/analyze_bounded.sh: the analysis engine's memory grows with the live state, not with
# the length of the log (docs/analysis-format.md, "Memory"). Under 64 MB of address space (the
# tool needs about 10), 2 M events of a training loop whose live state stays the same (250 MB of
# log, streamed through a pipe: never a file) are read to their end with the right figures; the
# same limit refuses a log whose live state grows with it (2 M blocks never freed), with the
# engine's one line and exit status 1, not a crash: so the limit is real and the first run's
# figures come from a pass whose state did not grow. A sanitizer build reserves terabytes of
# shadow address space, which no such limit allows: there the runs go without the limit (the
# plain build checks the bound). Not here: the figures on other logs (analyze_agree.sh).
set -euo pipefail
. "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze"
[ -x "$bin" ] || fail "no $bin (build it)"
limit="ulimit -v 64000"
libraries=$(ldd "$bin" 2>/dev/null || true)  # (not piped into grep -q: pipefail and SIGPIPE)
sanitized=0
if grep -qE 'lib(asan|tsan)\.so' <<<"$libraries"; then
  limit=true
  sanitized=1
fi

# The same live state all along: every step's 64 blocks freed, its segment released.
rc=0
python3 "$fx/random_logs.py" - steady 2000000 0 | ($limit && exec "$bin" -) >"$tmp/steady.json" \
  2>"$tmp/stderr" || rc=$?
[ $rc -eq 0 ] || fail "a steady log of 2 M events under $limit: exit $rc ($(cat "$tmp/stderr"))"
python3 - "$tmp/steady.json" <<'PY' || fail "a steady log of 2 M events: wrong figures"
import json, sys
log = json.load(open(sys.argv[1]))["logs"][0]
rep, dev = log["report"], log["page"]["devices"]["0"]
assert rep["events"] == 2000140 and rep["problem_count"] == 0, (rep["events"], rep["problems"])
stats = rep["devices"]["0"]["stats"]
assert stats["allocated_bytes.all.peak"] == 64 << 20, stats
assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 10310 * 64, stats
assert stats["segment.all.allocated"] == 10310 and stats["segment.all.current"] == 0, stats
assert dev["peak_reserved"]["seq"] == 1 and dev["maps"]["peak"]["blocks"] == 0, dev["maps"]["peak"]
assert len(dev["timeline"]["t"]) < 40000, len(dev["timeline"]["t"])
PY

# A live state that grows with the log: refused under the same limit, in one line, exit 1.
if [ $sanitized -eq 0 ]; then
  rc=0
  python3 "$fx/random_logs.py" - steady 2000000 64 | ($limit && exec "$bin" -) >"$tmp/stdout" \
    2>"$tmp/stderr" || rc=$?
  [ $rc -eq 1 ] || fail "2 M blocks never freed under $limit: exit $rc, not 1"
  [ "$(cat "$tmp/stderr")" = "cudapool-analyze: out of memory reading <stdin>" ] ||
    fail "2 M blocks never freed: not said: out of memory ($(head -c 300 "$tmp/stderr"))"
  [ ! -s "$tmp/stdout" ] || fail "2 M blocks never freed: a document on stdout"
fi
echo "analyze_bounded: ok"
