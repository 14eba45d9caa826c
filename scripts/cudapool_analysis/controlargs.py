# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/controlargs.py: the options of the commands that ask a running process
(`cudapool stats`, `empty-cache`, `snapshot`, `top`; docs/control.md), added to the package's
command line (cli.py). Each answers -h/--help (usage on stdout, exit 0) and --version; a usage
error is `cudapool stats: what is wrong` and the usage line on stderr, exit status 2. Not here:
what the commands do (controlcli.py).
"""

import argparse
import math
import sys

from . import control
from .version import add_version

USAGE = {
    "stats": "%(prog)s PID [--json | --prometheus | --csv] [--timeout S] [--dir DIR]",
    "empty-cache": "%(prog)s PID [--json] [--timeout S] [--dir DIR]",
    "snapshot": "%(prog)s PID -o FILE [--force] [--timeout S] [--dir DIR]",
    "top": "%(prog)s [--once] [--json | --csv] [--interval S] [--dir DIR]",
}


class ControlParser(argparse.ArgumentParser):
    """A subcommand's parser whose usage errors read `cudapool stats: what is wrong` then the
    usage line (argparse's own puts the usage first and says `error:`), including arguments it
    does not know (which argparse would leave to the main parser to name)."""

    given = ()

    def error(self, message):
        unknown = self.unknown_options()
        if unknown and message.startswith("the following arguments are required"):
            message = "unrecognized arguments: %s" % " ".join(unknown)   # the first mistake
        sys.stderr.write("%s: %s\n%s" % (self.prog, message, self.format_usage()))
        sys.exit(2)

    def unknown_options(self):
        """The options given that this command does not have (argparse would name a missing
        PID first)."""
        known = self._option_string_actions
        out = []
        for a in self.given:
            if a == "--":
                break
            if not a.startswith("-") or a == "-" or a[1:2].isdigit():
                continue
            name = a.split("=", 1)[0]
            if name in known or (name.startswith("--") and any(k.startswith(name) for k in known)):
                continue
            if not name.startswith("--") and name[:2] in known:
                continue                  # -oFILE
            out.append(a)
        return out

    def parse_known_args(self, args=None, namespace=None):
        self.given = list(args or ())
        namespace, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error("unrecognized arguments: %s" % " ".join(extra))
        return namespace, extra


def pid_argument(text):
    problem = control.target_error(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("%r is not a number of seconds above 0" % text)
    return value


def command(commands, name, **kwargs):
    p = commands.add_parser(name, usage=USAGE[name], **kwargs)
    p.__class__ = ControlParser           # argparse makes the subparsers of the main one's class
    add_version(p)
    p.set_defaults(parser=p)
    return p


def target(commands, name, **kwargs):
    p = command(commands, name, **kwargs)
    p.add_argument("pid", metavar="PID", type=pid_argument,
                   help="the process id, or its control socket's path")
    p.add_argument("--dir", metavar="DIR", help="the control directory (default: "
                   "$XDG_RUNTIME_DIR/cudapool or /tmp/cudapool-UID)")
    p.add_argument("--timeout", type=seconds, metavar="S",
                   help="wait up to S seconds for the socket to appear (a process that has not "
                   "made its first CUDA call yet) and for the answer; without it the answer is "
                   "waited for 10 s and a missing socket is an error at once")
    return p


def control_parsers(commands):
    s = target(commands, "stats", help="a running process's memory summary (CUDAPOOL_CONTROL)",
               description="Ask a process running under the shim with CUDAPOOL_CONTROL=1 for its "
               "statistics: the memory_summary() table per device, its settings, the blocks "
               "behind reuse fences now, and the driver's figure for it (NVML: what nvidia-smi "
               "shows).")
    how = s.add_mutually_exclusive_group()
    how.add_argument("--json", action="store_true", help="the memory_stats() names, as JSON")
    how.add_argument("--prometheus", action="store_true",
                     help="the Prometheus text exposition format")
    how.add_argument("--csv", action="store_true",
                     help="one CSV row per device, the columns of cudapool top --csv")
    e = target(commands, "empty-cache", help="release a running process's idle cached segments",
               description="Release the idle cached segments of a running process, as "
               "torch.cuda.empty_cache() does (never a block in use or behind a reuse fence; "
               "refused during a stream capture); logged as empty_cache with your pid.")
    e.add_argument("--json", action="store_true", help="the answer as JSON")
    n = target(commands, "snapshot", help="a running process's memory_viz snapshot",
               description="Write the segments and blocks of a running process now as a PyTorch "
               "memory snapshot (pytorch.org/memory_viz; docs/exports.md).")
    n.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the snapshot: pickle, or JSON when FILE ends in .json")
    n.add_argument("--force", action="store_true", help="replace FILE when it exists")
    t = command(commands, "top", help="every process of this user with a control socket",
                description="Every process of this user running under the shim with a control "
                "socket: per device its reserved memory, the driver's figure (NVML: what "
                "nvidia-smi shows), the allocated memory, the fenced part (waiting for work on "
                "another stream: not free), the free part, its fragmentation (1 - largest free "
                "block / free) and the OOMs so far; refreshed.")
    t.add_argument("--once", action="store_true", help="print once and exit")
    fmt = t.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="as JSON: one object (with --once), "
                     "else one object a line at each refresh")
    fmt.add_argument("--csv", action="store_true", help="as CSV: a header row, then one row "
                     "per process and device at each refresh")
    t.add_argument("--interval", type=seconds, default=1.0, metavar="S",
                   help="seconds between refreshes (default 1)")
    t.add_argument("--dir", metavar="DIR", help="the control directory")
