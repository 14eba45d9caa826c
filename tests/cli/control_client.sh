#!/usr/bin/env bash
# tests/cli/control_client.sh: the control endpoint's client (scripts/cudapool_analysis/control.py,
# docs/control.md) against a stand-in server, no shim: a process whose queue of pending connections
# is full (a connect then fails with EAGAIN when it is non-blocking, as a timeout makes it) is
# waited for until --timeout's deadline: (1) a server that starts accepting after a while is
# answered; (2) one that never accepts is named plainly once the deadline passed, exit status 1.
# Not here: the shim's side (tests/fakecuda/control_check.py).
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
