# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/controlproc.py: what /proc says about a process that has no control socket,
for the control client's messages (docs/control.md, "When there is no socket"): no such process,
another user's, the launcher not yet its program, no shim, the shim without CUDAPOOL_CONTROL=1,
the shim with it but no CUDA call yet (the socket opens at the first one), a socket in another
directory; and, for `cudapool top` finding none, the processes of the user's under the shim.

    process(pid)               -> Proc (what could be read), or None when there is no process
    environ_of(pid)            -> the environment it started with (dict), or None
    why_no_socket(pid, path, dir_, waited)  -> the message (one line)
    shim_processes(skip)       -> [(pid, the reason it has no socket in the directory)]
    descendants(pid)           -> the processes below pid, children first
    program_of_launcher(pid, dir_, suffix) -> (pid, socket) of the one process below the launcher
                                  `cudapool run` with a socket, or None

Linux only (/proc). The environment read is the one the process started with
(/proc/PID/environ): a variable the program set itself later is not seen. Not here: the
protocol and the sockets (control.py), the command line (controlcli.py).
"""

import os
import pwd

SHIM = "libcudapool"
TRUE = ("1", "true", "True", "yes", "on")
FALSE = ("", "0", "false", "False", "no", "off")


class Proc:
    """What /proc says of one process; None where it could not be read."""

    def __init__(self, pid):
        self.pid = pid
        self.uid = self.tgid = self.environ = self.maps_has_shim = self.argv = None
        self.comm = read_text("/proc/%d/comm" % pid, "?").strip()
        for line in read_text("/proc/%d/status" % pid, "").splitlines():
            if line.startswith("Uid:"):
                self.uid = int(line.split()[2])     # the effective uid
            elif line.startswith("Tgid:"):
                self.tgid = int(line.split()[1])
        self.environ = environ_of(pid)
        maps = read_text("/proc/%d/maps" % pid, None)
        if maps is not None:
            self.maps_has_shim = SHIM in maps
        raw = read_bytes("/proc/%d/cmdline" % pid)
        if raw is not None:
            self.argv = raw.decode("utf-8", "replace").split("\0")[:-1]

    def env(self, name):
        return (self.environ or {}).get(name)

    def threads(self):
        names = []
        try:
            for tid in os.listdir("/proc/%d/task" % self.pid):
                names.append(read_text("/proc/%d/task/%s/comm" % (self.pid, tid), "").strip())
        except OSError:
            pass
        return names

    def shim_loaded(self):
        """True, False, or None when neither the maps nor the environment could be read."""
        if self.maps_has_shim is not None:
            return self.maps_has_shim
        if self.environ is None:
            return None
        return SHIM in (self.env("LD_PRELOAD") or "")

    def launcher(self):
        """True while the process is still `cudapool run` (the launcher's shell), before it
        execs its program under the shim."""
        argv = self.argv or []
        return any(os.path.basename(a) == "cudapool" and argv[i + 1:i + 2] == ["run"]
                   for i, a in enumerate(argv))

    def control_directory(self):
        """The directory the shim in this process picks (its CUDAPOOL_CONTROL, XDG_RUNTIME_DIR,
        uid: shim/control/control_socket.cpp's rule), or None when its environment is unknown."""
        if self.environ is None:
            return None
        value = self.env("CUDAPOOL_CONTROL") or ""
        if "/" in value:
            return value.rstrip("/") or "/"
        runtime = self.env("XDG_RUNTIME_DIR") or ""
        if runtime.startswith("/"):
            return os.path.join(runtime, "cudapool")
        return "/tmp/cudapool-%d" % (self.uid if self.uid is not None else os.geteuid())


def environ_of(pid):
    """The environment process pid started with, as a dict, or None when it cannot be read."""
    raw = read_bytes("/proc/%d/environ" % pid)
    if raw is None:
        return None
    return dict(kv.split("=", 1) for kv in raw.decode("utf-8", "replace").split("\0") if "=" in kv)


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def read_text(path, default):
    raw = read_bytes(path)
    return default if raw is None else raw.decode("utf-8", "replace")


def process(pid):
    if not os.path.isdir("/proc/%d" % pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            pass
    return Proc(pid)


def user(uid):
    try:
        return "%d (%s)" % (uid, pwd.getpwuid(uid).pw_name)
    except KeyError:
        return str(uid)


WAIT = "--timeout S waits for it"


def reason(p, dir_):
    """Why the process p (of the user's, existing) has no socket in dir_; None when nothing can
    be told."""
    name = "process %d (%s)" % (p.pid, p.comm)
    if p.launcher():
        return ("%s is the launcher `cudapool run`, and its program has no socket yet (stats "
                "follows the launcher to its program: with a log the launcher waits for it as a "
                "child): the socket opens at the program's first CUDA call; %s" % (name, WAIT))
    loaded = p.shim_loaded()
    if loaded is None:
        return None
    if not loaded:
        preload = p.env("LD_PRELOAD") or ""
        if SHIM in preload:
            return ("%s has libcudapool in its LD_PRELOAD but did not load it (the loader's "
                    "message is on its stderr): no control socket" % name)
        return ("%s does not run under the shim (no libcudapool loaded): start it with "
                "CUDAPOOL_CONTROL=1 cudapool run -- PROGRAM" % name)
    if p.environ is None:
        return None
    disable = p.env("CUDAPOOL_DISABLE")
    if disable is not None and disable not in FALSE:
        return ("%s runs under the shim with CUDAPOOL_DISABLE=%s: the shim is off, no control "
                "socket" % (name, disable))
    value = p.env("CUDAPOOL_CONTROL")
    if value is None or value in FALSE:
        return ("%s runs under the shim %s: no control socket; it cannot be turned on in a "
                "running process: start it with CUDAPOOL_CONTROL=1" % (
                    name, "without CUDAPOOL_CONTROL" if value is None
                    else "with CUDAPOOL_CONTROL=%s" % value))
    if value not in TRUE and "/" not in value:
        return ("%s runs under the shim with CUDAPOOL_CONTROL=%s, which is neither 1 nor a "
                "directory: no control socket (the shim warned at its start)" % (name, value))
    theirs = p.control_directory()
    if theirs and theirs != dir_:
        return ("%s runs under the shim with CUDAPOOL_CONTROL=%s, and its control directory is "
                "%s, not %s: give --dir %s" % (name, value, theirs, dir_, theirs))
    if "cudapool-ctl" in p.threads():
        return ("%s runs under the shim with CUDAPOOL_CONTROL=%s and its control thread runs, "
                "but there is no socket in %s: the shim's warning on its stderr says why (the "
                "directory's owner or mode, a name taken), or the socket was removed" % (
                    name, value, dir_))
    return ("%s runs under the shim with CUDAPOOL_CONTROL=%s but has made no CUDA call yet: its "
            "socket opens at the first one; %s" % (name, value, WAIT))


def descendants(pid):
    """The processes below pid (children first, then theirs), from /proc/N/stat's parent field."""
    parent = {}
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
    for n in names:
        stat_line = read_text("/proc/%s/stat" % n, "")
        fields = stat_line[stat_line.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            parent.setdefault(int(fields[1]), []).append(int(n))
    out, todo = [], [pid]
    while todo:
        kids = sorted(parent.get(todo.pop(0), []))
        out.extend(kids)
        todo.extend(kids)
    return out


def program_of_launcher(pid, dir_, suffix):
    """While pid is the launcher `cudapool run` waiting for its program as a child (it does so
    when a log is asked for), the one process below it with a socket in dir_, as (pid, path);
    None otherwise."""
    p = process(pid)
    if p is None or not p.launcher():
        return None
    found = [(c, os.path.join(dir_, "%d%s" % (c, suffix))) for c in descendants(pid)]
    found = [(c, path) for c, path in found if os.path.exists(path)]
    return found[0] if len(found) == 1 else None


def why_no_socket(pid, path, dir_, waited=None):
    """The message for a pid whose socket path is missing (waited: the seconds waited for it)."""
    p = process(pid)
    if p is None:
        text = "no process %d" % pid
    elif p.tgid is not None and p.tgid != pid:
        text = "%d is a thread of process %d: give %d" % (pid, p.tgid, p.tgid)
    elif p.uid is not None and p.uid != os.geteuid():
        text = ("process %d is uid %s's, not yours (uid %s): its control socket, if it has one, "
                "answers that user alone: ask as that user" % (pid, user(p.uid),
                                                               user(os.geteuid())))
    else:
        text = reason(p, dir_) or (
            "no control socket %s, and the environment of process %d cannot be read to say "
            "why: is it running under the shim with CUDAPOOL_CONTROL=1? its socket opens at "
            "its first CUDA call; %s" % (path, pid, WAIT))
    return text + (" (waited %g s)" % waited if waited else "")


def shim_processes(dir_, skip=()):
    """The user's processes under the shim (LD_PRELOAD names libcudapool) without a socket in
    dir_, each with the reason: what `cudapool top` says when it finds none."""
    out = []
    me = os.getpid()
    try:
        pids = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
    except OSError:
        return out
    for pid in pids:
        if pid == me or pid in skip:
            continue
        try:
            if os.stat("/proc/%d" % pid).st_uid != os.geteuid():
                continue
        except OSError:
            continue
        raw = read_bytes("/proc/%d/environ" % pid)
        if raw is None or SHIM.encode() not in raw:
            continue
        p = Proc(pid)
        if p.environ is None or SHIM not in (p.env("LD_PRELOAD") or ""):
            continue
        out.append((pid, reason(p, dir_) or "process %d (%s): no socket" % (pid, p.comm)))
    return out
