#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/progress_line.sh: the progress line (issue 27; docs/log-format.md, "Progress") of every
# tool that reads a log: cudapool-replay, cudapool-tune, cudapool-cat, report, report --html
# (with --tune too: stdin read once for the engine and tune, fanout.py, the engine's line),
# export --memory-viz, export --perfetto. With stderr a terminal (a pseudo-terminal here) the line
# is drawn in place (a carriage return, the name, how far, events, events/s; the time left for a
# file) and cleared at the end; with stderr a pipe or a file, or with --quiet, not one byte of it.
# Plain and zstd logs, a file and stdin; a FIFO with report --html --tune.
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
bin="$CUDAPOOL_BUILD_DIR/tools"
log="$tmp/run.jsonl"
cp "$src/examples/logs/training-loop.jsonl" "$log"
zstd -q -c "$log" >"$tmp/run.zst"
# on_terminal OUT CMD...: CMD with stderr a pseudo-terminal (stdin: $feed, stdout: /dev/null),
# what reached the terminal in OUT; fails on a non-zero exit status. A hang guard of 300 s.
feed=/dev/null
on_terminal() {
  local out=$1
  shift
  python3 - "$out" "$feed" "$@" <<'PY' || fail "on a terminal: $*: $(tail -c 300 "$out")"
import fcntl, os, pty, struct, subprocess, sys, termios
out, feed, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 250, 0, 0))   # the whole line
attrs = termios.tcgetattr(slave)
attrs[1] &= ~termios.OPOST         # "\n" stays "\n": every "\r" seen is the tool's own
termios.tcsetattr(slave, termios.TCSANOW, attrs)
with open(feed, "rb") as stdin:
    p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=slave)
os.close(slave)
seen = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:          # EIO: the child and its descendants closed the terminal
        break
    if not chunk:
        break
    seen += chunk
rc = p.wait(timeout=300)
open(out, "wb").write(seen)
sys.exit(rc)
PY
}
# drawn OUT NAME WHAT: the line for NAME was drawn in OUT and cleared last
drawn() {
  python3 - "$@" <<'PY' || fail "$3: no progress line: $(od -c "$1" | tail -5)"
import re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
name = sys.argv[2]
lines = re.findall(r"\r([^\r\n]*?)\x1b\[K", text)
drawn = [l for l in lines if l]
assert drawn, "nothing drawn"
assert all(l.startswith(name + ": ") or l.startswith(name + " (") for l in drawn), drawn
assert all(re.search(r", [0-9.]+( [kMG])? events", l) for l in drawn), drawn
if name != "<stdin>":
    assert all(re.search(r": [0-9]+% \(", l) for l in drawn), drawn
assert text.rfind("\r\x1b[K") == text.rfind("\x1b[K") - 1, "not cleared last"
PY
}
# none OUT WHAT: not one byte of a progress line in OUT
none() {
  if grep -qaF $'\x1b[K' "$1" || grep -qa $'\r' "$1"; then fail "$2: a progress line: $(od -c "$1" | head)"; fi
}
tools() {
  cat <<TOOLS
$bin/cudapool-replay @LOG
$bin/cudapool-tune --threads 2 @LOG
$bin/cudapool-cat @LOG
python3 -m cudapool_analysis report @LOG
python3 -m cudapool_analysis report --html $tmp/page.html @LOG
python3 -m cudapool_analysis report --html $tmp/page.html --tune @LOG
python3 -m cudapool_analysis export --memory-viz $tmp/snap.pickle @LOG
python3 -m cudapool_analysis export --perfetto $tmp/trace.json @LOG
TOOLS
}
while read -r -a cmd; do
  for input in "$log" "$tmp/run.zst" stdin; do
    given=$input name=$input feed=/dev/null
    if [ "$input" = stdin ]; then given=- name="<stdin>" feed="$tmp/run.zst"; fi
    args=("${cmd[@]/@LOG/$given}")
    what="${cmd[*]##*/} on $input"
    rm -f "$tmp/page.html" "$tmp/snap.pickle" "$tmp/trace.json"
    on_terminal "$tmp/tty" "${args[@]}"
    drawn "$tmp/tty" "$name" "$what"
    # --quiet: none, on the terminal too (the option goes before LOG)
    rm -f "$tmp/page.html" "$tmp/snap.pickle" "$tmp/trace.json"
    quiet=("${args[@]:0:${#args[@]}-1}" --quiet "${args[-1]}")
    on_terminal "$tmp/tty" "${quiet[@]}"
    none "$tmp/tty" "$what --quiet"
    # stderr not a terminal: none
    rm -f "$tmp/page.html" "$tmp/snap.pickle" "$tmp/trace.json"
    timeout 300 "${args[@]}" <"$feed" >/dev/null 2>"$tmp/err" || fail "$what: exit $?"
    none "$tmp/err" "$what, stderr a file"
  done
done < <(tools)
# a FIFO with --tune: read once by the report (fanout.py), which draws its line (no size: no %)
rm -f "$tmp/page.html"
mkfifo "$tmp/fifo"
cat "$log" >"$tmp/fifo" &
on_terminal "$tmp/tty" python3 -m cudapool_analysis report --html "$tmp/page.html" --tune "$tmp/fifo"
wait
python3 - "$tmp/tty" "$tmp/fifo" <<'PY' || fail "a FIFO with --tune: no progress line: $(od -c "$tmp/tty" | tail -5)"
import re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
drawn = [l for l in re.findall(r"\r([^\r\n]*?)\x1b\[K", text) if l]
assert drawn, "nothing drawn"
assert all(l.startswith(sys.argv[2] + ": ") and re.search(r", [0-9.]+( [kMG])? events", l)
           for l in drawn), drawn
assert text.rfind("\r\x1b[K") == text.rfind("\x1b[K") - 1, "not cleared last"
PY
echo "progress_line: ok"
