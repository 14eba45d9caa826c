"""cudapool_analysis/tools.py: how the package runs cudapool's C++ tools (cudapool-tune,
cudapool-replay), which stay the source of the pool's decisions: the command line to start one.

In order: the launcher scripts/cudapool beside the package in the source tree (`cudapool tune
...`, which builds the tool first when it is missing or older than its sources); the binary in
$CUDAPOOL_BUILD_DIR/tools/; beside an installed package (PREFIX/bin, the package being in
PREFIX/share/cudapool/: scripts/CMakeLists.txt); on PATH.

Not here: what the tools compute, parsing their output (their callers).
"""

import os
import shutil

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
SUBCOMMANDS = {"cudapool-tune": "tune", "cudapool-replay": "replay"}


class ToolError(Exception):
    """A tool that cannot be found; the message says how to build it."""


def tool_command(name):
    """The argv prefix that runs the tool `name` (cudapool-tune, cudapool-replay); raises
    ToolError when none is found."""
    launcher = os.path.join(os.path.dirname(PACKAGE_DIR), "cudapool")
    if name in SUBCOMMANDS and os.path.isfile(launcher) and os.access(launcher, os.X_OK):
        return [launcher, SUBCOMMANDS[name]]
    places = []
    build = os.environ.get("CUDAPOOL_BUILD_DIR")
    if build:
        places.append(os.path.join(build, "tools", name))
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(PACKAGE_DIR)))
    places.append(os.path.join(prefix, "bin", name))
    for p in places:
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return [p]
    found = shutil.which(name)
    if found:
        return [found]
    raise ToolError("%s not found (looked in %s and on PATH): build it with `scripts/cudapool "
                    "build`, or set CUDAPOOL_BUILD_DIR to the build directory"
                    % (name, ", ".join(places)))
