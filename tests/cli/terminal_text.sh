#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/terminal_text.sh: no string of a log reaches the terminal raw (issue 26, item 11). A log
# whose every printed string field carries a window title (ESC ] 0 ; ... BEL), a screen clear
# (ESC [ 2 J), a CR, DEL, the C1 CSI U+009B and a bidi override (hostile.jsonl, made by
# tests/cli/fixtures/hostile_logs.py) goes through `cudapool report` (text, --json, several logs),
# `cudapool replay` (its conf: line) and both exports: stdout and stderr hold no raw control byte.
# And the Python rule (cudapool_analysis/terminal.py) is the C++ one (config/terminal_text.h, which
# cudapool-config's conf: line prints with): both escape the same bytes the same way.
set -euo pipefail
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
bin="$CUDAPOOL_BUILD_DIR/tools"
python3 "$fx/hostile_logs.py" "$tmp" hostile
log="$tmp/hostile.jsonl"
# clean WHAT FILE...: no byte a terminal acts on (C0 but newline, DEL, C1, bidi controls) and
# nothing that is not UTF-8 in FILE; with --json, DEL allowed (JSON keeps it as it is).
clean() {
  local what=$1
  shift
  python3 - "$what" "$@" <<'PY' || fail "$what: raw control bytes on the terminal"
import re, sys
what, files = sys.argv[1], sys.argv[2:]
json_out = what.endswith("--json")
bad = re.compile("[\x00-\x09\x0b-\x1f%s\x80-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]"
                 % ("" if json_out else "\x7f"))
for path in files:
    text = open(path, "rb").read().decode("utf-8")    # not UTF-8: fails here
    for m in bad.finditer(text):
        sys.exit("%s: %s: %r at %d: %r" % (what, path, m.group(), m.start(),
                                           text[max(0, m.start() - 40):m.start() + 10]))
PY
}
H='\x1b]0;pwned\x07\x1b[2J\rhidden\x7f\u009b31m\u202e'   # the hostile text, as printed

# ---- the text report ----------------------------------------------------------------------------
cudapool report "$log" >"$tmp/out" 2>"$tmp/err" || fail "report: exit $?"
clean "report" "$tmp/out" "$tmp/err"
has "  executable  /bin/app$H  (argv: app '--x=$H')" "$tmp/out"
has "  pid         77 on host node$H" "$tmp/out"
has "  conf        \"max_split_size_mb:128$H\" from env$H" "$tmp/out"
has "  options     key$H=\"value\\u001b]0;pwned\\u0007" "$tmp/out"
has "  device 0    GPU$H, 80.00 GiB" "$tmp/out"
has "Events: alloc 2, evil$H 1," "$tmp/out"
has "      0x7f0000001000 /lib/evil$H.so(fn$H+0x1)" "$tmp/out"
has "  actions this report does not know, counted only: evil$H" "$tmp/out"
cudapool report "$log" "$fx/normal.jsonl" >"$tmp/out" 2>"$tmp/err" || fail "two logs: exit $?"
clean "report of two logs" "$tmp/out" "$tmp/err"
cudapool report --json "$log" >"$tmp/out" 2>"$tmp/err" || fail "report --json: exit $?"
clean "report --json" "$tmp/out" "$tmp/err"
python3 -c 'import json, sys; h = json.load(open(sys.argv[1]))["header"]; assert h["host"].startswith("node\x1b]0;"), h' \
  "$tmp/out" || fail "report --json: the strings are not the log's"

# ---- the replay's conf: line ------------------------------------------------------------------
rc=0; "$bin/cudapool-replay" "$log" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 0 ] || fail "replay: exit $rc: $(head -c 300 "$tmp/err")"
clean "replay" "$tmp/out" "$tmp/err"
has "conf: \"max_split_size_mb:128$H\" (log header)" "$tmp/out"
# a conf longer than 1000 bytes: cut on a character (the 2-byte one that straddles the cut goes)
python3 - "$log" "$tmp/long.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
h = json.loads(lines[0])
h["conf"] = "a" * 996 + "é" * 10
open(sys.argv[2], "w", encoding="utf-8").write("\n".join([json.dumps(h)] + lines[1:]) + "\n")
PY
"$bin/cudapool-replay" "$tmp/long.jsonl" >"$tmp/out" 2>"$tmp/err" || true
has "conf: \"$(printf 'a%.0s' $(seq 996))...\" (log header)" "$tmp/out"

# ---- the exports' notes -------------------------------------------------------------------------
cudapool export --memory-viz "$tmp/s.pickle" "$log" >"$tmp/out" 2>"$tmp/err" || fail "memory_viz: exit $?"
clean "export --memory-viz" "$tmp/out" "$tmp/err"
has "left out (no memory_viz counterpart): evil$H x1" "$tmp/err"
cudapool export --perfetto "$tmp/t.json" "$log" >"$tmp/out" 2>"$tmp/err" || fail "perfetto: exit $?"
clean "export --perfetto" "$tmp/out" "$tmp/err"

# ---- one rule: the Python escaping is the C++ escaping -------------------------------------------
python3 - "$bin/cudapool-config" "$src/scripts" <<'PY' || fail "terminal.py and config/terminal_text.h differ"
import os, subprocess, sys
sys.path.insert(0, sys.argv[2])
from cudapool_analysis.terminal import escape, shown
cases = [b"plain", b"\x1b]0;t\x07\x1b[2J\rx\n\ty\x7f", "\u009b1m\u202e\u2066é€😀".encode(),
         b"back\\slash \"quoted\"", b"\xff\xfe bad", b"\xc0\x80 overlong", b"\xed\xa0\x80 surrogate",
         b"\xe2\x82 cut", b"\xf4\x90\x80\x80 above", "\u200e\u200f\u202a\u2069".encode()]
for raw in cases:
    out = subprocess.run([sys.argv[1], raw], capture_output=True).stdout.decode("utf-8")
    line = next(l for l in out.splitlines() if l.startswith("conf: "))
    want = 'conf: "%s" (from argument)' % escape(raw, '"')
    assert line == want, (raw, line, want)
    assert escape(os.fsdecode(raw), '"') == escape(raw, '"'), raw   # a file name's str, the same
assert shown("x" * 2000, 10) == "xxxxxxx..." and shown("\x1b" * 5, 3) == "..."
PY
echo "terminal_text: ok"
