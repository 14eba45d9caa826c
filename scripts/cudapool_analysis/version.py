# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis.version: the version the Python side prints for --version. Written once here for
Python; CMakeLists.txt's project(VERSION) is the same number for the C++ side, and a test checks
that the two agree; add_version(parser) gives a command its --version. Not here: what each
command prints around it."""

VERSION = "0.1.0"


def add_version(p):
    """--version on an argparse parser: "cudapool VERSION" on stdout, exit 0 (argparse's version
    action); every Python command's (report, export, stats, empty-cache, snapshot, top)."""
    p.add_argument("--version", action="version", version="cudapool %s" % VERSION,
                   help="print the version (cudapool %s) and exit" % VERSION)
