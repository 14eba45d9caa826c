#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/control_client.sh: the control endpoint's client (scripts/cudapool_analysis/control.py,
# docs/control.md) against a stand-in server, no shim: a process whose queue of pending connections
# is full (a connect then fails with EAGAIN when it is non-blocking, as a timeout makes it) is
# waited for until --timeout's deadline: (1) a server that starts accepting after a while is
# answered; (2) one that never accepts is named plainly once the deadline passed, exit status 1.
# Then the command line without any server (issue 29): (3) usage errors (a PID that is not a
# number, a bad --timeout, an unknown option) are `cudapool stats: ...` and the usage line on
# stderr, exit 2; -h and --version print on stdout, exit 0, for stats, empty-cache, snapshot, top;
# (4) a process that does not exist is named so, exit 1, at once even with --timeout; (5) snapshot
# -o over an existing file is refused without --force, the file left as it was; (6) top finding
# no process says why and what to do, and --json/--csv give the empty table (the hint on stderr).
# Not here: the shim's side (tests/fakecuda/control_check.py; tests/cli/control_live.sh: the
# messages for real processes, waiting for a socket, NVML's figure).
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# server.py SOCKET ACCEPT_AFTER: listens with a backlog of 1, fills that queue itself with
# connections it never accepts, writes SOCKET.full, then after ACCEPT_AFTER seconds (never when
# negative) accepts every connection and answers each request "ok\nserved\n". Ends by itself
# after 60 s.
cat >"$tmp/server.py" <<'PY'
import os, socket, sys, time
path, after = sys.argv[1], float(sys.argv[2])
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(1)
fillers = []
while True:
    c = socket.socket(socket.AF_UNIX)
    c.setblocking(False)
    try:
        c.connect(path)
    except BlockingIOError:
        c.close()
        break
    fillers.append(c)
open(path + ".full", "w").close()
end = time.monotonic() + 60
if after < 0:
    time.sleep(60)
    sys.exit(0)
time.sleep(after)
srv.settimeout(1)
while time.monotonic() < end:
    try:
        conn, _ = srv.accept()
    except socket.timeout:
        continue
    conn.settimeout(5)
    data = b""
    try:
        while b"\n" not in data:
            chunk = conn.recv(100)
            if not chunk:
                break
            data += chunk
        if data:
            conn.sendall(b"ok\nserved\n")
    except OSError:
        pass
    conn.close()
PY

# start_server NAME ACCEPT_AFTER: the server in the background, its queue full once this returns.
start_server() {
  python3 "$tmp/server.py" "$tmp/$1.sock" "$2" &
  servers+=($!)
  local i
  for i in $(seq 1 600); do
    [ -e "$tmp/$1.sock.full" ] && return
    sleep 0.05
  done
  fail "the stand-in server $1 did not fill its queue in 30 s"
}
servers=()
trap 'kill "${servers[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT

# (1) Accepts after 3 s: the client waits for it (a generous deadline, no timing asserted).
start_server late 3
rc=0
cudapool stats "$tmp/late.sock" --timeout 60 >"$tmp/late.out" 2>"$tmp/late.err" || rc=$?
[ $rc -eq 0 ] || fail "a server whose queue was full for 3 s: exit $rc: $(cat "$tmp/late.err")"
grep -qx served "$tmp/late.out" || fail "a server whose queue was full for 3 s: $(cat "$tmp/late.out")"
echo "ok: a server whose queue of pending connections was full for 3 s was waited for and answered"

# (2) Never accepts: exit 1 at the deadline, saying so.
start_server never -1
rc=0
cudapool stats "$tmp/never.sock" --timeout 2 >"$tmp/never.out" 2>"$tmp/never.err" || rc=$?
[ $rc -eq 1 ] || fail "a server that never accepts: exit $rc, not 1: $(cat "$tmp/never.err")"
has "did not accept the connection within 2 s" "$tmp/never.err"
if grep -q "Resource temporarily unavailable\|Traceback" "$tmp/never.err"; then
  fail "a server that never accepts: $(cat "$tmp/never.err")"
fi
echo "ok: a server that never accepts: $(cat "$tmp/never.err")"

