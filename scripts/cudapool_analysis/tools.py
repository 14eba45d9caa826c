"""cudapool_analysis/tools.py: the one finder of cudapool's C++ tools (cudapool-replay for logs of
requests only, replayed.py; cudapool-tune for report --html --tune, htmlreport.py), which stay the
source of the pool's decisions.

A tool is looked for, in this order (the first executable file wins):

  1. the environment's override: $CUDAPOOL_REPLAY, $CUDAPOOL_TUNE (the binary itself)
  2. $CUDAPOOL_BUILD_DIR/tools/
  3. the source tree's build/tools/ (when the package runs from scripts/ of the repository)
  4. beside an installed package: PREFIX/bin, the package being in PREFIX/share/cudapool/
     (scripts/CMakeLists.txt's install rules)
  5. PATH

Nothing is built here: scripts/cudapool (the launcher) builds the tools; a tool not found is an
error that says how to build it.

Not here: what the tools compute, running them and reading their output (their callers).
"""

import os
import shutil

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
OVERRIDES = {"cudapool-replay": "CUDAPOOL_REPLAY", "cudapool-tune": "CUDAPOOL_TUNE"}


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
    """The path of the tool `name` (cudapool-replay, cudapool-tune), or None when none is found."""
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
