# SPDX-License-Identifier: Apache-2.0
"""tests/fakecuda/control_hostile.py: the parts of control_check.py about what must not hurt the
program: hostile clients (a huge line, garbage, connections that never write, more of them than
the endpoint serves at once, a client that never reads an answer larger than a socket buffer,
many clients at once) while the loop's progress is sampled; the socket's directory and name
(a symbolic link planted at the directory and at the socket's name, a directory with group or
other permissions or of another owner, a dead socket of the same pid, a bad value, a connection
from another user); fork (the child has no socket and no descriptor of the parent's); exit while
clients are connected (prompt)."""
import os
import socket
import stat
import threading
import time

from control_lib import Run, check, fail, ok, raw


class Sampler(threading.Thread):
    """The loop's progress every 20 ms: the longest time it stood still."""

    def __init__(self, run):
        super().__init__(daemon=True)
        self.run_, self.stop, self.longest, self.samples = run, False, 0.0, 0

    def run(self):
        last, since = self.run_.progress(), time.monotonic()
        while not self.stop:
            time.sleep(0.02)
            now, p = time.monotonic(), self.run_.progress()
            self.samples += 1
            if p != last:
                last, since = p, now
            self.longest = max(self.longest, now - since)


def send_huge(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    try:
        s.sendall(b"x" * 100000)
    except OSError:
        pass   # the endpoint answered and closed after 4 KiB
    data = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
    except OSError:
        pass
    s.close()
    return data


def hostile_clients(t, run):
    path = t.socket_of(run.pid)
    sampler = Sampler(run)
    sampler.start()
    start_steps, t0 = run.progress(), time.monotonic()
    a = send_huge(path)
    check(a.startswith(b"error: a request is one line of at most 4096 bytes"), "huge line: %r" % a[:80])
    for junk in (bytes(range(256)).replace(b"\n", b"") + b"\n", b"\x00\xffstats\n", b"sta",
                 b"stats json\x00\n", b"\n", b"   \r\n"):
        a = raw(path, junk)
        check(a.startswith(b"error: unknown request"), "garbage %r: answered %r" % (junk[:20], a[:60]))
    raw(path, b"", read=False)   # connect, close
    idle = []
    for _ in range(40):          # more than the 32 the endpoint serves at once
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        idle.append(s)
    t_idle = time.monotonic()
    body = t.ask(run.pid, "stats json")   # waits for a slot, at most about a second
    waited = time.monotonic() - t_idle
    check(body.startswith("{"), "a request among 40 idle connections")
    closed = 0
    for s in idle:
        s.settimeout(4)
        try:
            data = s.recv(100)
            closed += data in (b"", b"error: no request within 1 s\n")
        except OSError:
            pass
        s.close()
    check(closed == 40, "idle connections closed by the endpoint: %d of 40" % closed)
    deaf = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    deaf.connect(path)
    deaf.sendall(b"snapshot\n")   # its answer is larger than a socket buffer: never read
    time.sleep(0.3)
    t_deaf = time.monotonic()
    for _ in range(5):
        check(t.ask(run.pid, "stats json").startswith("{"), "a request beside a client that never reads")
    beside = time.monotonic() - t_deaf
    results = []

    def many():
        try:
            results.append(t.ask(run.pid, "stats json").startswith("{"))
        except Exception as e:   # noqa: BLE001
            results.append(e)
    threads = [threading.Thread(target=many) for _ in range(64)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    check(results.count(True) == 64, "64 clients at once: %s" % [r for r in results if r is not True][:3])
    time.sleep(2.5)   # the client that never reads is dropped after 2 s without progress
    deaf.settimeout(5)
    got, dropped = 0, False
    try:
        while True:
            c = deaf.recv(1 << 16)
            if not c:
                dropped = True
                break
            got += len(c)
    except OSError:
        dropped = True
    deaf.close()
    answer_size = len(t.ask(run.pid, "snapshot"))
    check(dropped and got < answer_size, "the client that never read: got %d of %d bytes, dropped "
          "%s" % (got, answer_size, dropped))
    sampler.stop = True
    sampler.join()
    steps = run.progress() - start_steps
    check(run.p.poll() is None, "the program ended during the hostile clients")
    check(sampler.longest < 0.9, "the loop stood still for %.2f s" % sampler.longest)
    ok("hostile clients (a 100 KB line, 6 garbage requests, 40 idle connections, one that never "
       "read %d of a %d-byte answer, 64 at once): answered or dropped; requests beside them "
       "answered (%.2f s among the idle, %.3f s for 5 beside the deaf one); the loop made %d "
       "steps in %.1f s, never still for more than %.3f s" % (
           answer_size - got, answer_size, waited, beside, steps, time.monotonic() - t0,
           sampler.longest))


def refused(t, name, env, wrap=None, want=()):
    """A run whose control socket must not be made: its warning names why; the result is
    unchanged."""
    run = Run(t, "run-" + name, env, ["--steps", "3000"], wrap=wrap)
    run.touch("exit")
    rc = run.finish()
    err = run.stderr()
    check(rc == 0, "%s: status %d: %s" % (name, rc, err[-300:]))
    check("CUDAPOOL_CONTROL=" in err and "no control socket" in err and all(w in err for w in want),
          "%s: the warning %r lacks %s" % (name, err.strip()[-300:], want))
    return run, err.strip().splitlines()[-1] if err.strip() else ""


def private_dir(t, name, mode=0o700):
    d = os.path.join(t.work, name)
    os.mkdir(d)
    os.chmod(d, mode)
    return d


def permissions(t):
    lines = []
    xdg = private_dir(t, "xdg-link")
    elsewhere = private_dir(t, "elsewhere")
    os.symlink(elsewhere, os.path.join(xdg, "cudapool"))
    _, line = refused(t, "link-dir", {"CUDAPOOL_CONTROL": "1", "XDG_RUNTIME_DIR": xdg},
                      want=("symbolic link",))
    check(not os.listdir(elsewhere), "a socket was made through a symbolic link")
    lines.append(line)
    open_dir = private_dir(t, "open-dir", 0o755)
    _, line = refused(t, "open-dir", {"CUDAPOOL_CONTROL": open_dir}, want=("mode 0755",))
    check(not os.listdir(open_dir), "a socket was made in a 0755 directory")
    lines.append(line)
    if os.geteuid() == 0:
        theirs = private_dir(t, "theirs")
        os.chown(theirs, 65534, 65534)
        _, line = refused(t, "theirs", {"CUDAPOOL_CONTROL": theirs}, want=("owner uid 65534",))
        check(not os.listdir(theirs), "a socket was made in another user's directory")
        lines.append(line)
    named = private_dir(t, "named")
    target = os.path.join(t.work, "link-target")
    _, line = refused(t, "link-name", {"CUDAPOOL_CONTROL": named},
                      wrap='ln -s %s %s/$$.sock;' % (target, named), want=("the name is taken",))
    check(not os.path.exists(target), "the socket's name, a symbolic link, was followed")
    lines.append(line)
    _, line = refused(t, "bad-value", {"CUDAPOOL_CONTROL": "maybe"}, want=("accepted: 1",))
    lines.append(line)
    ok("no socket, one warning each:\n  " + "\n  ".join(lines))
    stale = private_dir(t, "stale")
    # (python3 without the shim and a sanitizer runtime: it only binds the stale socket)
    bind = ('env -u LD_PRELOAD python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" '
            '%s/$$.sock;' % stale)
    run = Run(t, "stale", {"CUDAPOOL_CONTROL": stale}, wrap=bind)
    sock = os.path.join(stale, "%d.sock" % run.pid)
    if run.wait_for(lambda: run.progress() > 1000, "the stale-socket run"):
        try:
            check(t.control.ask(sock, "ping", 5).startswith("cudapool "), "ping after a stale socket")
        except t.control.ControlError as e:
            fail("a dead socket of the same pid was not replaced: %s" % e)
        if os.geteuid() == 0:
            os.chmod(stale, 0o711)
            os.chmod(sock, 0o666)
            answers = other_user_asks(sock, t.work)
            check(answers == b"", "a connection of uid 65534 was answered: %r" % answers[:80])
    rc = run.finish()
    check(rc == 0 and (os.geteuid() != 0 or "connection from uid 65534 refused" in run.stderr()),
          "the other user's connection: status %d, %r" % (rc, run.stderr()[-300:]))
    ok("a dead socket of the same pid is replaced; a connection of another user (the file made "
       "world-writable behind the shim's back) is closed unanswered, with one warning")


def other_user_asks(sock, work):
    os.chmod(work, 0o711)   # uid 65534 may pass through, not list
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(3)
            s.connect(sock)
        except Exception as e:   # noqa: BLE001
            os.write(w, b"cannot connect: %s" % str(e).encode())
            os._exit(0)
        try:
            s.sendall(b"stats\n")
            os.write(w, s.recv(4096))   # b"": closed unanswered
        except OSError:
            pass   # reset or broken pipe: closed unanswered
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        c = os.read(r, 4096)
        if not c:
            break
        data += c
    os.waitpid(child, 0)
    os.chmod(work, 0o700)
    return data


def socket_inode(path):
    with open("/proc/net/unix") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 8 and parts[7] == path:
                return parts[6]
    return None


def fork_child(t):
    run = Run(t, "fork", {"CUDAPOOL_CONTROL": "1", "XDG_RUNTIME_DIR": t.xdg}, ["--fork"])
    if not run.wait_for(lambda: os.path.exists(run.path("child.pid")), "the fork child"):
        return
    child = int(open(run.path("child.pid")).read())
    inode = socket_inode(t.socket_of(run.pid))
    fds = []
    for fd in os.listdir("/proc/%d/fd" % child):
        try:
            fds.append(os.readlink("/proc/%d/fd/%s" % (child, fd)))
        except OSError:
            pass
    check(inode is not None, "the parent's listening socket is not in /proc/net/unix")
    check("socket:[%s]" % inode not in fds, "the child holds the parent's listening socket")
    check(not os.path.exists(t.socket_of(child)), "the child made a socket")
    time.sleep(1.3)   # the child exits (its at-exit handlers run)
    check(os.path.exists(t.socket_of(run.pid)), "the child's exit removed the parent's socket")
    check(t.ask(run.pid, "ping").startswith("cudapool "), "the parent answers after the child's exit")
    rc = run.finish()
    check(rc == 0, "fork run: status %d" % rc)
    ok("fork: the child (pid %d) has no socket and no descriptor of the parent's (%d open), and its "
       "exit left the parent's socket serving" % (child, len(fds)))


def exit_while_connected(t):
    run = Run(t, "exit", {"CUDAPOOL_CONTROL": "1", "XDG_RUNTIME_DIR": t.xdg}, ["--hold", "5000"])
    path = t.socket_of(run.pid)
    if not run.wait_for(lambda: os.path.exists(path) and run.progress() > 1000, "the exit run"):
        return
    idle = []
    for _ in range(3):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        idle.append(s)
    deaf = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    deaf.connect(path)
    deaf.sendall(b"snapshot\n")
    time.sleep(0.3)
    t0 = time.monotonic()
    rc = run.finish()
    took = time.monotonic() - t0
    check(rc == 0, "exit run: status %d: %s" % (rc, run.stderr()[-300:]))
    check(took < 0.9, "the program took %.2f s to exit with clients connected" % took)
    check(not os.path.exists(path), "the socket outlived the program")
    for s in idle + [deaf]:
        s.close()
    ok("exit with 3 idle clients and one that never reads connected: %.3f s, socket removed" % took)
