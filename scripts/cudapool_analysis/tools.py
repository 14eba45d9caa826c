# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/tools.py: the one finder of cudapool's C++ tools (cudapool-analyze for the
figures of `report` and `report --json`, engine.py; cudapool-replay for logs of requests only,
the test oracle's tests/oracle/replayed.py; cudapool-tune for report --html --tune, htmlreport.py; cudapool-cat
for compressed logs, decoded.py), which stay the source of the pool's decisions and the one
decoder of compressed logs, and the one way they are run (run_tool, or start_tool for a child
read as it goes).

A tool is looked for, in this order (the first executable file wins):

  1. the environment's override: $CUDAPOOL_ANALYZE, $CUDAPOOL_REPLAY, $CUDAPOOL_TUNE,
     $CUDAPOOL_CAT (the binary)
  2. $CUDAPOOL_BUILD_DIR/tools/
  3. the source tree's build/tools/ (when the package runs from scripts/ of the repository)
  4. beside an installed package: PREFIX/bin, the package being in PREFIX/share/cudapool/
     (scripts/CMakeLists.txt's install rules)
  5. PATH

Nothing is built here: scripts/cudapool (the launcher) builds the tools; a tool not found is an
error that says how to build it. A tool runs as a child that the kernel ends when this process
ends, however it ends (PR_SET_PDEATHSIG): a killed report leaves no replay running.

Not here: what the tools compute, the files handed to them (inputs.tool_argument), reading their
output (their callers).
"""

import os
import shutil
import signal
import subprocess

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
OVERRIDES = {"cudapool-replay": "CUDAPOOL_REPLAY", "cudapool-tune": "CUDAPOOL_TUNE",
             "cudapool-cat": "CUDAPOOL_CAT", "cudapool-analyze": "CUDAPOOL_ANALYZE"}
PR_SET_PDEATHSIG = 1


class ToolError(Exception):
    """A tool that cannot be found; the message says how to build it."""


def places(name):
    """The paths where the tool `name` is looked for, in order (PATH aside)."""
    out = []
    override = os.environ.get(OVERRIDES[name]) if name in OVERRIDES else None
    if override:
        out.append(override)
    build = os.environ.get("CUDAPOOL_BUILD_DIR")
    if build:
        out.append(os.path.join(build, "tools", name))
    root = os.path.dirname(os.path.dirname(PACKAGE_DIR))       # scripts/.. in the source tree
    if os.path.isfile(os.path.join(root, "CMakeLists.txt")) \
            and os.path.isdir(os.path.join(root, "scripts", "cudapool_analysis")):
        out.append(os.path.join(root, "build", "tools", name))
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(PACKAGE_DIR)))
    out.append(os.path.join(prefix, "bin", name))
    return out


def find_tool(name):
    """The path of the tool `name` (cudapool-analyze, -replay, -tune, -cat), or None when
    none is found."""
    for p in places(name):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.normpath(p)
    found = shutil.which(name)
    return os.path.normpath(found) if found else None


def tool_command(name):
    """The argv prefix that runs the tool `name`; raises ToolError when none is found."""
    found = find_tool(name)
    if found:
        return [found]
    raise ToolError("%s not found (looked in %s and on PATH): build it with `scripts/cudapool "
                    "build`, or set CUDAPOOL_BUILD_DIR to the build directory%s"
                    % (name, ", ".join(places(name)),
                       " (or %s to the binary)" % OVERRIDES[name] if name in OVERRIDES else ""))


def run_tool(cmd, pass_fds=()):
    """subprocess.run(cmd) with stdout and stderr captured (bytes), the descriptors pass_fds
    handed over, stdin from /dev/null, and the child ended by the kernel when this process ends
    (a Linux parent-death signal; left out where ctypes cannot reach prctl). Raises OSError
    when cmd cannot be run."""
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, pass_fds=tuple(pass_fds),
                          preexec_fn=_dies_with_parent())


def start_tool(cmd, stdin):
    """subprocess.Popen(cmd) reading the descriptor stdin, its stdout an unbuffered pipe to read
    as it comes (a raw file object), its stderr a pipe, ended by the kernel when this process
    ends (as run_tool's). Raises OSError when cmd cannot be run."""
    return subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=0, preexec_fn=_dies_with_parent())


def _dies_with_parent():
    """A preexec_fn that asks for SIGKILL when the parent ends, or None without ctypes' prctl."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None
    parent = os.getpid()

    def child():
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:    # the parent ended before the request took effect
            os._exit(1)
    return child
