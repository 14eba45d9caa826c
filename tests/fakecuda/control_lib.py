# SPDX-License-Identifier: Apache-2.0
"""tests/fakecuda/control_lib.py: what the control endpoint's tests (control_check.py,
metrics_file_check.py, control_cleanup_check.py) share: a run of control_workload under the shim
with the fake driver, raw requests on its socket, a small Prometheus text parser, the failure
list. Not a test itself."""
import os
import re
import socket
import subprocess
import sys
import time

FAILS = []
START = time.monotonic()


def fail(what):
    FAILS.append(what)
    print("FAIL: " + what, flush=True)


def check(cond, what):
    if not cond:
        fail(what)
    return cond


def ok(what):
    print("ok (%.1f s): %s" % (time.monotonic() - START, what), flush=True)


def passed(since, what):
    """ok(what) when no check failed since FAILS had `since` entries."""
    if len(FAILS) == since:
        ok(what)


def last_line(run):
    lines = run.stderr().strip().splitlines()
    return lines[-1] if lines else "(nothing on stderr)"


class Run:
    """control_workload DIR ARGS under the shim; env: extra variables."""

    def __init__(self, t, name, env=None, args=(), wrap=None):
        self.dir = os.path.join(t.work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.env = dict(os.environ, LD_LIBRARY_PATH=t.fake_dir, LD_PRELOAD=t.shim)
        for k in ("CUDAPOOL_CONF", "CUDAPOOL_LOG", "CUDAPOOL_SUMMARY", "CUDAPOOL_CONTROL",
                  "CUDAPOOL_METRICS", "CUDAPOOL_METRICS_INTERVAL", "CUDAPOOL_DISABLE"):
            self.env.pop(k, None)
        self.env.update(env or {})
        cmd = [t.program, self.dir] + list(args)
        if wrap:
            cmd = ["bash", "-c", wrap + ' exec "$@"', "wrap"] + cmd
        self.out = open(os.path.join(self.dir, "stdout"), "w")
        self.err_path = os.path.join(self.dir, "stderr")
        self.p = subprocess.Popen(cmd, env=self.env, stdout=self.out,
                                  stderr=open(self.err_path, "w"))
        self.pid = self.p.pid

    def path(self, name):
        return os.path.join(self.dir, name)

    def touch(self, name):
        open(self.path(name), "w").close()

    def progress(self):
        try:
            with open(self.path("progress"), "rb") as f:
                return int.from_bytes(f.read(8), "little")
        except OSError:
            return 0

    def wait_for(self, cond, what, timeout=30.0):  # a hang guard: no timing is asserted
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return True
            if self.p.poll() is not None:
                fail("%s: the program ended (status %s) first: %s" % (what, self.p.returncode,
                                                                        self.stderr()[-600:]))
                return False
            time.sleep(0.01)
        fail("%s: not within %g s" % (what, timeout))
        return False

    def quiet(self):
        self.touch("stop")
        return self.wait_for(lambda: os.path.exists(self.path("state")), "the loop's end")

    def finish(self, timeout=20.0):
        self.touch("stop")
        self.touch("exit")
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
            fail("%s: did not exit within %g s" % (self.dir, timeout))
        self.out.close()
        return rc

    def stdout(self):
        return open(self.path("stdout")).read()

    def stderr(self):
        return open(self.err_path, errors="replace").read()


def raw(path, data, read=True, timeout=5.0, shut=True):
    """Sends data on a new connection to path; the answer (bytes) when read."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        if data:
            s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        if not read:
            return b""
        chunks = []
        while True:
            c = s.recv(1 << 20)
            if not c:
                break
            chunks.append(c)
        return b"".join(chunks)
    finally:
        s.close()


NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)( -?\d+)?$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_prometheus(text):
    """{(name, frozenset(labels.items())): value} of Prometheus text format 0.0.4; raises
    ValueError on anything the format does not allow (and on a sample before its TYPE, a
    duplicate series, a counter not named _total)."""
    types, helps, samples = {}, {}, {}
    if not text.endswith("\n"):
        raise ValueError("the text does not end with a newline (cut short?)")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not NAME.match(parts[2]):
                raise ValueError("line %d: %r" % (n, line))
            table = helps if parts[1] == "HELP" else types
            if parts[2] in table:
                raise ValueError("line %d: a second %s for %s" % (n, parts[1], parts[2]))
            if parts[1] == "TYPE" and parts[3] not in ("counter", "gauge", "untyped"):
                raise ValueError("line %d: type %r" % (n, parts[3]))
            table[parts[2]] = parts[3]
            continue
        if line.startswith("#") or not line.strip():
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("line %d: not a sample: %r" % (n, line))
        name, labels = m.group(1), {}
        rest = m.group(3) or ""
        while rest:
            lm = LABEL.match(rest)
            if not lm:
                raise ValueError("line %d: bad labels %r" % (n, m.group(3)))
            labels[lm.group(1)] = lm.group(2)
            rest = rest[lm.end():]
        if name not in types:
            raise ValueError("line %d: %s before its TYPE" % (n, name))
        if types[name] == "counter" and not name.endswith("_total"):
            raise ValueError("line %d: counter %s not named _total" % (n, name))
        key = (name, frozenset(labels.items()))
        if key in samples:
            raise ValueError("line %d: a second sample of %s%s" % (n, name, labels))
        samples[key] = float(m.group(4))
    for name in types:
        if name not in helps:
            raise ValueError("%s has a TYPE and no HELP" % name)
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))


def table_lines(text):
    """The memory_summary() table in text: its lines that start with '|', the first run."""
    lines, started = [], False
    for line in text.splitlines():
        if line.startswith("|"):
            lines.append(line)
            started = True
        elif started:
            break
    return lines


def log_lines(path):
    import json
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main_guard(fn):
    try:
        fn()
    except Exception as e:   # a crash of the test is a failure, with where
        import traceback
        traceback.print_exc()
        fail("the test itself raised %s: %s" % (type(e).__name__, e))
    sys.exit(1 if FAILS else 0)