# (3) Usage: exit 2, `cudapool CMD: what is wrong` then `usage: cudapool CMD ...` on stderr.
usage_error() {  # usage_error WHAT_IS_WRONG ARGS...
  local want=$1 rc=0
  shift
  cudapool "$@" >"$tmp/u.out" 2>"$tmp/u.err" || rc=$?
  [ $rc -eq 2 ] || fail "cudapool $*: exit $rc, not 2: $(cat "$tmp/u.err")"
  [ ! -s "$tmp/u.out" ] || fail "cudapool $*: a usage error printed on stdout"
  head -1 "$tmp/u.err" | grep -q "^cudapool $1: " && head -1 "$tmp/u.err" | grep -qF -- "$want" ||
    fail "cudapool $*: first line: $(head -1 "$tmp/u.err")"
  sed -n 2p "$tmp/u.err" | grep -q "^usage: cudapool $1 " ||
    fail "cudapool $*: no usage line: $(cat "$tmp/u.err")"
}
usage_error "'abc' is neither a process id" stats abc
usage_error "'-5' is neither a process id" empty-cache -- -5
usage_error "the following arguments are required: PID" stats
usage_error "the following arguments are required: -o/--output" snapshot 4242
usage_error "unrecognized arguments: --bogus" stats 4242 --bogus
usage_error "unrecognized arguments: --bogus" stats --bogus
usage_error "unrecognized arguments: --bogus" snapshot --bogus -o x
usage_error "the following arguments are required: PID" snapshot -ox
usage_error "'0' is not a number of seconds above 0" stats 4242 --timeout 0
usage_error "'nan' is not a number of seconds above 0" top --interval nan
usage_error "not allowed with argument" top --json --csv
usage_error "not allowed with argument" stats 4242 --csv --json
for c in stats empty-cache snapshot top; do
  for h in -h --help; do
    rc=0
    cudapool $c $h >"$tmp/h.out" 2>"$tmp/h.err" || rc=$?
    [ $rc -eq 0 ] && [ ! -s "$tmp/h.err" ] || fail "cudapool $c $h: exit $rc: $(cat "$tmp/h.err")"
    head -1 "$tmp/h.out" | grep -q "^usage: cudapool $c" || fail "cudapool $c $h: $(head -2 "$tmp/h.out")"
  done
  out=$(cudapool $c --version) || fail "cudapool $c --version: exit $?"
  [ "$out" = "cudapool 0.1.0" ] || fail "cudapool $c --version: $out"
done
grep -q "^VERSION = \"0.1.0\"" "$src/scripts/cudapool_analysis/version.py" ||
  fail "version.py no longer says 0.1.0: update this test"
echo "ok: usage errors exit 2 with the command's name and usage line; -h and --version exit 0"

# (4) No such process: said so, exit 1, at once even with --timeout (nothing to wait for).
true & gone=$!
wait $gone
for args in "stats $gone" "empty-cache $gone --timeout 30" "snapshot $gone -o $tmp/s.pickle"; do
  rc=0
  start=$SECONDS
  cudapool $args >"$tmp/np.out" 2>"$tmp/np.err" || rc=$?
  [ $rc -eq 1 ] || fail "cudapool $args: exit $rc, not 1: $(cat "$tmp/np.err")"
  cmd=${args%% *}
  [ "$(cat "$tmp/np.err")" = "cudapool $cmd: no process $gone" ] ||
    fail "cudapool $args: $(cat "$tmp/np.err")"
  [ $((SECONDS - start)) -lt 20 ] || fail "cudapool $args waited for a process that is not there"
done
echo "ok: a process that does not exist: cudapool stats: no process $gone"

# (5) snapshot -o over an existing file: refused unless --force (before asking anything).
echo "an earlier file" >"$tmp/old.pickle"
rc=0
cudapool snapshot "$gone" -o "$tmp/old.pickle" >"$tmp/f.out" 2>"$tmp/f.err" || rc=$?
[ $rc -eq 1 ] || fail "snapshot over an existing file: exit $rc, not 1: $(cat "$tmp/f.err")"
has "old.pickle exists: give --force to replace it" "$tmp/f.err"
[ "$(cat "$tmp/old.pickle")" = "an earlier file" ] || fail "snapshot changed the existing file"
rc=0
cudapool snapshot "$gone" -o "$tmp/old.pickle" --force >"$tmp/f.out" 2>"$tmp/f.err" || rc=$?
[ $rc -eq 1 ] && grep -q "no process $gone" "$tmp/f.err" ||
  fail "snapshot --force: exit $rc: $(cat "$tmp/f.err")"
echo "ok: snapshot -o FILE: $(cat "$tmp/f.err") with --force; refused without it"

# (6) top with no process: the table's header, then why and what to do.
mkdir -m 700 "$tmp/none"
# the hint is wrapped at 80 columns: its lines joined before looking for a phrase
cudapool top --once --dir "$tmp/none" >"$tmp/t.txt" 2>"$tmp/t.err" || fail "top --once: exit $?"
tr '\n' ' ' <"$tmp/t.txt" >"$tmp/t.out"
has "No process of yours has a control socket in $tmp/none." "$tmp/t.out"
has "CUDAPOOL_CONTROL=1" "$tmp/t.out"
has "its socket opens then" "$tmp/t.out"
if awk 'length > 80' "$tmp/t.txt" | grep -q .; then fail "top: a line over 80 columns"; fi
cudapool top --once --dir "$tmp/none/missing" | tr '\n' ' ' >"$tmp/t.out" || fail "top --once: exit $?"
has "(it does not exist)" "$tmp/t.out"
cudapool top --once --json --dir "$tmp/none" >"$tmp/t.json" 2>"$tmp/t.err" || fail "top --json: exit $?"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["processes"] == [], d' \
  "$tmp/t.json" || fail "top --json with no process: $(cat "$tmp/t.json")"
has "No process of yours" "$tmp/t.err"
cudapool top --once --csv --dir "$tmp/none" >"$tmp/t.csv" 2>/dev/null || fail "top --csv: exit $?"
[ "$(wc -l <"$tmp/t.csv")" -eq 1 ] && head -1 "$tmp/t.csv" | grep -q "^time,pid,device," ||
  fail "top --csv with no process: $(cat "$tmp/t.csv")"
echo "ok: top with no process says why:"
cudapool top --once --dir "$tmp/none" | sed 's/^/  /'
