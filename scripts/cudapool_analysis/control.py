# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/control.py: the client side of a running process's control endpoint
(CUDAPOOL_CONTROL, docs/control.md): where the sockets are, one request and its answer, and
what the answers become: the memory_viz snapshot of the live pools (memviz_snapshot.py, the
format `cudapool export --memory-viz` writes), the rows of `cudapool top`.

    directory(explicit=None)           -> the control directory, as the shim picks it
    endpoints(dir)                     -> [(pid, path)] of live processes (stale sockets removed)
    ask(target, request, timeout, dir_, wait)
                                       -> the answer's body (str); ControlError on any failure
                                          (timeout: seconds for the connection and the answer;
                                          wait: also for the socket to appear, within them)
    live_snapshot(answer)              -> a PyTorch memory snapshot (dicts) of a `snapshot` answer

A request is one line; the answer is "ok\\n" and a body, or "error: ...\\n", and the connection
closes. The socket is the user's alone (mode 0600 in a 0700 directory); the client checks its
peer too (SO_PEERCRED: same user, and the pid the socket is named by). Standard library only.
Not here: the command line (controlcli.py).
"""

import os
import socket
import stat
import struct
import time

from .controlproc import program_of_launcher, why_no_socket
from .memviz import Block, Device, Region
from .memviz_snapshot import snapshot

SUFFIX = ".sock"


class ControlError(Exception):
    """No endpoint, a refused or failed connection, an error answer; the message says which."""


def directory(explicit=None):
    """The control directory: explicit, else CUDAPOOL_CONTROL when it names one (a value with a
    '/'), else $XDG_RUNTIME_DIR/cudapool, else /tmp/cudapool-UID (the shim's rule,
    shim/control/control_socket.cpp)."""
    if explicit:
        return explicit.rstrip("/") or "/"
    value = os.environ.get("CUDAPOOL_CONTROL", "")
    if "/" in value:
        return value.rstrip("/") or "/"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return os.path.join(runtime, "cudapool")
    return "/tmp/cudapool-%d" % os.geteuid()


def target_error(target):
    """Why target is neither a process id (a number above 0) nor a socket's path (with a '/'),
    or None when it is one (the command line's usage check)."""
    if "/" in target:
        return None
    if not target.isdigit() or int(target) <= 0:
        return "%r is neither a process id (a number above 0) nor a socket's path" % target
    return None


def socket_path(target, dir_=None):
    """The socket of target: a pid (its PID.sock in the directory) or a path with a '/'."""
    if "/" in target:
        return target, None
    problem = target_error(target)
    if problem:
        raise ControlError(problem)
    pid = int(target)
    return os.path.join(directory(dir_), "%d%s" % (pid, SUFFIX)), pid


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def endpoints(dir_=None, clean=True):
    """[(pid, path)] of the sockets in the directory whose process lives, by pid. A socket of a
    dead process (one killed before its exit removed it) is removed when it is the user's."""
    d = directory(dir_)
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(SUFFIX) or not name[:-len(SUFFIX)].isdigit():
            continue
        pid, path = int(name[:-len(SUFFIX)]), os.path.join(d, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
            continue
        if not alive(pid):
            if clean:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            continue
        out.append((pid, path))
    return sorted(out)


def ask(target, request, timeout=10.0, dir_=None, wait=False):
    """The body of the answer to request (one line) from target (a pid or a socket's path).
    wait: a socket not there yet is waited for (polled) until the deadline, while its process
    lives; otherwise its absence is an error at once. Either way the message says why there is
    none (controlproc.py)."""
    path, pid = socket_path(str(target), dir_)
    start = time.monotonic()
    deadline = start + timeout
    if wait:
        path, pid = wait_for_socket(path, pid, deadline, dir_)
    else:
        path, pid = launched(path, pid, dir_)
    try:
        s = connect(path, timeout, deadline)
    except FileNotFoundError:
        waited = time.monotonic() - start if wait else None
        if pid is None:
            raise ControlError("no control socket %s%s" % (
                path, " (waited %g s)" % timeout if wait else "")) from None
        raise ControlError(why_no_socket(pid, path, directory(dir_),
                                         waited and round(waited, 1))) from None
    except ConnectionRefusedError:
        if pid is not None and not alive(pid):
            raise ControlError("no process %d: its socket %s was left by a process that was "
                               "killed (cudapool top removes such sockets)" % (pid, path)) from None
        raise ControlError("cannot connect to %s: nobody listens on it (a socket left by a "
                           "killed process?)" % path) from None
    try:
        peer_pid, peer_uid, _ = struct.unpack(
            "3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if peer_uid != os.geteuid():
            raise ControlError("%s is served by uid %d, not by you: not asked" % (path, peer_uid))
        if pid is not None and peer_pid != pid:
            raise ControlError("%s is served by pid %d, not %d: not asked" % (path, peer_pid, pid))
        s.sendall(request.encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except socket.timeout:
        raise ControlError("%s did not answer %r within %g s" % (path, request, timeout)) from None
    except OSError as e:
        raise ControlError("%s: %s" % (path, e.strerror or e)) from None
    finally:
        s.close()
    text = b"".join(chunks).decode("utf-8", "replace")
    status, _, body = text.partition("\n")
    if status == "ok":
        return body
    if status.startswith("error: "):
        raise ControlError("%s answered: %s" % (path, status[len("error: "):]))
    raise ControlError("%s answered something else than ok or error: %r" % (path, text[:80]))


def launched(path, pid, dir_):
    """(path, pid), or when pid is the launcher `cudapool run` with no socket of its own, its
    program's: `cudapool run --log ... -- PROGRAM &` makes $! the launcher's pid (with a log it
    waits for PROGRAM as its child)."""
    if pid is None or os.path.exists(path):
        return path, pid
    found = program_of_launcher(pid, directory(dir_), SUFFIX)
    return (found[1], found[0]) if found else (path, pid)


def wait_for_socket(path, pid, deadline, dir_=None):
    """(path, pid) once path (or the socket of the program the launcher pid runs) exists, the
    deadline passes, or the process pid (when known) is gone."""
    while time.monotonic() < deadline:
        path, pid = launched(path, pid, dir_)
        if os.path.exists(path) or (pid is not None and not alive(pid)):
            break
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    return path, pid


def connect(path, timeout, deadline):
    """A socket connected to path. A process whose queue of pending connections is full makes a
    connect that has a timeout (non-blocking) fail with EAGAIN at once: tried again, a little
    later each time, until the deadline, then named plainly. A missing socket:
    FileNotFoundError; nobody listening: ConnectionRefusedError (ask() says why)."""
    pause = 0.005
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            s.connect(path)
            return s
        except (FileNotFoundError, ConnectionRefusedError):
            s.close()
            raise
        except (BlockingIOError, InterruptedError):
            s.close()
        except socket.timeout:
            s.close()
            break
        except OSError as e:
            s.close()
            raise ControlError("cannot connect to %s: %s" % (path, e.strerror or e)) from None
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.1)
    raise ControlError("%s: the process did not accept the connection within %g s (its queue of "
                       "pending connections stayed full)" % (path, timeout))


class LiveRegion(Region):
    """A segment of the live pools: the shim says whether it is the small pool's."""
    __slots__ = ("is_small",)

    def small(self):
        return self.is_small


def live_snapshot(answer):
    """A `snapshot` answer (schema cudapool.control.snapshot/1) as PyTorch 2.11's
    torch.cuda.memory._snapshot(): the segments and blocks of that moment, empty traces (the
    endpoint has no history: as a snapshot whose trace ring was empty)."""
    devices = {}
    for pool in answer.get("pools", []):
        dev = pool["device"]
        d = devices.get(dev)
        if d is None:
            d = devices[dev] = Device(dev, 0)
        regions = {}
        blocks = pool["blocks"]
        for ptr, size, requested, seg, strm, state, small, expandable, _cached in blocks:
            r = regions.get(seg)
            if r is None:
                r = regions[seg] = LiveRegion(seg, 0, strm, pool.get("ctx", 0), expandable)
                r.is_small = small
            if state == "unmapped":
                continue
            if expandable:
                r.ranges.append([ptr, ptr + size])
            r.size += size if not expandable else 0
            if state in ("allocated", "fenced"):
                b = Block()
                b.size, b.requested, b.pending, b.frames = size, requested, state == "fenced", ()
                b.ctx, b.stream, b.seq, b.region, b.free_entry = pool.get("ctx", 0), strm, 0, r, None
                d.blocks[ptr] = b
        for seg, r in regions.items():
            if r.expandable:
                r.ranges = merge(r.ranges)
                if r.ranges:
                    r.size = r.ranges[-1][1] - seg
                    d.expandable[seg] = r
            elif r.size:
                d.segments[seg] = r
    header = {"options": answer.get("options") or {},
              "devices": [{"id": dev} for dev in sorted(devices)]}
    return snapshot(devices, header, None, None)


def merge(ranges):
    """Touching or overlapping [start, end) ranges joined, in order."""
    out = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out
